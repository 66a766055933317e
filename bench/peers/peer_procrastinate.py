"""procrastinate contestant: runs in the peers' venv (bench/peers/.venv-peers), never in the project's.

Settings (procrastinate's recommended setup): `PsycopgConnector` (psycopg 3 with its async pool)
sized so the pool never limits the worker (max_size = concurrency + 2: the job finishes, the
fetch loop and the LISTEN connection), schema applied with `app.schema_manager.apply_schema_async()`,
jobs enqueued with `task.batch_defer_async` (one statement per batch). Concurrency C is
`run_worker_async(concurrency=C)` with `listen_notify=True` (the default) and the default 5 s
fallback polling; throughput uses `wait=False` (exit once the queue is caught up). Signal
handlers are off (the harness bounds the run); everything else is procrastinate's defaults.
Delayed: `task.configure(schedule_at=datetime).defer_async()` (the due time is stored as given)
and `run_worker_async(fetch_job_polling_interval=--poll-s)` (60 s; its default is 5 s). Its
worker fetches on a NOTIFY (one comes with every insert, delayed or not) or at the poll; it keeps
no timer for `scheduled_at`, so a job that comes due while nothing else happens waits for the
next poll.
Single (no worker): `task.defer_async(n=i)`, one call per job, on a PsycopgConnector pool of one
connection (each defer its own transaction).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.metadata
import logging
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
    single_main,
    single_result,
    wall,
)
from procrastinate import App, PsycopgConnector

DEFAULT_POLL_S = 5.0  # procrastinate.worker.FETCH_JOB_POLLING_INTERVAL


def settings(concurrency: int, poll_s: float | None = None) -> dict[str, Any]:
    return {
        "connector": "PsycopgConnector (psycopg 3 async pool)",
        "pool_max_size": concurrency + 2,
        "concurrency": concurrency,
        "listen_notify": True,
        "fetch_job_polling_interval_s": DEFAULT_POLL_S if poll_s is None else poll_s,
        "poll_interval_s": DEFAULT_POLL_S if poll_s is None else poll_s,
        "delayed_jobs": "no timer for scheduled_at: fetched on the next NOTIFY or poll",
    }


def make_app(dsn: str, concurrency: int) -> App:
    size = concurrency + 2
    return App(connector=PsycopgConnector(conninfo=dsn, min_size=min(4, size), max_size=size))


async def throughput(args: Any) -> dict[str, Any]:
    cfg = settings(args.concurrency)
    app = make_app(args.dsn, args.concurrency)
    handled = 0

    @app.task(name=NOOP, queue="default")
    async def noop(n: int) -> None:
        nonlocal handled
        handled += 1

    async with app.open_async():
        await app.schema_manager.apply_schema_async()
        t = time.perf_counter()
        for start in range(0, args.jobs, 10_000):
            count = min(10_000, args.jobs - start)
            await noop.batch_defer_async(*({"n": start + i} for i in range(count)))
        enqueue_s = time.perf_counter() - t
        async with await psycopg.AsyncConnection.connect(args.dsn, autocommit=True) as conn:
            await conn.execute("ANALYZE")
        start = time.perf_counter()
        await asyncio.wait_for(
            app.run_worker_async(concurrency=args.concurrency, wait=False, install_signal_handlers=False),
            args.timeout_s,
        )
        elapsed = time.perf_counter() - start
    async with await psycopg.AsyncConnection.connect(args.dsn, autocommit=True) as conn:
        cur = await conn.execute("SELECT count(*) FROM procrastinate_jobs WHERE status <> 'succeeded'")
        row = await cur.fetchone()
    return {
        "jobs": args.jobs,
        "handled": handled,
        "left_in_queue": row[0] if row else None,
        "enqueue_rows_per_s": args.jobs / enqueue_s,
        "elapsed_s": elapsed,
        "jobs_per_s": args.jobs / elapsed,
        "settings": cfg,
    }


async def latency(args: Any) -> dict[str, Any]:
    cfg = settings(args.concurrency)
    app = make_app(args.dsn, args.concurrency)
    started_at: dict[int, float] = {}

    @app.task(name=NOOP, queue="default")
    async def noop(n: int) -> None:
        started_at[n] = now()

    async with app.open_async():
        await app.schema_manager.apply_schema_async()
        worker = asyncio.create_task(
            app.run_worker_async(concurrency=args.concurrency, wait=True, install_signal_handlers=False)
        )
        try:
            await asyncio.sleep(args.idle_s)
            commit_at = await run_enqueuer(started_at, args.timeout_s)
        finally:
            worker.cancel()
            with contextlib.suppress(asyncio.CancelledError, TimeoutError):
                await asyncio.wait_for(worker, 30)
    out = latency_result(commit_at, started_at, args.warmup, args.samples)
    out["settings"] = cfg
    return out


async def delayed(args: Any) -> dict[str, Any]:
    cfg = settings(args.concurrency, args.poll_s)
    app = make_app(args.dsn, args.concurrency)
    started_at: dict[int, float] = {}

    @app.task(name=NOOP, queue="default")
    async def noop(n: int) -> None:
        started_at[n] = wall()

    async with app.open_async():
        await app.schema_manager.apply_schema_async()
        worker = asyncio.create_task(
            app.run_worker_async(
                concurrency=args.concurrency,
                wait=True,
                install_signal_handlers=False,
                fetch_job_polling_interval=cfg["fetch_job_polling_interval_s"],
            )
        )
        try:
            await asyncio.sleep(args.idle_s)
            run_at, enqueued_by = await run_delayed_enqueuer(
                started_at, args.timeout_s, cfg["poll_interval_s"]
            )
        finally:
            worker.cancel()
            with contextlib.suppress(asyncio.CancelledError, TimeoutError):
                await asyncio.wait_for(worker, 30)
    out = delayed_result(run_at, started_at, enqueued_by, args.samples)
    out["settings"] = cfg
    return out


async def single(args: Any) -> dict[str, Any]:
    app = App(connector=PsycopgConnector(conninfo=args.dsn, min_size=1, max_size=1))

    @app.task(name=NOOP, queue="default")
    async def noop(n: int) -> None:
        pass

    async with app.open_async():
        await app.schema_manager.apply_schema_async()
        elapsed = await single_main(args, lambda i: noop.defer_async(n=i))
    async with await psycopg.AsyncConnection.connect(args.dsn, autocommit=True) as conn:
        cur = await conn.execute("SELECT count(*) FROM procrastinate_jobs")
        row = await cur.fetchone()
    out = single_result(args.jobs, args.warmup, elapsed, row[0] if row else None)
    out["settings"] = {
        "api": "task.defer_async, one call per job",
        "connector": "PsycopgConnector (psycopg 3 async pool), 1 connection",
    }
    return out


async def enqueuer(args: Any) -> None:
    app = App(connector=PsycopgConnector(conninfo=args.dsn, min_size=1, max_size=2))

    @app.task(name=NOOP, queue="default")
    async def noop(n: int) -> None:
        pass

    async with app.open_async():
        if args.mode == "delayed":

            async def enqueue_at(i: int, due: float) -> float:
                at = datetime.fromtimestamp(due, UTC)
                await noop.configure(schedule_at=at).defer_async(n=i)
                return at.timestamp()

            await delayed_enqueuer_main(args, enqueue_at)
            return
        await enqueuer_main(args, lambda i: noop.defer_async(n=i))


async def main() -> None:
    logging.basicConfig(level=logging.WARNING)
    args = parse_args("procrastinate contestant")
    if args.enqueuer:
        await enqueuer(args)
        return
    modes = {"throughput": throughput, "latency": latency, "delayed": delayed, "single": single}
    result = await modes[args.mode](args)
    result.update(
        contestant="procrastinate",
        mode=args.mode,
        concurrency=args.concurrency,
        versions={p: importlib.metadata.version(p) for p in ("procrastinate", "psycopg")},
    )
    emit(result)


if __name__ == "__main__":
    asyncio.run(main())
