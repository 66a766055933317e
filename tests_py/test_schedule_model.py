"""A cron schedule against a model of its catch-up policies, over sequences Hypothesis draws
(docs/schedules.md: "Catch-up policies", "Pause, resume, enable, delete").

Each example declares one schedule (every minute or every five, `latest`, `all` with a
backfill limit of three, or `none` with a grace of 60 or 150 s) and then lets time pass by
uneven amounts, runs passes of the scheduler loop that ships (two scheduler ids), and pauses and
resumes it. After every step the plan times that fired (ticks), the jobs they made (one per
tick, run_at its plan time), and the schedule's planned_until and next_run_at are compared with
the model: a pass of a due schedule decides every plan time in (planned_until, now], fires the
ones its policy keeps and moves planned_until to now; a resume replays the paused window only
with `all`.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import psycopg
import pytest
from croniter import croniter
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from model_support import run_model
from pgrun.testing import install_test_clock
from schedule_support import T0, SchedulerAt, at, declare, every, scheduler_at, ticks

NAME = "model"
BACKFILL_LIMIT = 3


def next_time(cron: str, after: datetime) -> datetime:
    t: datetime = croniter(cron, after).get_next(datetime)
    return t


class ScheduleMachine(RuleBasedStateMachine):
    def __init__(self, conn: psycopg.Connection[Any], scheduler: SchedulerAt) -> None:
        super().__init__()
        self.conn = conn
        self.scheduler = scheduler
        conn.execute("TRUNCATE pgrun.job_schedules, pgrun.jobs CASCADE")
        self.now = T0
        self.cron = ""
        self.policy = ""
        self.grace = 0
        self.planned_until = T0
        self.next_run_at = T0
        self.paused = False
        self.fired: list[datetime] = []

    # -- the model ---------------------------------------------------------------------------

    def _keep(self, due: list[datetime]) -> list[datetime]:
        """The plan times a pass fires of the due ones, by the policy."""
        if self.policy == "latest":
            return due[-1:]
        if self.policy == "all":
            return due[-BACKFILL_LIMIT:]
        # none: at most the grace late, by the database's now
        return [t for t in due if self.now - t <= timedelta(seconds=self.grace)]

    # -- rules -------------------------------------------------------------------------------

    @initialize(
        cron=st.sampled_from(["* * * * *", "*/5 * * * *"]),
        policy=st.sampled_from(["latest", "all", "none"]),
        grace=st.sampled_from([60, 150]),
    )
    def declare(self, cron: str, policy: str, grace: int) -> None:
        self.cron, self.policy, self.grace = cron, policy, grace
        declare(
            self.conn,
            T0,
            name=NAME,
            cron=cron,
            job_type="model.cron",
            catch_up=policy,
            backfill_limit=BACKFILL_LIMIT,
            misfire_grace_seconds=grace,
        )
        # a new schedule is due at once, and owes nothing from before its creation
        self.planned_until = self.next_run_at = T0

    @rule(seconds=st.sampled_from([20, 30, 60, 90, 150, 300, 1000]))
    def time_passes(self, seconds: int) -> None:
        self.now += timedelta(seconds=seconds)

    @rule(ident=st.sampled_from(["model-s1", "model-s2"]))
    def a_pass(self, ident: str) -> None:
        report = self.scheduler.pass_at(self.now, ident)
        due = not self.paused and self.next_run_at <= self.now
        assert report.claimed == int(due)
        if due:
            kept = self._keep(every(self.cron, self.planned_until, self.now))
            self.fired += kept
            assert report.fired == len(kept)
            self.planned_until = self.now
            self.next_run_at = next_time(self.cron, self.now)

    @precondition(lambda self: not self.paused)
    @rule()
    def pause(self) -> None:
        at(self.conn, self.now)
        assert self.conn.execute("SELECT changed FROM pgrun.pause_schedule(%s)", (NAME,)).fetchone() == (
            True,
        )
        self.paused = True

    @precondition(lambda self: self.paused)
    @rule()
    def resume(self) -> None:
        at(self.conn, self.now)
        row = self.conn.execute(
            "SELECT next_run_at, changed FROM pgrun.resume_schedule(%s)", (NAME,)
        ).fetchone()
        self.paused = False
        if self.policy != "all":
            self.planned_until = self.now  # the paused window is dropped
        self.next_run_at = self.now  # due at once
        assert row == (self.next_run_at, True)

    # -- what the rows must say after every step ---------------------------------------------

    @invariant()
    def ticks_jobs_and_the_plan_match_the_model(self) -> None:
        if not self.cron:
            return
        assert ticks(self.conn, NAME) == [("", t) for t in sorted(self.fired)]
        jobs = self.conn.execute(
            "SELECT j.run_at FROM pgrun.jobs AS j JOIN pgrun.job_schedules AS s ON s.id = j.schedule_id "
            "WHERE s.name = %s ORDER BY j.run_at",
            (NAME,),
        ).fetchall()
        assert [r[0] for r in jobs] == sorted(self.fired)
        row = self.conn.execute(
            "SELECT planned_until, next_run_at, paused_at IS NOT NULL FROM pgrun.job_schedules "
            "WHERE name = %s",
            (NAME,),
        ).fetchone()
        assert row == (self.planned_until, self.next_run_at, self.paused)


@pytest.fixture
def clocked(db: str) -> Iterator[str]:
    install_test_clock(db)
    yield db


def test_a_schedule_fires_what_its_policy_says(clocked: str) -> None:
    with psycopg.connect(clocked, autocommit=True) as conn, scheduler_at(clocked) as scheduler:
        run_model(lambda: ScheduleMachine(conn, scheduler), examples=100, steps=30)
