"""The worker loop in-process against a real server: outcomes land as the SQL says.

Each test builds an App, enqueues with the Client, runs worker + reaper (pgrun.runner) until
a condition holds, and reads the jobs back with get_job. Intervals are short (fast_config).
"""

from __future__ import annotations

import asyncio
import logging
import statistics
import threading
import time
from typing import Any

import psycopg
import pytest

from pgrun.app import App, Continue, Fail, JobContext, Retry, SyncJobContext
from pgrun.client import Client
from pgrun.workflow import Workflow
from worker_support import fast_config, finished, run_one_job, run_worker_until, statuses

# -- one outcome per test: what a handler returns or raises lands as the SQL says -----------
# Each test enqueues one job before the worker starts (run_one_job), so the job carries the
# options given here (max_attempts=1 where a retryable outcome must end the job at once).


def test_an_async_handler_stores_its_result_progress_and_log_lines(db: str) -> None:
    app = App()

    @app.job("t.ok")
    async def ok(ctx: JobContext) -> Any:
        await ctx.progress({"half": True})
        await ctx.log("working", level="info", n=ctx.payload["n"])
        return {"double": ctx.payload["n"] * 2}

    job = run_one_job(app, db, "t.ok", {"n": 21})
    assert job["status"] == "succeeded" and job["result"] == {"double": 42}
    assert job["progress"] == {"half": True}
    assert [a["log_lines"] for a in job["attempts"]] == [1]


def test_a_sync_handler_runs_on_a_job_thread_and_reports_through_the_loop(db: str) -> None:
    app = App()

    @app.job("t.sync")
    def sync(ctx: SyncJobContext) -> Any:
        ctx.progress({"in": "thread"})
        ctx.log("from a thread")
        return threading.current_thread().name.startswith("pgrun-job-")

    job = run_one_job(app, db, "t.sync", {"n": 21})
    assert job["status"] == "succeeded" and job["result"] is True, "the handler ran on a pgrun-job- thread"
    assert job["progress"] == {"in": "thread"}
    assert [a["log_lines"] for a in job["attempts"]] == [1]


def test_fail_makes_the_job_dead_at_once_without_a_retry(db: str) -> None:
    app = App()

    @app.job("t.fail")
    async def fail(ctx: JobContext) -> Any:
        raise Fail("bad input")

    # the default attempt budget: only Fail itself keeps the job from a second attempt
    job = run_one_job(app, db, "t.fail")
    assert job["max_attempts"] > 1
    assert job["status"] == "dead" and job["error_code"] == "failed"
    assert job["total_attempts"] == 1, "Fail() is not retried"


def test_retry_runs_the_job_again_until_it_succeeds(db: str) -> None:
    app = App()

    @app.job("t.retry")
    async def retry(ctx: JobContext) -> Any:
        if ctx.attempt < 3:
            raise Retry(delay=0, message=f"not yet ({ctx.attempt})")
        return "third time"

    job = run_one_job(app, db, "t.retry", {"n": 21})
    assert job["status"] == "succeeded" and job["total_attempts"] == 3
    assert [a["outcome"] for a in job["attempts"]] == ["failed", "failed", "succeeded"]
    assert job["result"] == "third time"


def test_an_exception_in_the_handler_fails_the_job_as_crashed(db: str) -> None:
    app = App()

    @app.job("t.crash")
    def crash(ctx: SyncJobContext) -> Any:
        raise ValueError("boom")

    job = run_one_job(app, db, "t.crash", max_attempts=1)
    assert job["status"] == "dead" and job["error_code"] == "crashed"
    assert job["error_message"] == "ValueError: boom"  # the traceback is in the log only


def test_continue_runs_the_next_steps_within_one_attempt(db: str) -> None:
    app = App()

    @app.job("t.steps")
    async def steps(ctx: JobContext) -> Any:
        seen = [*(ctx.state or {}).get("seen", []), ctx.step or "start"]
        if len(seen) < 3:
            return Continue(f"step{len(seen)}", {"seen": seen})
        return {"seen": seen, "attempt": ctx.attempt}

    job = run_one_job(app, db, "t.steps", {"n": 21})
    assert job["status"] == "succeeded"
    assert job["result"] == {"seen": ["start", "step1", "step2"], "attempt": 1}


def test_a_result_that_is_not_json_fails_the_job_as_result_invalid(db: str) -> None:
    app = App()

    @app.job("t.not_json")
    async def not_json(ctx: JobContext) -> Any:
        return object()

    # the default attempt budget: an unstorable result is not retried
    job = run_one_job(app, db, "t.not_json")
    assert job["max_attempts"] > 1
    assert job["status"] == "dead" and job["error_code"] == "result_invalid"
    assert job["total_attempts"] == 1


def test_a_cancel_request_reaches_the_handler(db: str) -> None:
    app = App()
    started = threading.Event()

    @app.job("t.wait")
    async def wait(ctx: JobContext) -> Any:
        started.set()
        assert await ctx.wait_cancelled(timeout=20)
        return "stopped"

    with Client.connect(db) as client:
        job_id = client.enqueue_job("t.wait").job_id

        def cancel_once_running(c: Client) -> bool:
            if started.is_set() and c.get_job(job_id)["cancel_requested_at"] is None:
                assert c.cancel_job(job_id, reason="test") == "cancel_requested"
            return bool(c.get_job(job_id)["status"] == "cancelled")

        # lease 3 s: the heartbeat that carries the request comes every second
        run_worker_until(app, fast_config(db, lease_ttl_seconds=3), cancel_once_running)
        job = client.get_job(job_id)
    assert job["status"] == "cancelled" and job["result"] is None


def test_a_handler_over_its_timeout_fails_with_timeout(db: str) -> None:
    app = App()

    @app.job("t.slow", timeout=1, max_attempts=1)
    async def slow(ctx: JobContext) -> Any:
        await asyncio.sleep(30)

    @app.job("t.slow_sync", timeout=1, max_attempts=1)
    def slow_sync(ctx: SyncJobContext) -> Any:
        ctx.cancelled.wait(30)  # a sync handler is told to stop through its event

    with Client.connect(db) as client:
        ids = [
            client.enqueue_job(t, timeout_seconds=1, max_attempts=1).job_id for t in ("t.slow", "t.slow_sync")
        ]
        took = run_worker_until(app, fast_config(db), lambda c: finished(c, ids))
        jobs = [client.get_job(job_id) for job_id in ids]
    assert took < 10
    for job in jobs:
        assert (job["status"], job["error_code"]) == ("dead", "timeout")
        assert job["attempts"][0]["outcome"] == "timed_out"


def test_a_blocking_sync_handler_does_not_stall_heartbeats(db: str) -> None:
    app = App()

    @app.job("t.block")
    def block(ctx: SyncJobContext) -> Any:
        time.sleep(4)  # twice the lease: only heartbeats keep the job ours
        return "held"

    with Client.connect(db) as client:
        job_id = client.enqueue_job("t.block").job_id
        # lease 2 s, heartbeat every 0.67 s, reaper every second: a stalled heartbeat loses the job
        run_worker_until(app, fast_config(db, lease_ttl_seconds=2), lambda c: finished(c, [job_id]))
        job = client.get_job(job_id)
    assert job["status"] == "succeeded" and job["total_attempts"] == 1


def test_claims_only_as_many_jobs_as_it_has_free_slots(db: str) -> None:
    app = App()
    running, peak = 0, 0

    @app.job("t.busy")
    async def busy(ctx: JobContext) -> Any:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        # Hold the slot until all three have been busy at once (bounded): the claim that fills
        # the third slot may come late on a loaded machine, and a fixed sleep alone would let
        # the first two finish before it, so peak == 3 would depend on timing.
        deadline = time.monotonic() + 10
        while peak < 3 and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.2)
        running -= 1

    with Client.connect(db) as client:
        ids = [row.job_id for row in client.enqueue_jobs([{"job_type": "t.busy"}] * 12)]
        peak_in_db = 0

        def check(c: Client) -> bool:
            nonlocal peak_in_db
            peak_in_db = max(peak_in_db, sum(d.running for d in c.queue_depth()))
            return finished(c, ids)

        # prefetch 0: no jobs claimed ahead (tests_py/test_worker_prefetch.py covers those)
        config = fast_config(db, max_global_concurrency=3, claim_batch_size=2, prefetch=0)
        run_worker_until(app, config, check)
        assert statuses(client, ids) == ["succeeded"] * 12
    assert peak == 3
    # A slot frees when its handler returns; its outcome may wait a few ms for the batched
    # write, so while the slot already runs its next job the database still shows the old one
    # running: at most one buffered outcome per slot on top of the slots themselves. (The three
    # handlers here sleep the same 0.2 s, so all three slots often free at the same instant.)
    assert peak_in_db <= 3 + 3


def test_notify_wakes_an_idle_worker_at_once(db: str) -> None:
    """Enqueue → handler start, with a 5 s poll interval: only NOTIFY can make it fast."""
    app = App()
    started: dict[str, float] = {}

    @app.job("t.ping")
    async def ping(ctx: JobContext) -> Any:
        started[ctx.payload["i"]] = time.perf_counter()

    latencies: list[float] = []
    enqueued: dict[str, float] = {}
    with psycopg.connect(db, autocommit=True) as conn:

        def enqueue_one_at_a_time(c: Client) -> bool:
            i = str(len(enqueued))
            if i != "0" and str(int(i) - 1) not in started:
                return False
            if len(enqueued) == 30:
                return True
            time.sleep(0.02)  # the worker is idle again, waiting on the listener
            enqueued[i] = time.perf_counter()
            conn.execute("SELECT pgrun.enqueue_job(job_type => 't.ping', payload => %s)", [f'{{"i": "{i}"}}'])
            return False

        time.sleep(0)
        run_worker_until(app, fast_config(db, poll_interval_ms=5000), enqueue_one_at_a_time, timeout=30)
    latencies = sorted((started[i] - enqueued[i]) * 1000 for i in enqueued if i != "0")
    p50, p99 = statistics.median(latencies), latencies[-1]
    print(f"\nNOTIFY wake latency over {len(latencies)} jobs: p50 {p50:.1f} ms, max {p99:.1f} ms")
    # Woken by the poll alone, the median would be near half the 5 s interval; NOTIFY gives a
    # few ms. The bar sits far from both, so a loaded machine does not fail it.
    assert p50 < 250, latencies


def test_a_lost_lease_drops_the_outcome_and_is_logged(db: str, caplog: pytest.LogCaptureFixture) -> None:
    """The lease runs out under the handler and the reaper makes the job dead; only then does
    the handler return. The order is forced, not timed: the handler waits for the test to see
    the job dead, so its outcome can only come back lease_lost (or a heartbeat finds the lease
    gone first, which the worker logs as well) and nothing of it is written."""
    app = App()
    started = threading.Event()
    reaped = threading.Event()

    @app.job("t.lost", max_attempts=1)
    async def lost(ctx: JobContext) -> Any:
        started.set()
        deadline = time.monotonic() + 30  # past run_worker_until's own limit: the test fails first
        while not reaped.is_set() and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        return "too late"

    with Client.connect(db) as client, psycopg.connect(db, autocommit=True) as conn:
        job_id = client.enqueue_job("t.lost", max_attempts=1).job_id

        def expire_then_wait(c: Client) -> bool:
            status = c.get_job(job_id)["status"]
            if started.is_set() and status == "running":
                # the lease runs out under the handler (again on every poll until the reaper
                # has run: a heartbeat in between cannot renew an expired lease anyway)
                conn.execute(
                    "UPDATE pgrun.jobs SET lease_expires_at = pgrun.now()"
                    " WHERE id = %s AND status = 'running'",
                    [job_id],
                )
            elif status == "dead":
                reaped.set()  # only the reaper can end the job while its handler waits
            # the worker logs the lost lease once the handler has returned (or its heartbeat
            # came back not renewed): wait for the line, the state is already final
            return reaped.is_set() and "lease lost" in caplog.text

        with caplog.at_level(logging.WARNING, logger="pgrun.worker"):
            run_worker_until(app, fast_config(db), expire_then_wait)
        job = client.get_job(job_id)
    assert job["status"] == "dead" and job["error_code"] == "lease_expired"
    assert job["result"] is None
    assert [a["outcome"] for a in job["attempts"]] == ["lease_expired"]


def test_workflow_steps_run_through_the_worker(db: str) -> None:
    app = App()

    @app.job("wf.add")
    async def add(ctx: JobContext) -> Any:
        inputs = [d["output"] for d in ctx.payload["dependencies"].values()]
        return ctx.payload.get("n", 0) + sum(inputs)

    wf = Workflow("sum")
    wf.job("a", "wf.add", {"n": 1})
    wf.job("b", "wf.add", {"n": 2})
    wf.job("total", "wf.add", depends_on=["a", "b"])
    with Client.connect(db) as client:
        run = client.enqueue_workflow(wf)
        run_worker_until(
            app, fast_config(db), lambda c: c.get_workflow_run(run.run_id)["status"] != "running"
        )
        final = client.get_workflow_run(run.run_id)
    steps = final["steps"]
    total = steps["total"] if isinstance(steps, dict) else next(s for s in steps if s["key"] == "total")
    assert final["status"] == "succeeded" and total["output"] == 3
