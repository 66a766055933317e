"""Job transitions that need several real sessions: claim races, caps, keyed enqueue races, NOTIFY,
and every transition at once from many sessions (workers, a reaper, a canceller) with the counts
checked against what each session was told.

Each test gets its own migrated database (the `db` fixture) and commits for real.
"""

from __future__ import annotations

import random
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from psycopg.types.json import Jsonb

from sessions import blocked_call


def connect(dsn: str) -> psycopg.Connection[tuple[Any, ...]]:
    return psycopg.connect(dsn, autocommit=True)


def bulk_enqueue(
    dsn: str, count: int, job_type: str = "bench.noop", queue: str | None = None, priority: int | None = None
) -> None:
    fields = ({"queue": queue} if queue else {}) | ({"priority": priority} if priority is not None else {})
    jobs = [{"job_type": job_type, "payload": {"n": i}} | fields for i in range(count)]
    with connect(dsn) as conn:
        for start in range(0, count, 5000):
            conn.execute("SELECT count(*) FROM pgrun.enqueue_jobs(%s)", (Jsonb(jobs[start : start + 5000]),))


def run_threads(count: int, target: Callable[[int], None]) -> None:
    errors: list[BaseException] = []

    def wrapped(i: int) -> None:
        try:
            target(i)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=wrapped, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not any(t.is_alive() for t in threads), "a claimer hung"
    if errors:
        raise errors[0]


def claim_and_complete_until_empty(
    dsn: str, worker: str, claimed: list[str], max_jobs: int, job_types: list[str] | None = None
) -> None:
    """Claim batches (of ``job_types``, NULL: any) and complete each until a claim comes back
    empty; every claimed id goes to ``claimed``."""
    with connect(dsn) as conn:
        while True:
            rows = conn.execute(
                "SELECT job_id, lease_token FROM pgrun.claim_jobs("
                "worker_id => %s, lease_seconds => 60, max_jobs => %s, job_types => %s)",
                (worker, max_jobs, job_types),
            ).fetchall()
            if not rows:
                return
            ids = [r[0] for r in rows]
            claimed.extend(str(x) for x in ids)
            conn.execute(
                "SELECT count(*) FROM pgrun.complete_jobs(job_ids => %s, lease_tokens => %s)",
                (ids, [r[1] for r in rows]),
            )


def test_eight_claimers_over_ten_thousand_jobs_claim_every_job_exactly_once(db: str) -> None:
    bulk_enqueue(db, 10_000)
    claimed: list[list[str]] = [[] for _ in range(8)]
    run_threads(8, lambda i: claim_and_complete_until_empty(db, f"worker-{i}", claimed[i], 50))

    everything = [job for part in claimed for job in part]
    duplicates = [job for job, n in Counter(everything).items() if n > 1]
    assert duplicates == []
    assert len(everything) == 10_000
    assert sum(1 for part in claimed if part) >= 2, "the claimers did not actually run side by side"
    with connect(db) as conn:
        row = conn.execute(
            "SELECT count(*) FILTER (WHERE status = 'succeeded'), count(*) FILTER (WHERE attempt <> 1), "
            "(SELECT count(*) FROM pgrun.job_attempts) FROM pgrun.jobs"
        ).fetchone()
    assert row == (10_000, 0, 10_000)


def test_a_per_type_concurrency_cap_is_never_exceeded_by_eight_claimers(db: str) -> None:
    cap = 3
    with connect(db) as conn:
        conn.execute(
            "SELECT pgrun.set_job_runtime_config(job_type => 'capped.work', max_concurrency => %s)", (cap,)
        )
    bulk_enqueue(db, 120, job_type="capped.work")
    bulk_enqueue(db, 120, job_type="free.work")
    stop = threading.Event()
    observed: list[int] = []

    def monitor() -> None:
        with connect(db) as conn:
            while not stop.is_set():
                row = conn.execute(
                    "SELECT count(*) FROM pgrun.jobs WHERE job_type = 'capped.work' AND status = 'running'"
                ).fetchone()
                observed.append(int(row[0]) if row else 0)

    watcher = threading.Thread(target=monitor)
    watcher.start()

    def claimer(i: int) -> None:
        with connect(db) as conn:
            idle = 0
            while idle < 20:
                rows = conn.execute(
                    "SELECT job_id, lease_token, job_type FROM pgrun.claim_jobs("
                    "worker_id => %s, lease_seconds => 60, max_jobs => 4)",
                    (f"worker-{i}",),
                ).fetchall()
                if not rows:
                    idle += 1
                    time.sleep(0.005)
                    continue
                idle = 0
                time.sleep(0.003)  # hold the jobs for a moment, like a handler would
                conn.execute(
                    "SELECT count(*) FROM pgrun.complete_jobs(job_ids => %s, lease_tokens => %s)",
                    ([r[0] for r in rows], [r[1] for r in rows]),
                )

    try:
        run_threads(8, claimer)
    finally:
        stop.set()
        watcher.join()

    assert observed, "the monitor never sampled"
    assert max(observed) <= cap
    assert max(observed) == cap, "the cap was never reached, so the test proved nothing"
    with connect(db) as conn:
        row = conn.execute("SELECT count(*) FROM pgrun.jobs WHERE status = 'succeeded'").fetchone()
    assert row == (240,)


def test_a_claim_waits_for_another_claim_of_a_capped_type_and_counts_its_jobs(db: str) -> None:
    """Each claim of a capped type locks the type's runtime row until it commits. A second
    claim waits for it (claims are short) instead of leaving the type out: that came back
    short with the type's jobs still ready, and a worker takes a short claim for a drained
    queue. Once the first commits, the second counts the first's jobs: the cap holds."""
    with connect(db) as conn:
        conn.execute("SELECT pgrun.set_job_runtime_config('capped.work', max_concurrency => 3)")
    bulk_enqueue(db, 5, job_type="capped.work", priority=1)
    bulk_enqueue(db, 2, job_type="free.work", priority=2)
    claim = "SELECT job_type FROM pgrun.claim_jobs(worker_id => %s, max_jobs => %s)"
    with psycopg.connect(db) as first, connect(db) as second, connect(db) as observer:
        assert first.execute(claim, ("w1", 2)).fetchall() == [("capped.work",)] * 2
        with blocked_call(observer, second, lambda: second.execute(claim, ("w2", 5)).fetchall()) as got:
            first.commit()
    assert Counter(row[0] for row in got.value or []) == {"capped.work": 1, "free.work": 2}


def test_a_claim_of_capped_types_only_locks_no_more_jobs_than_their_room(db: str) -> None:
    """A claimer whose job types are all capped can take no more than their rooms add up to,
    so its walk locks no more: it locked max_jobs of them and kept the rooms' worth, the rest
    held (and skipped by every other session's SKIP LOCKED) until its transaction ended,
    ~2 ms a claim of 500 for a room of 8. One capped type: exactly its room. Several: at most
    the rooms' sum beyond the jobs kept (each round of the walk may lock a type's surplus).
    No room at all: nothing. A claimer that names an uncapped type too is not bounded so."""
    with connect(db) as conn:
        conn.execute("SELECT pgrun.set_job_runtime_config('capped.a', max_concurrency => 3)")
        conn.execute("SELECT pgrun.set_job_runtime_config('capped.b', max_concurrency => 2)")
    bulk_enqueue(db, 10, job_type="capped.a", priority=1)
    bulk_enqueue(db, 10, job_type="capped.b", priority=2)
    claim = "SELECT job_type FROM pgrun.claim_jobs(worker_id => 'w', max_jobs => 10, job_types => %s)"
    free = (  # the queued jobs another session may lock now
        "SELECT count(*) FROM (SELECT 1 FROM pgrun.jobs WHERE status = 'queued' FOR UPDATE SKIP LOCKED) AS q"
    )
    with psycopg.connect(db) as claimer, connect(db) as observer:
        assert claimer.execute(claim, (["capped.a"],)).fetchall() == [("capped.a",)] * 3
        assert observer.execute(free).fetchone() == (17,)  # 10 before: the other seven of capped.a locked
        claimer.rollback()
        rows = claimer.execute(claim, (["capped.a", "capped.b"],)).fetchall()
        assert Counter(row[0] for row in rows) == {"capped.a": 3, "capped.b": 2}
        row = observer.execute(free).fetchone()
        assert row is not None and row[0] >= 15 - 5, row  # 3 before
        claimer.rollback()
        observer.execute("SELECT count(*) FROM pgrun.claim_jobs('other', max_jobs => 5)")  # the caps' worth
        assert claimer.execute(claim, (["capped.a", "capped.b"],)).fetchall() == []
        assert observer.execute(free).fetchone() == (15,)
        claimer.rollback()


def test_a_claim_leaves_out_a_capped_type_whose_row_stays_locked_past_its_wait(db: str) -> None:
    """A capped type's runtime row held longer than a claim takes (here by an open transaction
    of set_job_runtime_config) is waited for 0.2 s at most (the caller's lock_timeout when
    shorter): then the claim leaves the type out, as before, and takes the rest. The
    caller's own lock_timeout is left as it was."""
    with connect(db) as conn:
        conn.execute("SELECT pgrun.set_job_runtime_config('capped.work', max_concurrency => 3)")
    bulk_enqueue(db, 2, job_type="capped.work", priority=1)
    bulk_enqueue(db, 2, job_type="free.work", priority=2)
    with psycopg.connect(db) as admin, connect(db) as claimer:
        admin.execute("SELECT pgrun.set_job_runtime_config('capped.work', max_concurrency => 4)")
        claimer.execute("SET lock_timeout = '7s'")
        started = time.monotonic()
        rows = claimer.execute(
            "SELECT job_type FROM pgrun.claim_jobs(worker_id => 'w', max_jobs => 5)"
        ).fetchall()
        took = time.monotonic() - started
        assert rows == [("free.work",)] * 2
        assert 0.2 <= took < 3, took
        assert claimer.execute("SHOW lock_timeout").fetchone() == ("7s",)
        claimer.execute("SET lock_timeout = '10ms'")  # a shorter wait of the caller's own is kept
        started = time.monotonic()
        rows = claimer.execute(
            "SELECT job_type FROM pgrun.claim_jobs(worker_id => 'w', max_jobs => 5)"
        ).fetchall()
        took = time.monotonic() - started
        assert rows == [] and 0.01 <= took < 0.15, (rows, took)
        admin.rollback()


def test_a_claim_of_a_capped_type_refuses_a_snapshot_older_than_the_claims_it_counts(db: str) -> None:
    """A claim under REPEATABLE READ counted a capped type's running jobs in its transaction's
    snapshot: the claims committed since were missed and the cap exceeded (cap 3: 3 claimed
    from one queue, then 3 more from another by a transaction whose snapshot was older). It
    is refused now (job.claim_unsupported_isolation) and claims nothing."""
    with connect(db) as conn:
        conn.execute("SELECT pgrun.set_job_runtime_config('capped.work', max_concurrency => 3)")
    bulk_enqueue(db, 5, job_type="capped.work", queue="q1")
    bulk_enqueue(db, 5, job_type="capped.work", queue="q2")
    claim = "SELECT job_id FROM pgrun.claim_jobs(worker_id => %s, max_jobs => 3, queues => %s)"
    with connect(db) as first, psycopg.connect(db) as older:
        older.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        older.execute("SELECT 1")  # its snapshot, before the first claim commits
        assert len(first.execute(claim, ("w1", ["q1"])).fetchall()) == 3
        with pytest.raises(psycopg.Error) as refused:
            older.execute(claim, ("w2", ["q2"]))
        assert (refused.value.sqlstate, refused.value.diag.message_primary) == (
            "RQ006",
            "job.claim_unsupported_isolation",
        )
        older.rollback()
        row = first.execute("SELECT count(*) FROM pgrun.jobs WHERE status = 'running'").fetchone()
    assert row == (3,)


def test_log_lines_written_from_many_sessions_at_once_keep_each_attempts_count(db: str) -> None:
    """Six sessions write log lines for the same four running jobs at once: four through
    append_job_logs in batches naming the jobs in different orders (one batch reversed), two
    through append_job_log one line at a time. No call deadlocks or fails, every line is
    logged or counted, and each attempt keeps exactly its first 1000 lines: the count row's
    stored equals the job_logs rows, stored + dropped the lines sent."""
    bulk_enqueue(db, 4, job_type="logs.many")
    with connect(db) as conn:
        jobs = conn.execute("SELECT job_id, lease_token FROM pgrun.claim_jobs('w', 600, 4)").fetchall()
    assert len(jobs) == 4
    sent: Counter[Any] = Counter()
    lock = threading.Lock()

    def batches(i: int) -> None:
        with connect(db) as conn:
            for round_ in range(12):
                order = jobs[::-1] if (i + round_) % 2 else jobs
                lines = [job for job in order for _ in range(25)]
                rows = conn.execute(
                    "SELECT job_id, outcome FROM pgrun.append_job_logs(%s, %s, %s)",
                    ([j[0] for j in lines], [j[1] for j in lines], [f"s{i} r{round_}" for _ in lines]),
                ).fetchall()
                assert {outcome for _, outcome in rows} <= {"logged", "counted"}
                with lock:
                    sent.update(job_id for job_id, _ in rows)

    def singles(i: int) -> None:
        with connect(db) as conn:
            for n in range(100):
                job_id, token = jobs[n % 4]
                conn.execute("SELECT pgrun.append_job_log(%s, %s, %s)", (job_id, token, f"single {i} {n}"))
                with lock:
                    sent[job_id] += 1

    run_threads(6, lambda i: batches(i) if i < 4 else singles(i))
    with connect(db) as conn:
        rows = conn.execute(
            "SELECT c.job_id, c.stored, c.dropped, (SELECT count(*) FROM pgrun.job_logs AS l "
            "WHERE l.job_id = c.job_id AND l.attempt = c.attempt) FROM pgrun.job_log_counts AS c"
        ).fetchall()
    assert len(rows) == 4
    for job_id, stored, dropped, kept in rows:
        assert (stored, kept, stored + dropped) == (1000, 1000, sent[job_id]), job_id
    assert all(n == 4 * 12 * 25 + 50 for n in sent.values())


def test_two_sessions_racing_the_same_keyed_enqueue_get_one_job(db: str) -> None:
    call = (
        "SELECT job_id, created FROM pgrun.enqueue_job(job_type => 'mail.send', "
        "payload => '{\"to\": \"a@example.com\"}', idempotency_key => 'k-1')"
    )
    with connect(db) as first, connect(db) as second, connect(db) as observer:
        first.execute("BEGIN")
        first_row = first.execute(call).fetchone()
        with blocked_call(observer, second, lambda: second.execute(call).fetchone()) as raced:
            first.execute("COMMIT")

        assert first_row is not None and first_row[1] is True
        assert raced.value == (first_row[0], False)
        row = observer.execute("SELECT count(*) FROM pgrun.jobs WHERE idempotency_key = 'k-1'").fetchone()
        assert row == (1,)


def test_a_racing_keyed_enqueue_with_a_different_request_conflicts(db: str) -> None:
    with connect(db) as first, connect(db) as second:
        first.execute("BEGIN")
        first.execute(
            "SELECT * FROM pgrun.enqueue_job(job_type => 'mail.send', payload => '{\"to\": 1}', "
            "idempotency_key => 'k')"
        )
        errors: list[psycopg.Error] = []

        def racer() -> None:
            try:
                second.execute(
                    "SELECT * FROM pgrun.enqueue_job(job_type => 'mail.send', payload => '{\"to\": 2}', "
                    "idempotency_key => 'k')"
                )
            except psycopg.Error as exc:
                errors.append(exc)

        thread = threading.Thread(target=racer)
        thread.start()
        time.sleep(0.2)
        first.execute("COMMIT")
        thread.join(10)
        assert len(errors) == 1
        assert errors[0].sqlstate == "RQ001"
        assert errors[0].diag.message_primary == "job.enqueue_conflicting_retry"


def test_bulk_enqueue_notifies_once_per_queue_per_statement(db: str) -> None:
    with connect(db) as listener, connect(db) as producer:
        listener.execute("LISTEN pgrun_jobs")
        jobs = [{"job_type": "a.job", "queue": "alpha"} for _ in range(50)]
        jobs += [{"job_type": "b.job", "queue": "beta"} for _ in range(50)]
        producer.execute("SELECT count(*) FROM pgrun.enqueue_jobs(%s)", (Jsonb(jobs),))
        producer.execute("SELECT * FROM pgrun.enqueue_job(job_type => 'c.job', queue => 'alpha')")
        due = producer.execute(
            "SELECT run_at FROM pgrun.enqueue_job(job_type => 'd.job', queue => 'gamma', delay => '60 s')"
        ).fetchone()
        payloads = [n.payload for n in listener.notifies(timeout=1.0)]
    assert due is not None
    # a single enqueue's notification is sent directly (no grouping): a delayed job's carries
    # its due time in Unix milliseconds, rounded up
    due_us = (due[0] - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1)
    due_ms = -(-due_us // 1000)
    assert sorted(payloads) == ["alpha", "alpha", "beta", f"gamma {due_ms}"]


def test_jobs_put_back_in_the_queue_notify_like_new_ones(db: str) -> None:
    """Claims handed back (release_jobs) and a finished job requeued reach a LISTENing worker
    as an enqueue's do, once committed: one notification per queue, so idle workers need not
    wait for their poll."""
    with connect(db) as listener, connect(db) as worker:
        for queue in ("alpha", "alpha", "beta"):
            worker.execute("SELECT * FROM pgrun.enqueue_job(job_type => 'put.back', queue => %s)", (queue,))
        listener.execute("LISTEN pgrun_jobs")
        claimed = worker.execute("SELECT job_id, lease_token FROM pgrun.claim_jobs('w', 60, 3)").fetchall()
        ids, tokens = [c[0] for c in claimed], [c[1] for c in claimed]
        worker.execute("SELECT count(*) FROM pgrun.release_jobs(%s, %s)", (ids, tokens))
        released = [n.payload for n in listener.notifies(timeout=1.0)]

        row = worker.execute("SELECT job_id, lease_token FROM pgrun.claim_jobs('w', 60, 1)").fetchone()
        assert row is not None
        fail = "SELECT count(*) FROM pgrun.fail_jobs(%s, %s, retryable => '{false}')"
        worker.execute(fail, ([row[0]], [row[1]]))
        worker.execute("SELECT pgrun.requeue_job(%s)", (row[0],))
        requeued = [n.payload for n in listener.notifies(timeout=1.0)]
    assert sorted(released) == ["alpha", "beta"]
    assert requeued == ["alpha"]


def test_retries_and_next_steps_notify_like_new_jobs(db: str) -> None:
    """A retry (fail_jobs, the reaper) and a job's next step (continue_job) queue a job again:
    they reach a LISTENing worker once committed, as an enqueue's do, so an idle worker other
    than the one that wrote them starts them without waiting for its poll."""
    with connect(db) as listener, connect(db) as worker:
        for _ in range(3):
            worker.execute("SELECT * FROM pgrun.enqueue_job(job_type => 'again', queue => 'gamma')")
        listener.execute("LISTEN pgrun_jobs")
        claim = "SELECT job_id, lease_token FROM pgrun.claim_jobs('w', %s, 1)"
        failed, continued = worker.execute(claim, (60,)).fetchone(), worker.execute(claim, (60,)).fetchone()
        expiring = worker.execute(claim, (1,)).fetchone()
        assert failed and continued and expiring
        worker.execute(
            "SELECT count(*) FROM pgrun.fail_jobs(%s, %s, retry_delays => '{0 s}')",
            ([failed[0]], [failed[1]]),
        )
        worker.execute("SELECT * FROM pgrun.continue_job(%s, %s, 'next')", continued)
        time.sleep(1.1)  # the third lease expires
        reaped = worker.execute(
            "SELECT outcome FROM pgrun.reap_expired_leases(retry_delay => '0 s')"
        ).fetchall()
        assert reaped == [("lease_expired",)]
        payloads = [n.payload for n in listener.notifies(timeout=1.0)]
    assert payloads == ["gamma"] * 3, "one per call: the retry, the next step, the reaped job"


@pytest.mark.parametrize(
    ("racer", "expected"),
    [
        (
            "SELECT count(*) FROM pgrun.heartbeat_jobs("
            "'w', 60, ARRAY[%(job)s]::uuid[], ARRAY[%(token)s]::uuid[])",
            "succeeded",
        ),
        ("SELECT pgrun.report_progress(%(job)s, %(token)s, '{\"pct\": 50}')", "succeeded"),
        ("SELECT pgrun.cancel_job(%(job)s, reason => 'operator')", "cancelled"),
    ],
    ids=["heartbeat", "progress", "cancel"],
)
def test_a_completion_that_waits_for_another_write_to_its_job_sees_that_write(
    db: str, racer: str, expected: str
) -> None:
    """The worker's heartbeat, a progress report or an operator's cancel may hold the job's row
    when the completion arrives: the completion waits, then completes the row as it is now
    (the heartbeat made a new row version; the cancel request decides the outcome), and never
    reports a lease it still owns as lost."""
    bulk_enqueue(db, 1, job_type="race.one")
    with connect(db) as setup, connect(db) as other, connect(db) as completer:
        lease = setup.execute(
            "SELECT job_id, lease_token FROM pgrun.claim_jobs(worker_id => 'w', lease_seconds => 60)"
        ).fetchone()
        assert lease is not None
        other.execute("BEGIN")
        other.execute(racer, {"job": lease[0], "token": lease[1]})

        def complete() -> list[tuple[Any, ...]]:
            return completer.execute(
                "SELECT outcome, lost_reason FROM pgrun.complete_jobs(ARRAY[%s]::uuid[], ARRAY[%s]::uuid[])",
                lease,
            ).fetchall()

        with blocked_call(setup, completer, complete) as completion:
            other.execute("COMMIT")

        assert completion.value == [(expected, None)]
        status = setup.execute("SELECT status FROM pgrun.jobs WHERE id = %s", (lease[0],)).fetchone()
        assert status == (expected,)


@pytest.mark.parametrize(
    ("write", "outcome"),
    [
        ("SELECT job_id, outcome FROM pgrun.complete_jobs(%s::uuid[], %s::uuid[])", "succeeded"),
        (
            "SELECT job_id, outcome FROM pgrun.continue_jobs(%s::uuid[], %s::uuid[], ARRAY['next', 'next'])",
            "continued",
        ),
    ],
    ids=["complete_jobs", "continue_jobs"],
)
def test_a_completion_locks_its_batch_in_id_order_whatever_the_input_order(
    db: str, write: str, outcome: str
) -> None:
    """complete_jobs is one UPDATE, continue_jobs a lock of its batch then one; their plans (the
    input sorted by id, a nested loop over the primary key) must lock the batch in id order, as
    every multi-row write does, or two writers could deadlock. Given the jobs in reverse order
    while another session holds the lower id, the write waits for that one without holding the
    higher id."""
    bulk_enqueue(db, 2, job_type="race.order")
    with (
        connect(db) as setup,
        connect(db) as holder,
        connect(db) as completer,
        connect(db) as prober,
    ):
        leases = setup.execute(
            "SELECT job_id, lease_token"
            " FROM pgrun.claim_jobs(worker_id => 'w', lease_seconds => 60, max_jobs => 2) ORDER BY job_id"
        ).fetchall()
        (low, low_token), (high, high_token) = leases
        holder.execute("BEGIN")
        holder.execute(
            "SELECT count(*) FROM pgrun.heartbeat_jobs('w', 60, ARRAY[%s]::uuid[], ARRAY[%s]::uuid[])",
            (low, low_token),
        )

        def complete() -> list[tuple[Any, ...]]:
            return completer.execute(write, ([high, low], [high_token, low_token])).fetchall()

        with blocked_call(setup, completer, complete) as completion:
            prober.execute("BEGIN")
            # LockNotAvailable here means the waiting completion already holds the higher id.
            try:
                prober.execute("SELECT 1 FROM pgrun.jobs WHERE id = %s FOR UPDATE NOWAIT", (high,))
            except psycopg.errors.LockNotAvailable:
                pytest.fail("the write locked the higher id before the lower one")
            finally:
                prober.execute("ROLLBACK")
                holder.execute("COMMIT")  # lets the write finish, also when the test fails

    assert completion.value == [(high, outcome), (low, outcome)]


SOAK_SECONDS = 3.0
SOAK_JOBS = 400


def soak_worker(
    dsn: str, name: str, seed: int, deadline: float, log: list[tuple[str, Any, Any, Any]]
) -> None:
    """A worker that claims up to five jobs at a time on one-second leases and ends each claim
    one way at random (complete, fail to retry, fail for good, release, continue to a next step,
    heartbeat then complete, complete under a token the job had before, or vanish: no write, the
    lease runs out). Every
    claim and every write's answer goes to ``log`` as (what, job_id, token, outcome)."""
    rng = random.Random(seed)
    with connect(dsn) as conn:
        while time.monotonic() < deadline:
            rows = conn.execute(
                "SELECT job_id, lease_token FROM pgrun.claim_jobs(%s, 1, 5, NULL, ARRAY['soak.job'])", (name,)
            ).fetchall()
            for job_id, token in rows:
                log.append(("claim", job_id, token, None))
                how = rng.choices(
                    ["complete", "retry", "die", "release", "heartbeat", "vanish", "stale", "continue"],
                    [47, 15, 5, 10, 8, 3, 4, 8],
                )[0]
                if how == "vanish":
                    continue
                time.sleep(rng.uniform(0, 0.008))  # the handler: cancels and other writes meet it
                if how == "stale":  # a write under a token this job had before, if any
                    earlier = [t for what, j, t, _ in log if what == "claim" and j == job_id and t != token]
                    token = earlier[-1] if earlier else uuid.uuid4()
                    how = "complete"
                if how == "heartbeat":
                    renewed = conn.execute(
                        "SELECT renewed FROM pgrun.heartbeat_jobs(%s, 1, %s, %s)", (name, [job_id], [token])
                    ).fetchone()
                    log.append(("heartbeat", job_id, token, renewed[0] if renewed else None))
                    how = "complete"
                if how == "complete":
                    sql = "SELECT outcome FROM pgrun.complete_jobs(%s, %s)"
                elif how == "release":
                    sql = "SELECT outcome FROM pgrun.release_jobs(%s, %s)"
                elif how == "continue":  # queued again at its next step: claimed again later
                    sql = "SELECT outcome FROM pgrun.continue_jobs(%s, %s, ARRAY['next'])"
                else:
                    retryable = "true" if how == "retry" else "false"
                    sql = (
                        "SELECT outcome FROM pgrun.fail_jobs(%s, %s, "
                        f"retryable => ARRAY[{retryable}], retry_delays => ARRAY['0 s'::interval])"
                    )
                row = conn.execute(sql, ([job_id], [token])).fetchone()
                log.append((how, job_id, token, row[0] if row else None))
            if not rows:
                time.sleep(0.01)


def test_mixed_transitions_from_many_sessions_keep_every_count(db: str) -> None:
    """Four workers (random outcomes, one-second leases), a reaper and a canceller on 400 jobs
    for a few seconds. Afterwards every count agrees with what the sessions were told: a job
    succeeded at most once, and then under the token its completion was accepted with; its
    total_attempts is the number of claims that returned it; job_attempts has one row per
    claim that was not released, with distinct numbers; no lease token was handed out twice;
    a dead job has one open dead letter; nothing still runs on an expired lease."""
    with connect(db) as conn:
        conn.execute(
            "SELECT count(*) FROM pgrun.enqueue_jobs(%s)",
            (Jsonb([{"job_type": "soak.job", "max_attempts": 3} for _ in range(SOAK_JOBS)]),),
        )
    logs: list[list[tuple[str, Any, Any, Any]]] = [[] for _ in range(4)]
    deadline = time.monotonic() + SOAK_SECONDS

    def side(i: int) -> None:
        if i < 4:
            soak_worker(db, f"soak-{i}", i, deadline, logs[i])
            return
        rng = random.Random(i)
        with connect(db) as conn:
            while time.monotonic() < deadline:
                if i == 4:
                    conn.execute("SELECT count(*) FROM pgrun.reap_expired_leases(1000, '0 s')")
                    time.sleep(0.05)
                    continue
                # a running job half of the time (a cancel request its worker meets), else any
                job = conn.execute(
                    "SELECT id FROM pgrun.jobs WHERE job_type = 'soak.job' AND (%s OR status = 'running') "
                    "ORDER BY random() LIMIT 1",
                    (rng.random() < 0.5,),
                ).fetchone()
                if job is None:
                    continue
                try:
                    conn.execute("SELECT pgrun.cancel_job(%s)", (job[0],))
                except psycopg.Error as exc:  # a finished job: job.not_cancellable, nothing else
                    assert exc.sqlstate == "RQ001", exc
                time.sleep(0.01)

    run_threads(6, side)
    time.sleep(1.1)  # every lease handed out has expired: the reaper ends what is left
    with connect(db) as conn:
        conn.execute("SELECT count(*) FROM pgrun.reap_expired_leases(1000, '0 s')")
        jobs = {
            r[0]: r[1:]
            for r in conn.execute(
                "SELECT id, status, total_attempts, lease_token, lease_expires_at FROM pgrun.jobs"
            ).fetchall()
        }
        attempts = conn.execute("SELECT job_id, attempt FROM pgrun.job_attempts").fetchall()
        dead_letters = Counter(
            r[0] for r in conn.execute("SELECT job_id FROM pgrun.job_dead_letters WHERE requeued_at IS NULL")
        )
    log = [entry for worker_log in logs for entry in worker_log]
    claims = Counter(job_id for what, job_id, _, _ in log if what == "claim")
    released = Counter(
        job_id for what, job_id, _, outcome in log if what == "release" and outcome == "released"
    )
    succeeded = [(job_id, token) for _, job_id, token, outcome in log if outcome == "succeeded"]
    tokens = [token for what, _, token, _ in log if what == "claim"]
    assert len(tokens) == len(set(tokens)), "a lease token was handed out twice"
    assert sum(claims.values()) > SOAK_JOBS / 2, "the workers did too little for the test to mean anything"
    assert len(Counter(job_id for job_id, _ in succeeded)) == len(succeeded), "a job succeeded twice"
    for job_id, token in succeeded:
        assert jobs[job_id][0] == "succeeded" and jobs[job_id][2] == token
    assert sum(status == "succeeded" for status, *_ in jobs.values()) == len(succeeded)
    numbers = Counter(attempts)
    assert max(numbers.values()) == 1, "two attempt rows with one number"
    for job_id, (status, total_attempts, _, expires) in jobs.items():
        assert total_attempts == claims[job_id], job_id
        assert sum(1 for j, _ in attempts if j == job_id) == claims[job_id] - released[job_id], job_id
        assert dead_letters[job_id] == (1 if status == "dead" else 0), job_id
        assert status != "running" and expires is None, job_id
