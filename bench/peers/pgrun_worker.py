"""pgrun worker contestant: the real worker, in-process, from the project venv.

What `pgrun worker app:app` runs, without its signal handlers: `pgrun.runner.run_loops` over
`default_loops(app)` (worker + reaper on one pool, sized by `runner.pool_size`, plus the
worker's own LISTEN connection), with an `@app.job` async no-op handler. Settings:
`JOBS_MAX_GLOBAL_CONCURRENCY` = the workload's concurrency, every other setting at its default
(claims of at most `JOBS_CLAIM_BATCH_SIZE` jobs into a local queue bounded by `JOBS_PREFETCH`
and the worker's own throughput, poll 1 s, lease 30 s, outcomes flushed 2 ms after the first
is buffered). Any other `JOBS_*` variable in the environment (`JOBS_CLAIM_BATCH_SIZE`,
`JOBS_PREFETCH`, `JOBS_ASYNC_CLAIMS`, `JOBS_CLAIMS_IN_FLIGHT`, `JOBS_GC_THRESHOLD`, ...) overrides
its default as it does for `pgrun worker` (bench/peers/ab_env.py's A/B runs); `BENCH_ANALYZE=0`
skips the ANALYZE after the bulk load, so the worker claims with the statistics of an empty
table; `BENCH_SYNC_HANDLER=1` makes the no-op handler a plain function (sync handlers run in the
worker's handler threads); `BENCH_HANDLER_RESULT=1` has the (async) handler return a small
object (`{"n": ..., "ok": true}`), stored as the job's result; `BENCH_HANDLER_LOG=1` has it (sync or
async) log one line (`ctx.log`) a job; `BENCH_HANDLER_FAIL=1` has the async one raise
`Fail(retryable=False)` (every job ends dead); `BENCH_WORKFLOW_STEPS=N` enqueues the jobs as
workflow runs of N steps in a chain (one `enqueue_workflow` call a run; each completion but a
run's last releases its next step); `BENCH_HANDLER_CONTINUE=1` has each job's first run return
`Continue("second", state=...)` and its second finish it (a job counts once, when it finishes).
Delayed: the same worker, `JOBS_POLL_INTERVAL_MS` = `--poll-s` (60 s, the largest the setting
allows; default 1 s), so a job that starts on time was started by the worker's timer for its due
time (the enqueue's NOTIFY carries it); single delayed enqueue `AsyncClient.enqueue_job(run_at=)`,
whose returned `run_at` is the due time.
Throughput: the handler that finishes the N-th job sets `stop`; the worker then writes the
buffered outcomes and returns, and the clock stops (`worker_cpu_us_per_job`: this process's CPU
time over that span, per job). Schema: `pgrun.migrate.migrate`; bulk
enqueue `Client.enqueue_jobs` (10,000 per call); single enqueue `AsyncClient.enqueue_job` in the
enqueuer process.
Single (no worker): the blocking `Client.enqueue_job(NOOP, payload=...)`, one call per job on a
one-connection pool (`Client.connect(max_size=1)`), each call its own transaction.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import time
from datetime import UTC, datetime
from typing import Any

import psycopg
from _common import (
    NOOP,
    delayed_enqueuer_main,
    delayed_result,
    emit,
    enqueuer_main,
    latency_result,
    now,
    parse_args,
    run_delayed_enqueuer,
    run_enqueuer,
    single_main_sync,
    single_result,
    wall,
)

# imported here, not where they are used: the throughput clock starts before the worker does,
# and importing pgrun's worker modules (~25 ms) is not the worker's work (the peers' imports
# happen before their clocks too)
from pgrun import migrate
from pgrun.app import App, Continue, Fail
from pgrun.client import AsyncClient, Client
from pgrun.config import from_env
from pgrun.runner import default_loops, pool_size, run_loops


def settings(concurrency: int, poll_s: float | None = None) -> dict[str, Any]:
    cfg = config(concurrency, poll_s=poll_s)
    return {
        "driver": f"psycopg 3 async pool ({pool_size(cfg, 2)}) + 1 LISTEN connection",
        "loops": "worker + reaper (pgrun.runner.default_loops)",
        "JOBS_MAX_GLOBAL_CONCURRENCY": concurrency,
        "JOBS_CLAIM_BATCH_SIZE": cfg.claim_batch_size,
        # getattr: bench/worker_ab.py runs this script against commits from before the setting
        "JOBS_CLAIMS_IN_FLIGHT": getattr(cfg, "claims_in_flight", 1),
        "JOBS_ASYNC_CLAIMS": cfg.async_claims,
        "JOBS_PREFETCH": cfg.prefetch_limit,
        "JOBS_EVENT_LOOP": getattr(cfg, "event_loop", "asyncio"),
        "flush": (
            "complete_jobs 2 ms after the first buffered outcome (pgrun.worker.FLUSH_DELAY), "
            "at once when no more can come"
        ),
        "notify": f"LISTEN pgrun_jobs; poll fallback JOBS_POLL_INTERVAL_MS={cfg.poll_interval_ms}",
        "poll_interval_s": cfg.poll_interval_ms / 1000,
        "delayed_jobs": "a timer per known due time (the delayed enqueue's NOTIFY carries it)",
    }


def config(concurrency: int, dsn: str = "", poll_s: float | None = None) -> Any:
    """The worker's settings: the JOBS_* variables in the environment, read and clamped as
    `pgrun worker` reads them (bench/peers/ab_env.py's A/B runs set them; unset, the defaults),
    then the workload's database, worker id, concurrency and poll."""
    poll: dict[str, Any] = {} if poll_s is None else {"poll_interval_ms": round(poll_s * 1000)}
    return from_env().with_overrides(
        database_url=dsn, worker_id="bench-worker", max_global_concurrency=concurrency, **poll
    )


def run_worker(
    app: Any, dsn: str, concurrency: int, stop: asyncio.Event, poll_s: float | None = None
) -> asyncio.Task[None]:
    """`pgrun worker`'s loops (worker + reaper on one pool) as a task that ends when `stop` is set."""
    return asyncio.create_task(run_loops(default_loops(app), config(concurrency, dsn, poll_s), stop))


async def throughput(args: Any) -> dict[str, Any]:
    with Client.connect(args.dsn) as client:
        t = time.perf_counter()
        steps = int(os.environ.get("BENCH_WORKFLOW_STEPS", "0") or 0)
        if steps > 0:  # runs of chains: each job but the last of its run releases the next
            for first in range(0, args.jobs, steps):
                chain = [
                    {"key": f"s{i}", "job_type": NOOP, "payload": {"n": first + i}}
                    | ({"depends_on": [f"s{i - 1}"]} if i else {})
                    for i in range(min(steps, args.jobs - first))
                ]
                client.enqueue_workflow({"steps": chain})
        else:
            for first in range(0, args.jobs, 10_000):
                count = min(10_000, args.jobs - first)
                client.enqueue_jobs([{"job_type": NOOP, "payload": {"n": first + i}} for i in range(count)])
        enqueue_s = time.perf_counter() - t
    if os.environ.get("BENCH_ANALYZE", "1").strip() != "0":  # BENCH_ANALYZE=0: stale statistics
        with psycopg.connect(args.dsn, autocommit=True) as conn:
            conn.execute("ANALYZE")

    app = App()
    stop = asyncio.Event()
    handled = 0

    if os.environ.get("BENCH_SYNC_HANDLER", "0").strip() == "1":  # a plain function: a thread runs it
        loop = asyncio.get_running_loop()
        counter = itertools.count(1)

        sync_logs = os.environ.get("BENCH_HANDLER_LOG", "0").strip() == "1"

        @app.job(NOOP)
        def noop_sync(ctx: Any) -> None:
            nonlocal handled
            if sync_logs:
                ctx.log("working", n=ctx.payload["n"])
            handled = next(counter)  # next() of itertools.count: one bytecode, thread-safe
            if handled >= args.jobs:
                loop.call_soon_threadsafe(stop.set)
    else:
        result = os.environ.get("BENCH_HANDLER_RESULT", "0").strip() == "1"
        logs = os.environ.get("BENCH_HANDLER_LOG", "0").strip() == "1"
        fails = os.environ.get("BENCH_HANDLER_FAIL", "0").strip() == "1"
        continues = os.environ.get("BENCH_HANDLER_CONTINUE", "0").strip() == "1"

        @app.job(NOOP)
        async def noop(ctx: Any) -> Any:
            nonlocal handled
            if logs:
                await ctx.log("working", n=ctx.payload["n"])
            if continues and ctx.step is None:  # a first step: the job runs again at "second"
                return Continue("second", state={"n": ctx.payload["n"]})
            handled += 1
            if handled >= args.jobs:
                stop.set()
            if fails:
                raise Fail("not today", retryable=False)
            return {"n": ctx.payload["n"], "ok": True} if result else None

    start, cpu = time.perf_counter(), time.process_time()
    runner = run_worker(app, args.dsn, args.concurrency, stop)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), args.timeout_s)
    stop.set()
    await asyncio.wait_for(runner, 60)
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    with psycopg.connect(args.dsn, autocommit=True) as conn:
        # not written: every job ends succeeded (dead with BENCH_HANDLER_FAIL=1)
        row = conn.execute("SELECT count(*) FROM pgrun.jobs WHERE finished_at IS NULL").fetchone()
    return {
        "jobs": args.jobs,
        "handled": handled,
        "left_in_queue": row[0] if row else None,
        "enqueue_rows_per_s": args.jobs / enqueue_s,
        "elapsed_s": elapsed,
        "jobs_per_s": args.jobs / elapsed,
        # CPU time of this process (every thread) while the worker ran, per job
        "worker_cpu_us_per_job": cpu / args.jobs * 1e6,
        "settings": settings(args.concurrency),
    }


async def latency(args: Any) -> dict[str, Any]:
    app = App()
    stop = asyncio.Event()
    started_at: dict[int, float] = {}

    @app.job(NOOP)
    async def noop(ctx: Any) -> None:
        started_at[int(ctx.payload["n"])] = now()

    runner = run_worker(app, args.dsn, args.concurrency, stop)
    try:
        await asyncio.sleep(args.idle_s)
        commit_at = await run_enqueuer(started_at, args.timeout_s)
    finally:
        stop.set()
        await asyncio.wait_for(runner, 60)
    out = latency_result(commit_at, started_at, args.warmup, args.samples)
    out["settings"] = settings(args.concurrency)
    return out


async def delayed(args: Any) -> dict[str, Any]:
    app = App()
    stop = asyncio.Event()
    started_at: dict[int, float] = {}

    @app.job(NOOP)
    async def noop(ctx: Any) -> None:
        started_at[int(ctx.payload["n"])] = wall()

    cfg = settings(args.concurrency, args.poll_s)
    runner = run_worker(app, args.dsn, args.concurrency, stop, args.poll_s)
    try:
        await asyncio.sleep(args.idle_s)
        run_at, enqueued_by = await run_delayed_enqueuer(started_at, args.timeout_s, cfg["poll_interval_s"])
    finally:
        stop.set()
        await asyncio.wait_for(runner, 60)
    out = delayed_result(run_at, started_at, enqueued_by, args.samples)
    out["settings"] = cfg
    return out


def single(args: Any) -> dict[str, Any]:
    with Client.connect(args.dsn, min_size=1, max_size=1) as client:
        elapsed = single_main_sync(args, lambda i: client.enqueue_job(NOOP, payload={"n": i}))
    with psycopg.connect(args.dsn, autocommit=True) as conn:
        row = conn.execute("SELECT count(*) FROM pgrun.jobs").fetchone()
    out = single_result(args.jobs, args.warmup, elapsed, row[0] if row else None)
    out["settings"] = {
        "api": "Client.enqueue_job (blocking), one call per job",
        "driver": "psycopg 3 pool, 1 connection",
    }
    return out


async def enqueuer(args: Any) -> None:
    async with await AsyncClient.connect(args.dsn, max_size=1) as client:
        if args.mode == "delayed":

            async def enqueue_at(i: int, due: float) -> float:
                at = datetime.fromtimestamp(due, UTC)
                job = await client.enqueue_job(NOOP, payload={"n": i}, run_at=at)
                return job.run_at.timestamp()

            await delayed_enqueuer_main(args, enqueue_at)
            return
        await enqueuer_main(args, lambda i: client.enqueue_job(NOOP, payload={"n": i}))


async def main() -> None:
    args = parse_args("pgrun worker contestant")
    if args.enqueuer:
        await enqueuer(args)
        return
    if args.mode == "single":
        await asyncio.to_thread(migrate.migrate, args.dsn)
        result = single(args)
        result.update(contestant="pgrun worker", mode=args.mode, versions={"psycopg": psycopg.__version__})
        emit(result)
        return
    try:
        import pgrun.runner  # noqa: F401
    except ImportError as exc:
        emit({"contestant": "pgrun worker", "mode": args.mode, "skipped": f"pgrun.runner: {exc}"})
        return
    await asyncio.to_thread(migrate.migrate, args.dsn)
    modes = {"throughput": throughput, "latency": latency, "delayed": delayed}
    result = await modes[args.mode](args)
    result.update(
        contestant="pgrun worker",
        mode=args.mode,
        concurrency=args.concurrency,
        versions={"psycopg": psycopg.__version__},
    )
    emit(result)


if __name__ == "__main__":
    try:
        from pgrun.eventloop import run_until_complete
    except ImportError:  # bench/worker_ab.py runs this script against commits from before it
        asyncio.run(main())
    else:  # the loop `pgrun worker` runs on (JOBS_EVENT_LOOP)
        run_until_complete(main(), from_env())
