"""The lease machine against a model of it, over sequences Hypothesis draws (docs/lease-machine.md).

The pgTAP suites pin each transition on its own; this walks random sequences of them over a
handful of jobs (enqueue, also with an idempotency key through either door, claim, heartbeat,
complete, fail, continue, release, cancel, requeue, the reaper, purges, and time passing on
the test clock) and after every step compares each job's row with a model written from the
docs: its status, attempt, total_attempts, run_at (claim order, retry delays: the call's, the
step's, the backoff's), lease (token, expiry, worker), cancel request, step and the step's
budget and delay, finished_at, its rows in job_attempts and its open dead letters, and that no
history outlives a purged job. Every write is made with the current token, a token of an
earlier claim, or one no claim gave, so the lease checks (lost_reason) are walked through too,
and a worker's cycle (claim one job, then end its claim or vanish) takes jobs through many
steps. Hypothesis shrinks a failing sequence to a short one and prints it as the steps to
replay.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
)

from model_support import refusal, run_model
from pgrun.testing import install_test_clock
from schedule_support import at

START = datetime(2031, 1, 1, tzinfo=UTC)
JOB_TYPE = "model.job"
WORKERS = ("model-w1", "model-w2")
# The type's backoff, without jitter so that a retry's time is known: 3 s, 6 s, then 10 s
BACKOFF_BASE, BACKOFF_MAX = 3, 10
DELAYS = st.sampled_from([None, 0, 4, 15])  # seconds; None: the argument left out
REAP_DELAYS = st.sampled_from([None, 2])  # the reaper's retry_delay
MAX_JOBS = 4
# which token a write uses (_token): the live one half of the time
TOKENS = st.sampled_from(["current", "current", "earlier", "unknown"])
# how the work rule's claim ends
WORKER_ENDINGS = ["complete", "fail", "continue", "continue", "next_step_fails", "release", "vanish"]
ContinueArguments = tuple[str, int | None, int | None, int | None]
# continue_job's next_step, delay, max_attempts (the step's budget) and retry_delay (the step's)
CONTINUES = st.tuples(st.sampled_from(["two", "three"]), DELAYS, st.sampled_from([None, 1, 2]), DELAYS)


@dataclass
class Job:
    """What the docs say a job's row holds."""

    id: uuid.UUID
    max_attempts: int
    priority: int
    run_at: datetime
    key: str | None = None  # its idempotency key
    request: tuple[int, int | None, int] = (0, None, 0)  # max_attempts, priority, delay as asked
    status: str = "queued"
    attempt: int = 0
    total_attempts: int = 0
    token: uuid.UUID | None = None
    expires: datetime | None = None
    worker: str | None = None
    cancel_requested: bool = False  # cancel_requested_at set: until a requeue clears it
    step: str | None = None
    step_max_attempts: int | None = None  # continue_job's budget for the step, else max_attempts
    step_retry_delay: int | None = None  # continue_job's delay between the step's attempts
    tokens: list[uuid.UUID] = field(default_factory=list)  # every token a claim gave it
    attempt_rows: int = 0  # its rows in job_attempts: one a claim, none for a released claim
    dead_letters: int = 0  # open ones (not requeued)
    finished_at: datetime | None = None


def lost_reason(job: Job, token: uuid.UUID, now: datetime) -> str | None:
    """Why a write under ``token`` is refused (the order the docs give), or None."""
    if job.status != "running":
        return "not_running"
    if token != job.token:
        return "token_mismatch"
    assert job.expires is not None
    if job.expires <= now:
        return "lease_expired"
    return None


def budget(job: Job) -> int:
    return job.step_max_attempts or job.max_attempts


def retry_delay(job: Job, first: int | None, second: int | None) -> timedelta:
    """The delay before a retry: ``first`` when given, else ``second``, else the backoff
    after the attempt that just ended. fail_jobs passes (its own, the step's), the reaper
    (the step's, its own)."""
    for seconds in (first, second):
        if seconds is not None:
            return timedelta(seconds=seconds)
    return timedelta(seconds=min(BACKOFF_MAX, BACKOFF_BASE * 2 ** (job.attempt - 1)))


def some_job(data: st.DataObject, model: dict[uuid.UUID, Job]) -> Job:
    """A job for a write: three times in four a running one (when one runs), so that writes
    meet live leases as often as lost ones."""
    running = [j for j in model.values() if j.status == "running"]
    if running and data.draw(st.integers(0, 3), label="prefer running"):
        return data.draw(st.sampled_from(running), label="job")
    return data.draw(st.sampled_from(list(model.values())), label="job")


class LeaseMachine(RuleBasedStateMachine):
    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        super().__init__()
        self.conn = conn
        # the history tables carry no foreign keys (docs/lease-machine.md): each goes by name
        conn.execute(
            "TRUNCATE pgrun.jobs, pgrun.job_events, pgrun.job_dead_letters, pgrun.job_logs, "
            "pgrun.job_log_counts CASCADE"
        )
        conn.execute(
            "SELECT pgrun.upsert_job_definition(%s, backoff_base_seconds => %s, "
            "backoff_max_seconds => %s, backoff_jitter => 0)",
            (JOB_TYPE, BACKOFF_BASE, BACKOFF_MAX),
        )
        self.now = START
        self.model: dict[uuid.UUID, Job] = {}
        at(self.conn, self.now)

    # -- plumbing ------------------------------------------------------------------------

    def _token(self, job: Job, which: str) -> uuid.UUID:
        """The current token, one an earlier claim gave, or one no claim gave."""
        if which == "current" and job.token is not None:
            return job.token
        if which == "earlier" and len(job.tokens) > 1:
            return job.tokens[-2]
        if which == "earlier" and job.tokens and job.token is None:
            return job.tokens[-1]
        return uuid.uuid4()

    def _end_attempt(self, job: Job) -> None:
        job.token = None
        job.expires = None

    def _die(self, job: Job) -> None:
        self._end_attempt(job)
        job.status = "dead"
        job.finished_at = self.now
        job.dead_letters += 1

    def _cancel(self, job: Job) -> None:
        self._end_attempt(job)
        job.status = "cancelled"
        job.finished_at = self.now

    # -- rules ---------------------------------------------------------------------------

    # a few jobs at a time, so that each goes through many steps
    @precondition(lambda self: sum(j.status in ("queued", "running") for j in self.model.values()) < MAX_JOBS)
    @rule(
        max_attempts=st.integers(1, 3),
        priority=st.sampled_from([None, 50, 150]),
        delay=st.sampled_from([0, 0, 3, 30]),
        key=st.sampled_from([None, None, "k1", "k2"]),
        door=st.sampled_from(["enqueue_job", "enqueue_jobs"]),
    )
    def enqueue(
        self, max_attempts: int, priority: int | None, delay: int, key: str | None, door: str
    ) -> None:
        """A job, or with an idempotency key already held: the same request (through either
        door) returns its job, created = false, whatever its status; another is refused."""
        request = (max_attempts, priority, delay)
        if door == "enqueue_job":
            call = (
                "SELECT job_id, created FROM pgrun.enqueue_job(job_type => %s, max_attempts => %s, "
                "priority => %s, delay => make_interval(secs => %s), idempotency_key => %s)"
            )
            params: tuple[Any, ...] = (JOB_TYPE, max_attempts, priority, delay, key)
        else:
            element = {"job_type": JOB_TYPE, "max_attempts": max_attempts, "delay": delay}
            element |= {"priority": priority} if priority is not None else {}
            element |= {"idempotency_key": key} if key is not None else {}
            call = "SELECT job_id, created FROM pgrun.enqueue_jobs(%s)"
            params = (json.dumps([element]),)
        holder = next((j for j in self.model.values() if key is not None and j.key == key), None)
        if holder is not None and holder.request != request:
            assert refusal(self.conn, call, params) == ("RQ001", "job.enqueue_conflicting_retry")
            return
        row = self.conn.execute(call, params).fetchone()
        if holder is not None:
            assert row == (holder.id, False)
            return
        assert row is not None and row[1] is True
        job = Job(
            row[0],
            max_attempts,
            priority or 100,
            self.now + timedelta(seconds=delay),
            key=key,
            request=request,
        )
        self.model[job.id] = job

    # twice: a claim is drawn twice as often as any other step, so that leases are out often
    @rule(max_jobs=st.integers(1, 3), lease=st.sampled_from([5, 20]), worker=st.sampled_from(WORKERS))
    def claim(self, max_jobs: int, lease: int, worker: str) -> None:
        self._claim(max_jobs, lease, worker)

    @rule(max_jobs=st.integers(1, 3), lease=st.sampled_from([5, 20]), worker=st.sampled_from(WORKERS))
    def claim_again(self, max_jobs: int, lease: int, worker: str) -> None:
        self._claim(max_jobs, lease, worker)

    def _claim(self, max_jobs: int, lease: int, worker: str) -> list[Job]:
        rows = self.conn.execute(
            "SELECT job_id, attempt, max_attempts, step, lease_token, lease_expires_at "
            "FROM pgrun.claim_jobs(%s, %s, %s)",
            (worker, lease, max_jobs),
        ).fetchall()
        ready = sorted(
            (j for j in self.model.values() if j.status == "queued" and j.run_at <= self.now),
            key=lambda j: (j.priority, j.run_at, j.id),
        )
        assert [r[0] for r in rows] == [j.id for j in ready[:max_jobs]]
        for job_id, attempt, max_attempts, step, token, expires in rows:
            job = self.model[job_id]
            job.status = "running"
            job.attempt += 1
            job.total_attempts += 1
            job.token = token
            job.tokens.append(token)
            job.expires = self.now + timedelta(seconds=lease)
            job.worker = worker
            job.attempt_rows += 1
            assert (attempt, max_attempts, step, expires) == (job.attempt, budget(job), job.step, job.expires)
        return [self.model[row[0]] for row in rows]

    @rule(
        data=st.data(),
        write=st.sampled_from(WORKER_ENDINGS),
        lease=st.sampled_from([5, 20]),
        worker=st.sampled_from(WORKERS),
    )
    def work(self, data: st.DataObject, write: str, lease: int, worker: str) -> None:
        """A worker's cycle: claim one job, then end its claim under the live token (also: move
        it to a next step, claim again and fail), or vanish (its lease runs out and the reaper
        takes the job); the rules below also write to jobs picked at random, under any token."""
        for job in self._claim(1, lease, worker):
            assert job.token is not None
            if write == "complete":
                self._complete(job, job.token)
            elif write == "fail":
                self._fail(job, job.token, data.draw(st.booleans()), data.draw(DELAYS))
            elif write == "continue":
                self._continue(job, job.token, *data.draw(CONTINUES))
            elif write == "next_step_fails":
                # the next step due at once, claimed again and failed, to be retried: its own
                # budget and delay against the call's delay. Jobs due earlier come first in
                # claim order, so a few are claimed and this one is failed when among them.
                next_step, _, step_budget, step_delay = data.draw(CONTINUES)
                self._continue(job, job.token, next_step, 0, step_budget, step_delay)
                claimed = self._claim(MAX_JOBS, lease, worker)
                again = next((j for j in claimed if j is job), claimed[0] if claimed else None)
                if again is not None:
                    assert again.token is not None
                    self._fail(again, again.token, True, data.draw(DELAYS))
            elif write == "release":
                self._release(job, job.token)
            else:
                self._time_passes(lease)
                self._reap(data.draw(REAP_DELAYS))

    @precondition(lambda self: bool(self.model))
    @rule(
        data=st.data(),
        which=TOKENS,
        other_worker=st.booleans(),
        lease=st.sampled_from([5, 20]),
    )
    def heartbeat(self, data: st.DataObject, which: str, other_worker: bool, lease: int) -> None:
        job = some_job(data, self.model)
        token = self._token(job, which)
        worker = WORKERS[1] if job.worker == WORKERS[0] else WORKERS[0]
        if not other_worker and job.worker is not None:
            worker = job.worker
        row = self.conn.execute(
            "SELECT renewed, lease_expires_at, cancel_requested FROM pgrun.heartbeat_jobs(%s, %s, %s, %s)",
            (worker, lease, [job.id], [token]),
        ).fetchone()
        assert row is not None
        renewed = lost_reason(job, token, self.now) is None and worker == job.worker
        assert row[0] is renewed
        if renewed:
            job.expires = self.now + timedelta(seconds=lease)
            assert row[1] == job.expires
            assert row[2] is job.cancel_requested

    def _end_claim(self, job: Job, token: uuid.UUID, ended: str, sql: str) -> bool:
        """A write that ends a claim with outcome ``ended`` (``sql``: the batch form's call on
        one job, selecting outcome and lost_reason): refused for a lost lease, cancelled when a
        cancel was asked; whether it ended as ``ended``, for the caller to follow in the model."""
        row = self.conn.execute(sql, ([job.id], [token])).fetchone()
        reason = lost_reason(job, token, self.now)
        if reason is not None:
            assert row == ("lease_lost", reason)
        elif job.cancel_requested:
            assert row == ("cancelled", None)
            self._cancel(job)
        else:
            assert row == (ended, None)
        return reason is None and not job.cancel_requested

    @precondition(lambda self: bool(self.model))
    @rule(data=st.data(), which=TOKENS)
    def complete(self, data: st.DataObject, which: str) -> None:
        job = some_job(data, self.model)
        self._complete(job, self._token(job, which))

    def _complete(self, job: Job, token: uuid.UUID) -> None:
        sql = "SELECT outcome, lost_reason FROM pgrun.complete_jobs(%s, %s)"
        if self._end_claim(job, token, "succeeded", sql):
            job.status = "succeeded"
            job.finished_at = self.now
            job.expires = None  # a succeeded job keeps its token

    @precondition(lambda self: bool(self.model))
    @rule(
        data=st.data(),
        which=TOKENS,
        retryable=st.booleans(),
        delay=DELAYS,
    )
    def fail(self, data: st.DataObject, which: str, retryable: bool, delay: int | None) -> None:
        job = some_job(data, self.model)
        self._fail(job, self._token(job, which), retryable, delay)

    def _fail(self, job: Job, token: uuid.UUID, retryable: bool, delay: int | None) -> None:
        row = self.conn.execute(
            "SELECT outcome, run_at, lost_reason FROM pgrun.fail_jobs(%s, %s, retryable => %s, "
            "retry_delays => %s::interval[])",
            ([job.id], [token], [retryable], [None if delay is None else timedelta(seconds=delay)]),
        ).fetchone()
        reason = lost_reason(job, token, self.now)
        if reason is not None:
            assert row == ("lease_lost", None, reason)
        elif job.cancel_requested:
            assert row == ("cancelled", None, None)
            self._cancel(job)
        elif retryable and job.attempt < budget(job):
            self._end_attempt(job)
            job.status = "queued"
            job.run_at = self.now + retry_delay(job, delay, job.step_retry_delay)
            assert row == ("retry_scheduled", job.run_at, None)
        else:
            assert row == ("dead", None, None)
            self._die(job)

    @precondition(lambda self: bool(self.model))
    @rule(
        data=st.data(),
        which=TOKENS,
        arguments=CONTINUES,
    )
    def continue_(
        self, data: st.DataObject, which: str, arguments: tuple[str, int | None, int | None, int | None]
    ) -> None:
        job = some_job(data, self.model)
        self._continue(job, self._token(job, which), *arguments)

    def _continue(
        self,
        job: Job,
        token: uuid.UUID,
        next_step: str,
        delay: int | None,
        max_attempts: int | None,
        step_delay: int | None,
    ) -> None:
        seconds = [None if d is None else timedelta(seconds=d) for d in (delay, step_delay)]
        call = "SELECT outcome, run_at FROM pgrun.continue_job(%s, %s, %s, NULL, %s, %s, %s)"
        params = (job.id, token, next_step, seconds[0], max_attempts, seconds[1])
        if lost_reason(job, token, self.now) is not None:
            assert refusal(self.conn, call, params) == ("RQ004", "job.lease_lost")
            return
        row = self.conn.execute(call, params).fetchone()
        # the next step and its budget and delay are stored whether it runs or a cancel wins
        job.step, job.step_max_attempts, job.step_retry_delay = next_step, max_attempts, step_delay
        if job.cancel_requested:
            assert row == ("cancelled", None)
            self._cancel(job)
            return
        self._end_attempt(job)
        job.status = "queued"
        job.attempt = 0
        job.run_at = self.now + timedelta(seconds=delay or 0)
        assert row == ("continued", job.run_at)

    @precondition(lambda self: bool(self.model))
    @rule(data=st.data(), which=TOKENS)
    def release(self, data: st.DataObject, which: str) -> None:
        job = some_job(data, self.model)
        self._release(job, self._token(job, which))

    def _release(self, job: Job, token: uuid.UUID) -> None:
        sql = "SELECT outcome, lost_reason FROM pgrun.release_jobs(%s, %s)"
        if self._end_claim(job, token, "released", sql):
            self._end_attempt(job)
            job.status = "queued"
            job.attempt -= 1
            job.attempt_rows -= 1  # the handler never ran: no attempt row

    @precondition(lambda self: bool(self.model))
    @rule(data=st.data())
    def cancel(self, data: st.DataObject) -> None:
        job = some_job(data, self.model)
        if job.status in ("succeeded", "dead", "cancelled"):
            assert refusal(self.conn, "SELECT pgrun.cancel_job(%s)", (job.id,)) == (
                "RQ001",
                "job.not_cancellable",
            )
            return
        row = self.conn.execute("SELECT pgrun.cancel_job(%s)", (job.id,)).fetchone()
        if job.status == "queued":
            assert row == ("cancelled",)
            self._cancel(job)
        else:
            assert row == ("cancel_requested",)
        job.cancel_requested = True  # cancel_requested_at: when it was asked, whichever it was

    @precondition(lambda self: bool(self.model))
    @rule(data=st.data())
    def requeue(self, data: st.DataObject) -> None:
        job = some_job(data, self.model)
        if job.status not in ("dead", "cancelled"):
            assert refusal(self.conn, "SELECT pgrun.requeue_job(%s)", (job.id,)) == (
                "RQ001",
                "job.not_requeueable",
            )
            return
        row = self.conn.execute("SELECT pgrun.requeue_job(%s)", (job.id,)).fetchone()
        job.status = "queued"
        job.attempt = 0
        job.run_at = self.now
        job.finished_at = None
        job.cancel_requested = False
        job.dead_letters = 0
        assert row == (job.run_at,)

    @rule(older_than=st.sampled_from([0, 0, 30]))
    def purge(self, older_than: int) -> None:
        """Finished jobs that finished before now - older_than go, with their history (their
        keys are free again); queued and running ones stay, however old."""
        cutoff = self.now - timedelta(seconds=older_than)
        gone = [j.id for j in self.model.values() if j.finished_at is not None and j.finished_at < cutoff]
        purged = self.conn.execute(
            "SELECT pgrun.purge_finished_jobs(make_interval(secs => %s), 1000)", (older_than,)
        ).fetchone()
        assert purged == (len(gone),)
        for job_id in gone:
            del self.model[job_id]

    @rule(seconds=st.sampled_from([1, 4, 10, 25]))
    def time_passes(self, seconds: int) -> None:
        self._time_passes(seconds)

    def _time_passes(self, seconds: int) -> None:
        self.now += timedelta(seconds=seconds)
        at(self.conn, self.now)

    @rule(delay=REAP_DELAYS)
    def reap(self, delay: int | None) -> None:
        self._reap(delay)

    def _reap(self, delay: int | None) -> None:
        rows = self.conn.execute(
            "SELECT job_id, outcome, run_at FROM pgrun.reap_expired_leases(1000, %s)",
            (None if delay is None else timedelta(seconds=delay),),
        ).fetchall()
        expired = [j for j in self.model.values() if j.expires is not None and j.expires <= self.now]
        assert sorted(r[0] for r in rows) == sorted(j.id for j in expired)
        outcomes = {r[0]: (r[1], r[2]) for r in rows}
        for job in expired:
            if job.cancel_requested:
                assert outcomes[job.id] == ("cancelled", None)
                self._cancel(job)
            elif job.attempt < budget(job):
                self._end_attempt(job)
                job.status = "queued"
                job.run_at = self.now + retry_delay(job, job.step_retry_delay, delay)
                assert outcomes[job.id] == ("lease_expired", job.run_at)
            else:
                assert outcomes[job.id] == ("dead", None)
                self._die(job)

    # -- what the rows must say after every step ------------------------------------------

    @invariant()
    def rows_match_the_model(self) -> None:
        rows = self.conn.execute(
            """
            SELECT j.id, j.status, j.attempt, j.total_attempts, j.run_at, j.lease_token,
                   j.lease_expires_at, j.worker_id, j.cancel_requested_at IS NOT NULL,
                   j.step, j.step_max_attempts, extract(epoch FROM j.step_retry_delay)::int,
                   (SELECT count(*) FROM pgrun.job_attempts AS a WHERE a.job_id = j.id),
                   (SELECT count(*) FROM pgrun.job_dead_letters AS d
                    WHERE d.job_id = j.id AND d.requeued_at IS NULL),
                   j.finished_at
            FROM pgrun.jobs AS j
            """
        ).fetchall()
        # what purge left of a purged job's history: nothing
        for history in ("job_events", "job_dead_letters"):
            orphans = self.conn.execute(
                f"SELECT count(*) FROM pgrun.{history} AS h "
                "WHERE NOT EXISTS (SELECT FROM pgrun.jobs AS j WHERE j.id = h.job_id)"
            ).fetchone()
            assert orphans == (0,), history
        found = {row[0]: row[1:] for row in rows}
        assert set(found) == set(self.model)
        for job in self.model.values():
            expected = (
                job.status,
                job.attempt,
                job.total_attempts,
                job.run_at,
                job.token if job.status in ("running", "succeeded") else None,
                job.expires,
                job.worker,
                job.cancel_requested,
                job.step,
                job.step_max_attempts,
                job.step_retry_delay,
                job.attempt_rows,
                job.dead_letters,
                job.finished_at,
            )
            assert found[job.id] == expected, (job, found[job.id])


def test_the_lease_machine_follows_its_model(db: str) -> None:
    install_test_clock(db)
    with psycopg.connect(db, autocommit=True) as conn:
        run_model(lambda: LeaseMachine(conn), examples=300, steps=50)
