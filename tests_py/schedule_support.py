"""Helpers of the scheduler tests (test_schedules.py, test_cron_scheduler.py): sessions on the
test clock, declaring a schedule at a moment, and reading the ticks a schedule fired."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import psycopg

from pgrun import scheduler as sched
from pgrun.scheduler import ScheduleDeclaration

T0 = datetime(2031, 3, 3, 0, 0, tzinfo=UTC)


@contextmanager
def session(dsn: str) -> Iterator[psycopg.Connection[Any]]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        yield conn


def at(conn: psycopg.Connection[Any], moment: datetime) -> None:
    """Move this session's clock (the database needs the test clock: install_test_clock)."""
    conn.execute("SELECT set_config('pgrun.fake_now', %s, false)", (moment.isoformat(),))


def declare(conn: psycopg.Connection[Any], moment: datetime, **kwargs: Any) -> None:
    at(conn, moment)
    sched.upsert_schedule(conn, ScheduleDeclaration(**kwargs))


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
