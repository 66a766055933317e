"""The scheduler under the schedule limits: a catch-up larger than one fire_schedule call
(chunks under one claim, exactly once, also when the scheduler dies between chunks and
when schedulers race with tiny chunks and claims), a stored schedule it cannot plan (paused
with the reason and logged, never claimed again until restated), and list_schedules paged.

Time is simulated with the test clock, as in test_schedules.py.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import signal
import subprocess
import sys
import threading
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import uuid4

import psycopg
import pytest
from psycopg.conninfo import make_conninfo
from psycopg.rows import dict_row

from pgrun import cli
from pgrun import scheduler as sched
from pgrun.client import AsyncClient, Client
from pgrun.config import Config
from pgrun.results import ClaimedSchedule
from pgrun.testing import install_test_clock
from schedule_support import T0, at, declare, every, scheduler_at, session, ticks


@pytest.fixture
def db(db: str) -> str:
    """The migrated database, with the test clock that honours pgrun.fake_now."""
    install_test_clock(db)
    return db


def schedule(conn: psycopg.Connection[Any], name: str) -> dict[str, Any]:
    with conn.cursor(row_factory=dict_row) as cur:
        row = cur.execute("SELECT * FROM pgrun.job_schedules WHERE name = %s", (name,)).fetchone()
    assert row is not None
    return row


SCOPES = ("a", "b", "c")


def declare_backlog(conn: psycopg.Connection[Any]) -> list[tuple[str, datetime]]:
    """A per-minute schedule with three scopes, catch_up all, down for 6 hours: 1080 ticks
    owed. Returns them."""
    declare(
        conn,
        T0,
        name="backlog",
        cron="* * * * *",
        job_type="test.cron",
        catch_up="all",
        backfill_limit=10000,
        scope_kind="key",
        scopes=SCOPES,
    )
    return [(s, t) for t in every("* * * * *", T0, T0 + timedelta(hours=6)) for s in SCOPES]


def _claimed(scope_count: int) -> ClaimedSchedule:
    return ClaimedSchedule(
        schedule_id=uuid4(),
        claim_token=uuid4(),
        name="s",
        organization_id=None,
        cron="* * * * *",
        timezone="UTC",
        catch_up="all",
        backfill_limit=10000,
        misfire_grace_seconds=60,
        planned_until=T0,
        last_plan_at=None,
        next_run_at=T0,
        db_now=T0,
        scope_count=scope_count,
    )


def test_fire_calls_chunk_a_plan_under_one_claim() -> None:
    times = [T0 + timedelta(minutes=i) for i in range(1, 361)]
    plan = sched.Plan(plan_times=times, next_run_at=times[-1] + timedelta(minutes=1), planned_until=times[-1])
    row = _claimed(scope_count=3)
    calls = sched._fire_calls(row, plan, "s1", max_ticks=100)
    assert [len(c.plan_times) for c in calls] == [33] * 10 + [30], (
        "33 plan times x 3 scopes = 99 ticks a call"
    )
    assert [t for c in calls for t in c.plan_times] == times
    assert [c.keep_claim for c in calls] == [True] * 10 + [False]
    assert {(c.schedule_id, c.claim_token, c.scheduler_id) for c in calls} == {
        (row.schedule_id, row.claim_token, "s1")
    }
    for c, following in itertools.pairwise(calls):
        # planned up to its own end, due again at the next chunk's first plan time
        assert c.planned_until == c.plan_times[-1]
        assert c.next_run_at == following.plan_times[0]
    assert (calls[-1].planned_until, calls[-1].next_run_at) == (plan.planned_until, plan.next_run_at)
    # a plan that fits, and an empty one: one call that releases the claim
    assert len(sched._fire_calls(row, plan, "s1")) == 1
    empty = sched.Plan(plan_times=[], next_run_at=plan.next_run_at, planned_until=plan.planned_until)
    assert [c.keep_claim for c in sched._fire_calls(row, empty, "s1")] == [False]


def test_a_catch_up_over_the_per_call_cap_fires_in_several_calls_exactly_once(db: str) -> None:
    with session(db) as conn, scheduler_at(db) as s:
        # two scopes, catch_up all with the largest backfill, down for a week: the 10000
        # most recent plan times are owed, 20000 ticks, twice what one fire_schedule takes
        declare(
            conn,
            T0,
            name="week",
            cron="* * * * *",
            job_type="test.cron",
            catch_up="all",
            backfill_limit=10000,
            scope_kind="key",
            scopes=("a", "b"),
        )
        now = T0 + timedelta(days=7)
        report = s.pass_at(now, "s1")
        assert (report.fired, report.errors, report.claims_lost, report.duplicates) == (20000, 0, 0, 0)
        owed = every("* * * * *", T0, now)[-10000:]
        assert ticks(conn, "week") == [(s, t) for t in owed for s in ("a", "b")]
        row = schedule(conn, "week")
        assert row["claim_token"] is None, "the last chunk released the claim"
        assert (row["planned_until"], row["next_run_at"]) == (now, now + timedelta(minutes=1))


def test_a_scheduler_that_dies_between_chunks_leaves_the_rest_to_the_next_one(db: str) -> None:
    with session(db) as conn, scheduler_at(db) as s:
        owed = declare_backlog(conn)
        now = T0 + timedelta(hours=6)
        s.at(now)
        (row,) = s.run(s.client.claim_due_schedules("doomed", max_schedules=10, lease_seconds=30))
        calls = sched._fire_calls(row, sched._plan_row(row), "doomed", max_ticks=100)
        assert len(calls) == 11 and [c.keep_claim for c in calls] == [True] * 10 + [False]
        for call in calls[:4]:  # four chunks, then the process dies
            s.run(call.fire(s.client))
        fired_first = ticks(conn, "backlog")
        assert fired_first == owed[: 4 * 99]
        # its claim still keeps others away ...
        assert s.pass_at(now, "s2").claimed == 0
        # ... until it expires: the next scheduler fires the rest, nothing twice
        report = s.pass_at(now + timedelta(seconds=31), "s2", max_ticks_per_fire=1000)
        assert (report.fired, report.duplicates) == (len(owed) - 4 * 99, 0)
        assert ticks(conn, "backlog") == owed
        jobs = conn.execute(
            "SELECT count(*), count(DISTINCT (run_at, payload)) FROM pgrun.jobs WHERE schedule_id = %s",
            (schedule(conn, "backlog")["id"],),
        ).fetchone()
        assert jobs == (len(owed), len(owed))


def test_racing_schedulers_with_tiny_chunks_and_claims_fire_each_tick_once(db: str) -> None:
    with session(db) as conn:
        owed = declare_backlog(conn)
    end = T0 + timedelta(hours=6)
    failures: list[BaseException] = []
    stop = threading.Event()

    def scheduler(index: int) -> None:
        try:
            with scheduler_at(db) as s:
                moment = end
                while not stop.is_set():
                    # each pass a little later: 1 s claims expire under the other schedulers
                    moment += timedelta(milliseconds=400)
                    s.pass_at(moment, f"s{index}", lease_seconds=1, max_ticks_per_fire=7)
        except BaseException as exc:  # surfaced by the assertion below
            failures.append(exc)

    threads = [threading.Thread(target=scheduler, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    deadline = datetime.now(UTC) + timedelta(seconds=120)
    with session(db) as conn:
        while datetime.now(UTC) < deadline and len([1 for _, p in ticks(conn, "backlog") if p <= end]) < len(
            owed
        ):
            stop.wait(0.2)
    stop.set()
    for t in threads:
        t.join(60)
    assert not failures
    with session(db) as conn:
        got = [(s, p) for s, p in ticks(conn, "backlog") if p <= end]
        assert got == owed
        dup = conn.execute(
            "SELECT count(*) - count(DISTINCT (run_at, payload)) FROM pgrun.jobs WHERE schedule_id = %s",
            (schedule(conn, "backlog")["id"],),
        ).fetchone()
        assert dup == (0,)


def test_a_stored_schedule_it_cannot_plan_is_paused_with_the_reason(
    db: str, caplog: pytest.LogCaptureFixture
) -> None:
    with session(db) as conn, scheduler_at(db) as s:
        declare(conn, T0, name="old", cron="*/10 * * * *", job_type="test.cron")
        declare(conn, T0, name="fine", cron="*/10 * * * *", job_type="test.cron")
        # an older install accepted W (nearest weekday); the grammar refuses it now
        conn.execute("UPDATE pgrun.job_schedules SET cron = '0 0 15W * *' WHERE name = 'old'")
        with caplog.at_level(logging.ERROR, logger="pgrun.scheduler"):
            report = s.pass_at(T0 + timedelta(minutes=10), "s1")
        assert (report.claimed, report.paused, report.fired, report.errors) == (2, 1, 1, 0)
        old = schedule(conn, "old")
        assert old["paused_at"] == T0 + timedelta(minutes=10) and old["claim_token"] is None
        assert "15W" in old["paused_reason"] and "schedule.invalid_cron" in old["paused_reason"]
        assert any("old" in r.getMessage() and "15W" in r.getMessage() for r in caplog.records)
        with Client.connect(db) as client:
            listed = {r.name: r for r in client.list_schedules()}
        assert listed["old"].paused_reason == old["paused_reason"]
        # `pgrun schedules` shows why it is paused
        shown = subprocess.run(
            [sys.executable, "-m", "pgrun", "schedules"],
            env={**os.environ, "DATABASE_URL": db},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        line = next(row for row in shown.splitlines() if row.startswith("old "))
        assert "paused: " in line and "15W" in line, shown
        # not claimed again, lease after lease
        for minutes in (20, 30, 60, 600):
            again = s.pass_at(T0 + timedelta(minutes=minutes), "s1")
            assert again.paused == 0 and again.errors == 0
        assert ticks(conn, "old") == []
        # the app restates it with an expression the grammar takes: it plans again
        declare(conn, T0 + timedelta(minutes=600), name="old", cron="0 0 15 * *", job_type="test.cron")
        assert schedule(conn, "old")["paused_at"] is None
        s.pass_at(T0 + timedelta(days=13), "s1")
        assert ticks(conn, "old") == [("", datetime(2031, 3, 15, tzinfo=UTC))]


def test_the_async_scheduler_pauses_what_it_cannot_plan_too(db: str) -> None:
    with session(db) as conn:
        declare(conn, T0, name="old", cron="*/10 * * * *", job_type="test.cron")
        conn.execute("UPDATE pgrun.job_schedules SET cron = '0 0 * 2 1#5' WHERE name = 'old'")

    fake = make_conninfo(db, options=f"-c pgrun.fake_now={(T0 + timedelta(minutes=10)).isoformat()}")

    async def one_pass() -> sched.PassReport:
        async with await AsyncClient.connect(fake) as client:
            return await sched.Scheduler(client, Config()).run_once()

    report = asyncio.run(one_pass())
    assert (report.claimed, report.paused) == (1, 1)
    with session(db) as conn:
        assert "decades" in schedule(conn, "old")["paused_reason"]


def test_pgrun_schedules_reads_every_page(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    with session(db) as conn:
        at(conn, T0)
        # written directly: 1,005 schedules in one statement
        conn.execute(
            """
            INSERT INTO pgrun.job_schedules (name, cron, job_type, planned_until, next_run_at)
            SELECT format('s%s', lpad(i::text, 4, '0')), '0 * * * *', 'test.cron', pgrun.now(), pgrun.now()
            FROM generate_series(1005, 1, -1) AS g (i)
            """
        )
        page = conn.execute("SELECT count(*) FROM pgrun.list_schedules()").fetchone()
        assert page == (100,)
    assert cli.main(["schedules", "--database-url", db]) == 0
    names = [line.split()[0] for line in capsys.readouterr().out.splitlines()[2:]]
    assert names == [f"s{i:04d}" for i in range(1, 1006)]


@pytest.mark.parametrize("poll_seconds", [1, 1800, 1801, 3600])
def test_every_poll_interval_the_configuration_accepts_fires(db: str, poll_seconds: int) -> None:
    """JOBS_SCHEDULE_POLL_INTERVAL_SECONDS takes 1..3600; the claim the loop asks for must be
    one claim_due_schedules grants, whatever the interval (over 1800 it once asked for more
    than 3600 s and every pass failed with schedule.invalid_lease_seconds)."""
    with session(db) as conn:
        declare(conn, T0, name="polled", cron="*/10 * * * *", job_type="test.cron")
    fake = make_conninfo(db, options=f"-c pgrun.fake_now={(T0 + timedelta(minutes=10)).isoformat()}")

    async def one_pass() -> sched.PassReport:
        async with await AsyncClient.connect(fake) as client:
            config = Config(schedule_poll_interval_seconds=poll_seconds)
            return await sched.Scheduler(client, config).run_once()

    report = asyncio.run(one_pass())
    assert (report.claimed, report.fired, report.errors) == (1, 1, 0)
    with session(db) as conn:
        assert ticks(conn, "polled") == [("", T0 + timedelta(minutes=10))]


@pytest.mark.parametrize(
    ("value", "warning", "poll"),
    [
        ("0", "JOBS_SCHEDULE_POLL_INTERVAL_SECONDS=0 is outside 1..3600; using 1", 1),
        ("soon", "JOBS_SCHEDULE_POLL_INTERVAL_SECONDS='soon' is not an integer; using 5", 5),
    ],
    ids=["out-of-range", "not-a-number"],
)
def test_python_m_pgrun_scheduler_warns_about_a_bad_poll_interval_and_runs(
    db: str, tmp_path: Any, value: str, warning: str, poll: int
) -> None:
    """The scheduler run alone reads its settings through pgrun.config: a bad value is warned
    about and replaced, as the worker does, instead of stopping the process."""
    with session(db) as conn:
        # declared ten seconds ago (the test clock, this session only): due on the first pass
        started = conn.execute("SELECT now()").fetchone()
        assert started is not None
        declare(conn, started[0] - timedelta(seconds=10), name="alone", cron="* * * * * *", job_type="t.x")
    env = {**os.environ, "DATABASE_URL": db, "JOBS_SCHEDULE_POLL_INTERVAL_SECONDS": value}
    log_path = tmp_path / "scheduler.log"
    with log_path.open("w") as log_file:
        process = subprocess.Popen(
            [sys.executable, "-m", "pgrun.scheduler"], env=env, stdout=log_file, stderr=subprocess.STDOUT
        )
        try:
            deadline = datetime.now(UTC) + timedelta(seconds=60)
            with session(db) as conn:
                while not ticks(conn, "alone") and datetime.now(UTC) < deadline and process.poll() is None:
                    threading.Event().wait(0.2)
                fired = ticks(conn, "alone")
        finally:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
            code = process.wait(timeout=60)
    output = log_path.read_text()
    assert fired, output
    assert code == 0, output
    assert warning in output
    assert f"started (poll {poll} s)" in output and "stopped" in output
