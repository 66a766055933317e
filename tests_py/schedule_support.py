"""Helpers of the scheduler tests (test_schedules.py, test_cron_scheduler.py,
test_schedule_model.py; ``at`` serves test_lease_machine_model.py too): sessions on the test
clock, declaring a schedule at a moment, reading the ticks a schedule fired, and running passes
of the scheduler loop that ships (``pgrun.scheduler.Scheduler``) at a chosen moment."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import psycopg
from croniter import croniter

from pgrun import scheduler as sched
from pgrun.client import AsyncClient, _run_on, _upsert_schedule
from pgrun.config import Config
from pgrun.results import UpsertedSchedule
from pgrun.scheduler import ScheduleDeclaration

T0 = datetime(2031, 3, 3, 0, 0, tzinfo=UTC)


@contextmanager
def session(dsn: str) -> Iterator[psycopg.Connection[Any]]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        yield conn


def at(conn: psycopg.Connection[Any], moment: datetime) -> None:
    """Move this session's clock (the database needs the test clock: install_test_clock)."""
    conn.execute("SELECT set_config('pgrun.fake_now', %s, false)", (moment.isoformat(),))


def declare(conn: psycopg.Connection[Any], moment: datetime, **kwargs: Any) -> UpsertedSchedule:
    """Declare a schedule at ``moment``, as ``@app.periodic`` does: the declaration is checked
    with croniter, then upsert_schedule is called through the client's own call path."""
    at(conn, moment)
    return _run_on(conn, _upsert_schedule(**ScheduleDeclaration(**kwargs).arguments()))


def every(cron: str, after: datetime, upto: datetime) -> list[datetime]:
    """The plan times of ``cron`` t with after < t <= upto, as croniter gives them."""
    it = croniter(cron, after)
    out: list[datetime] = []
    while (t := it.get_next(datetime)) <= upto:
        out.append(t)
    return out


def ticks(conn: psycopg.Connection[Any], name: str) -> list[tuple[str, datetime]]:
    """(scope, plan time) of every tick the schedule fired, in plan-time order."""
    rows = conn.execute(
        """
        SELECT t.scope, t.plan_time
        FROM pgrun.schedule_ticks AS t JOIN pgrun.job_schedules AS s ON s.id = t.schedule_id
        WHERE s.name = %s ORDER BY t.plan_time, t.scope
        """,
        (name,),
    ).fetchall()
    return [(r[0], r[1]) for r in rows]


class SchedulerAt:
    """The scheduler loop of ``pgrun worker`` on a database with the test clock: an
    AsyncClient over a pool of one connection, on an event loop of its own (so a test, or each
    of its threads, drives it with plain calls). ``pass_at`` moves that connection's clock and
    runs one pass of ``Scheduler``; ``run`` runs any coroutine on the loop (``client`` calls)."""

    def __init__(self, runner: asyncio.Runner, client: AsyncClient) -> None:
        self._runner = runner
        self.client = client

    def run(self, coro: Any) -> Any:
        return self._runner.run(coro)

    def at(self, moment: datetime) -> None:
        async def move() -> None:
            async with self.client.pool.connection() as conn:
                await conn.execute("SELECT set_config('pgrun.fake_now', %s, false)", (moment.isoformat(),))

        self.run(move())

    def pass_at(self, moment: datetime, ident: str = "s-test", **settings: Any) -> sched.PassReport:
        """One pass at ``moment`` as scheduler ``ident``; ``settings``: Scheduler's keyword
        arguments (max_schedules, lease_seconds, max_ticks_per_fire)."""
        self.at(moment)
        loop = sched.Scheduler(self.client, Config(), scheduler_id=ident, **settings)
        report: sched.PassReport = self.run(loop.run_once())
        return report


@contextmanager
def scheduler_at(dsn: str) -> Iterator[SchedulerAt]:
    with asyncio.Runner() as runner:
        client = runner.run(AsyncClient.connect(dsn, min_size=1, max_size=1))
        try:
            yield SchedulerAt(runner, client)
        finally:
            runner.run(client.close())
