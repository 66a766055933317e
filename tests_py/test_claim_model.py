"""What claim_jobs takes, against a model of it, over sequences Hypothesis draws
(docs/lease-machine.md, "Concurrency caps" and "Ready jobs a claim passes over").

test_lease_machine_model.py follows one job type in one queue through every transition; this
follows the claim's choice among many: jobs of three types in two queues at three priorities,
due now or later, paused types, per-type caps (set, lowered under what runs, cleared), claims
filtered by queue and job type (left out, empty, one, several) and by a worker role whose
scope stands in for its filters, and walls of ~120 ready jobs the claimer may not take ahead
of the ones it may, so that the claim's bounded walk runs out and its per-(type, queue) step
finds the batch. After every claim the rows it returned must be, in order, the first
``max_jobs`` ready jobs the claimer may take in claim order (priority, run_at, id), each
capped type taking at most its room (cap - running; with max_held, also at most max_held less
the running jobs of the type the claiming worker id holds), and every job's status must match
the model. Claims come from two worker ids, with max_held or without. Jobs end (complete), go
back (release), are cancelled while queued, and time passes; next_run_at, asked with the same
filters, must name the earliest due time after now. Two claims also run at once: one in a
transaction left open while the second runs, which must pass over every job the first holds
locked and sit out the capped types whose runtime row it holds (what it holds is read with
SKIP LOCKED from a third session), then the first commits or rolls back.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Collection
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from model_support import refusal, run_model
from pgrun.testing import LoginRole, install_test_clock
from schedule_support import at

START = datetime(2032, 1, 1, tzinfo=UTC)
TYPES = ("m.a", "m.b", "m.c")
QUEUES = ("q1", "q2")
# the scoped worker role's role_access: what a NULL filter stands for, and all it may name
SCOPE_QUEUES = ("q1",)
SCOPE_TYPES = ("m.a", "m.b")
PRIORITIES = st.sampled_from([50, 100, 150])
MAX_JOBS = st.integers(1, 6)
DELAYS = st.sampled_from([0, 0, 2, 10])  # seconds until an enqueued job is due
WALL_SIZES = st.sampled_from([105, 125])  # past the walk's bound (4 x max_jobs + 100) for small claims
MAX_QUEUED = 450  # walls stop once this many jobs wait
CLAIM = "SELECT job_id, lease_token FROM pgrun.claim_jobs(%s, 3600, %s, %s, %s, %s)"
# a claim's worker id and max_held (NULL: no bound)
CLAIMERS = st.tuples(st.sampled_from(["w1", "w2"]), st.sampled_from([None, None, 1, 2, 3]))


Filter = list[str] | None  # a claim's queues or job_types argument


def filters(values: tuple[str, ...]) -> st.SearchStrategy[Filter]:
    """A claim's filter: left out (NULL), empty, or a few names in any order."""
    return st.one_of(st.none(), st.lists(st.sampled_from(values), max_size=len(values), unique=True))


Claimer = tuple[str, int | None]  # worker id, max_held
ClaimCall = tuple[Claimer, int, Filter, Filter, bool]  # the claimer, max_jobs, queues, job_types, scoped
CLAIM_CALLS = st.tuples(CLAIMERS, MAX_JOBS, filters(QUEUES), filters(TYPES), st.booleans())


@dataclass
class Job:
    id: uuid.UUID
    job_type: str
    queue: str
    priority: int
    run_at: datetime
    status: str = "queued"
    token: uuid.UUID | None = None
    worker: str | None = None  # while running


class ClaimMachine(RuleBasedStateMachine):
    def __init__(
        self, conn: psycopg.Connection[Any], worker: psycopg.Connection[Any], other: psycopg.Connection[Any]
    ) -> None:
        super().__init__()
        self.conn = conn  # the superuser: an admin, unscoped
        self.worker = worker  # a worker role scoped to SCOPE_QUEUES and SCOPE_TYPES
        self.other = other  # another admin, whose claim stays open while a second one runs
        conn.execute("TRUNCATE pgrun.jobs, pgrun.job_events, pgrun.job_dead_letters CASCADE")
        conn.execute("DELETE FROM pgrun.job_runtime_configs")
        self.now = START
        for session in (conn, worker, other):
            at(session, self.now)
        for session in (conn, worker):  # a capped type's row the first of two claims holds: wait
            session.execute("SET lock_timeout = '20ms'")  # 20 ms for it, not claim_jobs' 0.2 s
        self.jobs: dict[uuid.UUID, Job] = {}
        self.paused = dict.fromkeys(TYPES, False)
        self.caps: dict[str, int | None] = dict.fromkeys(TYPES)

    # -- plumbing ------------------------------------------------------------------------

    def _enqueue(self, job_type: str, queue: str, priority: int, delay: int, count: int) -> None:
        element = {"job_type": job_type, "queue": queue, "priority": priority, "delay": delay}
        rows = self.conn.execute(
            "SELECT job_id, created FROM pgrun.enqueue_jobs(%s)", (json.dumps([element] * count),)
        ).fetchall()
        assert len(rows) == count and all(created for _, created in rows)
        run_at = self.now + timedelta(seconds=delay)
        for job_id, _ in rows:
            self.jobs[job_id] = Job(job_id, job_type, queue, priority, run_at)

    def _in_status(self, status: str) -> list[Job]:
        return [j for j in self.jobs.values() if j.status == status]

    def _scope(
        self, scoped: bool, call: str, params: tuple[Any, ...], queues: Filter, job_types: Filter
    ) -> tuple[Filter, Filter] | None:
        """The filters a call works with: the admin's as given; the scoped worker role's with
        its scope for a NULL one. None when the role's call must be (and was) refused for a
        name outside its scope, the queue checked first."""
        if not scoped:
            return queues, job_types
        if queues is not None and not set(queues) <= set(SCOPE_QUEUES):
            assert refusal(self.worker, call, params) == ("42501", "access.queue_denied")
            return None
        if job_types is not None and not set(job_types) <= set(SCOPE_TYPES):
            assert refusal(self.worker, call, params) == ("42501", "access.job_type_denied")
            return None
        return (
            list(SCOPE_QUEUES) if queues is None else queues,
            list(SCOPE_TYPES) if job_types is None else job_types,
        )

    def _held_by_other(self) -> tuple[set[uuid.UUID], set[str]]:
        """The queued jobs and the job types' runtime rows another transaction holds locked:
        what a claim with SKIP LOCKED passes over, read the same way and rolled back."""
        with self.conn.transaction(force_rollback=True):
            queued = "SELECT id FROM pgrun.jobs WHERE status = 'queued'"
            every = {r[0] for r in self.conn.execute(queued)}
            free = {r[0] for r in self.conn.execute(queued + " FOR UPDATE SKIP LOCKED")}
            configs = "SELECT job_type FROM pgrun.job_runtime_configs"
            types = {r[0] for r in self.conn.execute(configs)}
            free_types = {r[0] for r in self.conn.execute(configs + " FOR UPDATE SKIP LOCKED")}
        return every - free, types - free_types

    def _expected(
        self,
        claimer: Claimer,
        queues: Filter,
        job_types: Filter,
        max_jobs: int,
        held: Collection[uuid.UUID] = (),
        held_types: Collection[str] = (),
    ) -> list[Job]:
        """The first max_jobs ready jobs in claim order that these filters, the pauses and
        the caps' room let a claimer (worker id, max_held) take; passing over the jobs another
        claim holds (``held``), and the capped types whose runtime row it holds
        (``held_types``) sit the claim out."""
        worker, max_held = claimer
        running = self._in_status("running")
        room = {
            t: min(
                cap - sum(j.job_type == t for j in running),
                # with max_held, at most that less the type's running jobs this worker id holds
                max_held - sum(j.worker == worker for j in running if j.job_type == t) if max_held else cap,
            )
            for t, cap in self.caps.items()
            if cap is not None and t not in held_types
        }
        ready = sorted(
            (
                j
                for j in self._in_status("queued")
                if j.run_at <= self.now
                and (queues is None or j.queue in queues)
                and (job_types is None or j.job_type in job_types)
                and not self.paused[j.job_type]
                and j.id not in held
                and not (j.job_type in held_types and self.caps[j.job_type] is not None)
            ),
            key=lambda j: (j.priority, j.run_at, j.id),
        )
        taken: list[Job] = []
        for job in ready:
            if len(taken) == max_jobs:
                break
            if job.job_type in room:
                if room[job.job_type] <= 0:
                    continue
                room[job.job_type] -= 1
            taken.append(job)
        return taken

    # -- rules ---------------------------------------------------------------------------

    # twice, as often as a claim: claims find jobs to choose among
    @rule(job_type=st.sampled_from(TYPES), queue=st.sampled_from(QUEUES), priority=PRIORITIES, delay=DELAYS)
    def enqueue(self, job_type: str, queue: str, priority: int, delay: int) -> None:
        self._enqueue(job_type, queue, priority, delay, 1)

    @rule(
        job_type=st.sampled_from(TYPES),
        queue=st.sampled_from(QUEUES),
        priority=PRIORITIES,
        delay=DELAYS,
        count=st.integers(2, 5),
    )
    def enqueue_some(self, job_type: str, queue: str, priority: int, delay: int, count: int) -> None:
        self._enqueue(job_type, queue, priority, delay, count)

    @precondition(lambda self: len(self._in_status("queued")) < MAX_QUEUED)
    @rule(job_type=st.sampled_from(TYPES), queue=st.sampled_from(QUEUES), size=WALL_SIZES)
    def wall(self, job_type: str, queue: str, size: int) -> None:
        """Many ready jobs of one type and queue at the best priority: ahead of every other
        job in claim order, so a claimer that may not take them must find its jobs past them."""
        self._enqueue(job_type, queue, 10, 0, size)

    @rule(job_type=st.sampled_from(TYPES), paused=st.booleans())
    def pause(self, job_type: str, paused: bool) -> None:
        self.conn.execute("SELECT pgrun.set_job_runtime_config(%s, paused => %s)", (job_type, paused))
        self.paused[job_type] = paused

    @rule(job_type=st.sampled_from(TYPES), cap=st.sampled_from([None, 1, 2, 4]))
    def cap(self, job_type: str, cap: int | None) -> None:
        """Set a cap (also under what already runs of the type), or clear it."""
        self.conn.execute(
            "SELECT pgrun.set_job_runtime_config(%s, max_concurrency => %s, clear_max_concurrency => %s)",
            (job_type, cap, cap is None),
        )
        self.caps[job_type] = cap

    # twice: a claim is drawn twice as often as any other step
    @rule(call=CLAIM_CALLS)
    def claim(self, call: ClaimCall) -> None:
        self._claim(*call)

    @rule(call=CLAIM_CALLS)
    def claim_again(self, call: ClaimCall) -> None:
        self._claim(*call)

    def _claim(
        self,
        claimer: Claimer,
        max_jobs: int,
        queues: Filter,
        job_types: Filter,
        scoped: bool,
        held: Collection[uuid.UUID] = (),
        held_types: Collection[str] = (),
    ) -> None:
        """A claim by the admin (its filters as given) or by the scoped worker role (a NULL
        filter is its scope; a name outside it is refused, the queue checked first), while
        another transaction holds ``held`` and ``held_types`` (_expected)."""
        params = (claimer[0], max_jobs, queues, job_types, claimer[1])
        resolved = self._scope(scoped, CLAIM, params, queues, job_types)
        if resolved is None:
            return
        expected = self._expected(claimer, *resolved, max_jobs, held, held_types)
        rows = (self.worker if scoped else self.conn).execute(CLAIM, params).fetchall()
        assert [r[0] for r in rows] == [j.id for j in expected]
        self._mark_running(rows, claimer[0])

    def _mark_running(self, rows: list[tuple[Any, ...]], worker: str) -> None:
        for job_id, token in rows:
            self.jobs[job_id].status = "running"
            self.jobs[job_id].token = token
            self.jobs[job_id].worker = worker

    @rule(
        first=st.tuples(CLAIMERS, MAX_JOBS, filters(QUEUES), filters(TYPES)),
        second=CLAIM_CALLS,
        commit=st.booleans(),
    )
    def two_claims_at_once(
        self,
        first: tuple[Claimer, int, Filter, Filter],
        second: ClaimCall,
        commit: bool,
    ) -> None:
        """Another admin's claim runs in a transaction left open while a second claim runs:
        the second passes over every job the first holds locked (its claimed jobs, and the
        surplus it locked and left) and sits out every capped type whose runtime row the
        first holds, and takes what the model then says; no job is claimed twice. The first
        then commits, or rolls back and its jobs stay queued."""
        with self.other.transaction(force_rollback=not commit):
            claimer, max_jobs, queues, job_types = first
            params = (claimer[0], max_jobs, queues, job_types, claimer[1])
            firsts = self.other.execute(CLAIM, params).fetchall()
            expected = self._expected(claimer, queues, job_types, max_jobs)
            assert [r[0] for r in firsts] == [j.id for j in expected]
            held, held_types = self._held_by_other()
            assert {r[0] for r in firsts} <= held
            self._claim(*second, held, held_types)
        if commit:
            self._mark_running(firsts, claimer[0])

    @rule(queues=filters(QUEUES), job_types=filters(TYPES), scoped=st.booleans())
    def next_due(self, queues: Filter, job_types: Filter, scoped: bool) -> None:
        """next_run_at: the earliest run_at after now among the queued jobs of these filters
        (the scoped role's scope for a NULL one), paused and capped types counted."""
        call = "SELECT pgrun.next_run_at(%s, %s)"
        params = (queues, job_types)
        resolved = self._scope(scoped, call, params, queues, job_types)
        if resolved is None:
            return
        row = (self.worker if scoped else self.conn).execute(call, params).fetchone()
        queues, job_types = resolved
        due = [
            j.run_at
            for j in self._in_status("queued")
            if j.run_at > self.now
            and (queues is None or j.queue in queues)
            and (job_types is None or j.job_type in job_types)
        ]
        assert row == (min(due, default=None),)

    @precondition(lambda self: bool(self._in_status("running")))
    @rule(data=st.data(), outcome=st.sampled_from(["complete", "complete", "release"]))
    def end(self, data: st.DataObject, outcome: str) -> None:
        """Some running jobs end (their type's room grows) or go back to queued (run_at as it was)."""
        running = self._in_status("running")
        chosen = data.draw(
            st.lists(st.sampled_from(running), min_size=1, max_size=3, unique_by=lambda j: j.id)
        )
        function = "complete_jobs" if outcome == "complete" else "release_jobs"
        rows = self.conn.execute(
            f"SELECT outcome FROM pgrun.{function}(%s, %s)",
            ([j.id for j in chosen], [j.token for j in chosen]),
        ).fetchall()
        assert rows == [("succeeded" if outcome == "complete" else "released",)] * len(chosen)
        for job in chosen:
            job.status = "succeeded" if outcome == "complete" else "queued"
            job.token = None

    @precondition(lambda self: bool(self._in_status("queued")))
    @rule(data=st.data())
    def cancel(self, data: st.DataObject) -> None:
        job = data.draw(st.sampled_from(self._in_status("queued")))
        self.conn.execute("SELECT pgrun.cancel_job(%s)", (job.id,))
        job.status = "cancelled"

    @rule(seconds=st.sampled_from([1, 3, 12]))
    def time_passes(self, seconds: int) -> None:
        self.now += timedelta(seconds=seconds)
        for session in (self.conn, self.worker, self.other):
            at(session, self.now)

    @invariant()
    def statuses_match_the_model(self) -> None:
        found = dict(self.conn.execute("SELECT id, status FROM pgrun.jobs").fetchall())
        assert found == {j.id: j.status for j in self.jobs.values()}


@pytest.fixture
def scoped_worker(db: str, roles: dict[str, LoginRole]) -> LoginRole:
    with psycopg.connect(db, autocommit=True) as conn:
        conn.execute(
            "SELECT pgrun.set_role_access(%s, queues => %s, job_types => %s)",
            (roles["worker"].name, list(SCOPE_QUEUES), list(SCOPE_TYPES)),
        )
    return roles["worker"]


def test_claims_take_what_the_model_says(db: str, scoped_worker: LoginRole) -> None:
    install_test_clock(db)
    with (
        psycopg.connect(db, autocommit=True) as conn,
        psycopg.connect(scoped_worker.dsn(db), autocommit=True) as worker,
        psycopg.connect(db, autocommit=True) as other,
    ):
        run_model(lambda: ClaimMachine(conn, worker, other), examples=120, steps=40)
