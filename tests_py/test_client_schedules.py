"""The schedule methods of Client and AsyncClient (issue 14 item 2): each returns its typed
row, and a refusal comes back as the pgrun.errors class of its category, through the same
path as every other client call.

The database runs on the test clock, fixed for the whole test (``pgrun.fake_now`` in the
connection options), so a schedule declared now is due now and its plan time is now.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID, uuid4

import pytest
from psycopg.conninfo import make_conninfo

from client_calls import Invoke, run_with_async_client, run_with_client
from pgrun.errors import ConflictError, InvalidInputError, LeaseLostError, NotFoundError, PgrunError
from pgrun.results import (
    ClaimedSchedule,
    DeletedSchedule,
    FiredTick,
    PausedSchedule,
    ResumedSchedule,
    ScheduleSummary,
    UpsertedSchedule,
)
from pgrun.testing import install_test_clock

NOW = datetime(2031, 3, 3, 12, 0, tzinfo=UTC)
NIL = "00000000-0000-0000-0000-000000000000"


async def refused(call: Invoke, kind: type[PgrunError], code: str, *args: Any, **kwargs: Any) -> None:
    with pytest.raises(kind) as caught:
        await call(*args, **kwargs)
    assert caught.value.code == code


async def scenario(call: Invoke) -> None:
    # upsert_schedule: made, then restated unchanged; a cron outside the grammar is refused
    made = await call("upsert_schedule", "minutely", "* * * * *", "test.cron", {"k": 1}, catch_up="all")
    assert isinstance(made, UpsertedSchedule)
    assert (made.created, made.changed, made.next_run_at) == (True, True, NOW)
    again = await call("upsert_schedule", "minutely", "* * * * *", "test.cron", {"k": 1}, catch_up="all")
    assert (again.schedule_id, again.created, again.changed) == (made.schedule_id, False, False)
    stuck = await call(
        "upsert_schedule", "stuck", "0 * * * *", "test.cron", scope_kind="key", scopes=("a", "b")
    )
    await refused(
        call, InvalidInputError, "schedule.invalid_cron", "upsert_schedule", "bad", "61 * * * *", "t.x"
    )

    # list_schedules: one page, in creation order
    listed = await call("list_schedules")
    assert all(isinstance(r, ScheduleSummary) for r in listed)
    assert [(r.schedule_id, r.name, r.scopes) for r in listed] == [
        (made.schedule_id, "minutely", []),
        (stuck.schedule_id, "stuck", ["a", "b"]),
    ]
    assert [r.name for r in await call("list_schedules", after_id=made.schedule_id, max_rows=1)] == ["stuck"]
    await refused(call, InvalidInputError, "schedule.invalid_max_rows", "list_schedules", max_rows=0)

    # claim_due_schedules: both are due now
    await refused(
        call,
        InvalidInputError,
        "schedule.invalid_max_schedules",
        "claim_due_schedules",
        "s1",
        max_schedules=0,
    )
    claimed = await call("claim_due_schedules", "s1", max_schedules=10, lease_seconds=30)
    assert all(isinstance(r, ClaimedSchedule) for r in claimed)
    by_name = {r.name: r for r in claimed}
    assert sorted(by_name) == ["minutely", "stuck"]
    minutely = by_name["minutely"]
    assert (minutely.db_now, minutely.planned_until, minutely.scope_count) == (NOW, NOW, 1)
    assert by_name["stuck"].scope_count == 2
    assert isinstance(minutely.claim_token, UUID)

    # fire_schedule: one job for the plan time; the claim is then released
    fired = await call(
        "fire_schedule",
        minutely.schedule_id,
        [NOW],
        NOW + timedelta(minutes=1),
        claim_token=minutely.claim_token,
        scheduler_id="s1",
    )
    assert len(fired) == 1 and isinstance(fired[0], FiredTick)
    assert (fired[0].plan_time, fired[0].scope, fired[0].created) == (NOW, "", True)
    await refused(
        call,
        LeaseLostError,
        "schedule.claim_lost",
        "fire_schedule",
        minutely.schedule_id,
        [NOW],
        NOW + timedelta(minutes=1),
        claim_token=minutely.claim_token,
    )

    # pause_unplannable_schedule: the other claimed schedule, paused with the reason
    paused_at = await call(
        "pause_unplannable_schedule",
        by_name["stuck"].schedule_id,
        by_name["stuck"].claim_token,
        "cannot plan",
    )
    assert paused_at == NOW
    await refused(
        call, NotFoundError, "schedule.not_found", "pause_unplannable_schedule", uuid4(), uuid4(), "why"
    )
    assert [r.paused_reason for r in await call("list_schedules") if r.name == "stuck"] == ["cannot plan"]

    # run_schedule_now: the plan time now was fired already, so its job comes back
    (now_tick,) = await call("run_schedule_now", "minutely")
    assert isinstance(now_tick, FiredTick)
    assert (now_tick.job_id, now_tick.created) == (fired[0].job_id, False)
    await refused(call, ConflictError, "schedule.not_active", "run_schedule_now", "stuck")

    # pause_schedule / resume_schedule
    paused = await call("pause_schedule", "minutely")
    assert isinstance(paused, PausedSchedule)
    assert (paused.schedule_id, paused.paused_at, paused.changed) == (made.schedule_id, NOW, True)
    assert (await call("pause_schedule", "minutely")).changed is False
    await refused(call, NotFoundError, "schedule.not_found", "pause_schedule", "nope")
    resumed = await call("resume_schedule", "minutely")
    assert isinstance(resumed, ResumedSchedule)
    assert (resumed.schedule_id, resumed.next_run_at, resumed.changed) == (made.schedule_id, NOW, True)
    assert (await call("resume_schedule", "minutely")).changed is False
    await refused(
        call,
        InvalidInputError,
        "schedule.invalid_organization",
        "resume_schedule",
        "minutely",
        organization_id=NIL,
    )

    # delete_schedule: it goes with its tick; deleting it again finds nothing
    deleted = await call("delete_schedule", "minutely")
    assert isinstance(deleted, DeletedSchedule)
    assert (deleted.schedule_id, deleted.ticks_deleted) == (made.schedule_id, 1)
    await refused(call, NotFoundError, "schedule.not_found", "delete_schedule", "minutely")
    assert [r.name for r in await call("list_schedules")] == ["stuck"]


@pytest.fixture
def fixed(db: str) -> str:
    """A migrated database whose clock reads NOW on every connection of this DSN."""
    install_test_clock(db)
    return make_conninfo(db, options=f"-c pgrun.fake_now={NOW.isoformat()}")


def test_client(fixed: str) -> None:
    run_with_client(fixed, scenario)


def test_async_client(fixed: str) -> None:
    run_with_async_client(fixed, scenario)
