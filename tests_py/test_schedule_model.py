"""A cron schedule against a model of its catch-up policies, over sequences Hypothesis draws
(docs/schedules.md: "Catch-up policies", "Pause, resume, enable, delete").

Each example declares one schedule (every minute or every five, `latest`, `all` with a
backfill limit of three, or `none` with a grace of 60 or 150 s) and then lets time pass by
uneven amounts, runs passes of the scheduler loop that ships (two scheduler ids), pauses,
resumes and restates it (an identical restatement changes nothing, another drops any claim and
makes it due at once), runs it now by hand, and lets a scheduler claim it and vanish (no pass
claims it until that claim expires). After every step the plan times that fired (ticks), the
jobs they made (one per tick, run_at its plan time), and the schedule's planned_until and
next_run_at are compared with the model: a pass of a due schedule decides every plan time in
(planned_until, now], fires the ones its policy keeps and moves planned_until to now; a resume
replays the paused window only with `all`.
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

from model_support import refusal, run_model
from pgrun.testing import install_test_clock
from schedule_support import T0, SchedulerAt, at, declare, every, scheduler_at, ticks

NAME = "model"
CRONS = ["* * * * *", "*/5 * * * *"]
POLICIES = ["latest", "all", "none"]
GRACES = [60, 150]
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
        self.claimed_until: datetime | None = None  # a claim whose scheduler vanished
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

    def _due(self) -> bool:
        """Whether a pass claims the schedule now."""
        claimed = self.claimed_until is not None and self.claimed_until > self.now
        return not self.paused and not claimed and self.next_run_at <= self.now

    def _declare(self, cron: str, policy: str, grace: int) -> bool:
        """upsert_schedule at now, as @app.periodic does; whether it changed anything."""
        upserted = declare(
            self.conn,
            self.now,
            name=NAME,
            cron=cron,
            job_type="model.cron",
            catch_up=policy,
            backfill_limit=BACKFILL_LIMIT,
            misfire_grace_seconds=grace,
        )
        changed = (cron, policy, grace) != (self.cron, self.policy, self.grace)
        assert upserted.changed is changed
        if changed:
            # due at once; what is decided stays decided; any claim is dropped
            self.cron, self.policy, self.grace = cron, policy, grace
            self.next_run_at = self.now
            self.claimed_until = None
        return changed

    @initialize(
        cron=st.sampled_from(CRONS),
        policy=st.sampled_from(POLICIES),
        grace=st.sampled_from(GRACES),
    )
    def declare(self, cron: str, policy: str, grace: int) -> None:
        # a new schedule is due at once, and owes nothing from before its creation
        assert self._declare(cron, policy, grace)

    @rule(cron=st.sampled_from(CRONS), policy=st.sampled_from(POLICIES), grace=st.sampled_from(GRACES))
    def restate(self, cron: str, policy: str, grace: int) -> None:
        self._declare(cron, policy, grace)

    @rule(lease=st.sampled_from([60, 200]))
    def a_scheduler_claims_and_vanishes(self, lease: int) -> None:
        at(self.conn, self.now)
        rows = self.conn.execute(
            "SELECT name FROM pgrun.claim_due_schedules('model-gone', 10, %s)", (lease,)
        ).fetchall()
        assert rows == ([(NAME,)] if self._due() else [])
        if rows:
            self.claimed_until = self.now + timedelta(seconds=lease)

    @rule()
    def run_now(self) -> None:
        at(self.conn, self.now)
        call = "SELECT plan_time, scope, created FROM pgrun.run_schedule_now(%s)"
        if self.paused:
            assert refusal(self.conn, call, (NAME,)) == ("RQ001", "schedule.not_active")
            return
        rows = self.conn.execute(call, (NAME,)).fetchall()
        assert rows == [(self.now, "", self.now not in self.fired)]
        if self.now not in self.fired:
            self.fired.append(self.now)  # the planning state is left as it is

    @rule(seconds=st.sampled_from([20, 30, 60, 90, 150, 300, 1000]))
    def time_passes(self, seconds: int) -> None:
        self.now += timedelta(seconds=seconds)

    @rule(ident=st.sampled_from(["model-s1", "model-s2"]))
    def a_pass(self, ident: str) -> None:
        due = self._due()
        report = self.scheduler.pass_at(self.now, ident)
        assert report.claimed == int(due)
        if due:
            kept = self._keep(every(self.cron, self.planned_until, self.now))
            new = [t for t in kept if t not in self.fired]  # run_now may have fired one
            self.fired += new
            assert (report.fired, report.duplicates) == (len(new), len(kept) - len(new))
            self.planned_until = self.now
            self.next_run_at = next_time(self.cron, self.now)
            self.claimed_until = None

    @precondition(lambda self: not self.paused)
    @rule()
    def pause(self) -> None:
        at(self.conn, self.now)
        assert self.conn.execute("SELECT changed FROM pgrun.pause_schedule(%s)", (NAME,)).fetchone() == (
            True,
        )
        self.paused = True
        self.claimed_until = None  # a pause drops the claim

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
