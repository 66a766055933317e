"""pgqueuer contestant: runs in the peers' venv (bench/peers/.venv-peers), never in the project's.

Settings (pgqueuer's recommended setup): the asyncpg driver (`AsyncpgDriver`, one connection for
the QueueManager; its LISTEN runs on it), schema installed with `Queries.install()`, jobs
enqueued with `Queries.enqueue` (lists = one bulk INSERT). Concurrency C is
`QueueManager.run(max_concurrent_tasks=C, batch_size=min(10, C // 2))`: batch_size 10 is
pgqueuer's default and `max_concurrent_tasks` must be at least twice the batch size.
Throughput uses `mode=drain` (exit once the queue is empty and in-flight jobs are done; the
status-log buffer is flushed on exit). Other settings are pgqueuer's defaults.
Delayed: `Queries.enqueue(..., execute_after=timedelta)` (relative to the server's now(); the
stored `execute_after` is read back as the due time) and `QueueManager.run(dequeue_timeout=
--poll-s)` (60 s; its default is 30 s). pgqueuer wakes for deferred jobs by itself: after an
empty dequeue it waits until the earliest `execute_after` (at least 0.1 s,
`min_dequeue_poll_interval`) instead of the whole dequeue timeout.
Single (no worker): `Queries.enqueue(NOOP, payload, 0)` with one job per call, on one asyncpg
connection (autocommit: each call its own transaction).
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import time
from datetime import timedelta
from typing import Any

import asyncpg
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
from pgqueuer import AsyncpgDriver, Job, QueueManager
from pgqueuer.queries import Queries
from pgqueuer.types import QueueExecutionMode

DEFAULT_DEQUEUE_TIMEOUT_S = 30.0  # QueueManager.run's default


def settings(concurrency: int, poll_s: float | None = None) -> dict[str, Any]:
    batch = max(1, min(10, concurrency // 2))
    return {
        "driver": "asyncpg (AsyncpgDriver)",
        "max_concurrent_tasks": concurrency,
        "batch_size": batch,
        "dequeue_timeout_s": DEFAULT_DEQUEUE_TIMEOUT_S if poll_s is None else poll_s,
        "notify": "LISTEN on the QueueManager connection",
        "poll_interval_s": DEFAULT_DEQUEUE_TIMEOUT_S if poll_s is None else poll_s,
        "delayed_jobs": "after an empty dequeue, waits until the earliest execute_after (>= 0.1 s)",
    }


async def install(dsn: str) -> None:
    conn = await asyncpg.connect(dsn)
    try:
        await Queries(AsyncpgDriver(conn)).install()
    finally:
        await conn.close()


async def throughput(args: Any) -> dict[str, Any]:
    cfg = settings(args.concurrency)
    conn = await asyncpg.connect(args.dsn)
    queries = Queries(AsyncpgDriver(conn))
    t = time.perf_counter()
    for start in range(0, args.jobs, 10_000):
        count = min(10_000, args.jobs - start)
        await queries.enqueue([NOOP] * count, [str(start + i).encode() for i in range(count)], [0] * count)
    enqueue_s = time.perf_counter() - t
    await conn.execute("ANALYZE")
    await conn.close()

    wconn = await asyncpg.connect(args.dsn)
    qm = QueueManager(Queries(AsyncpgDriver(wconn)))
    handled = 0
    first: list[float] = []

    @qm.entrypoint(NOOP)
    async def noop(job: Job) -> None:
        nonlocal handled
        if not first:
            first.append(time.perf_counter())
        handled += 1

    start = time.perf_counter()
    await asyncio.wait_for(
        qm.run(
            batch_size=cfg["batch_size"],
            max_concurrent_tasks=cfg["max_concurrent_tasks"],
            mode=QueueExecutionMode.drain,
        ),
        args.timeout_s,
    )
    elapsed = time.perf_counter() - start
    await wconn.close()
    check = await asyncpg.connect(args.dsn)
    left = await check.fetchval("SELECT count(*) FROM pgqueuer")
    await check.close()
    return {
        "jobs": args.jobs,
        "handled": handled,
        "left_in_queue": left,
        "enqueue_rows_per_s": args.jobs / enqueue_s,
        "elapsed_s": elapsed,
        "jobs_per_s": args.jobs / elapsed,
        "settings": cfg,
    }


async def latency(args: Any) -> dict[str, Any]:
    cfg = settings(args.concurrency)
    wconn = await asyncpg.connect(args.dsn)
    qm = QueueManager(Queries(AsyncpgDriver(wconn)))
    started_at: dict[int, float] = {}

    @qm.entrypoint(NOOP)
    async def noop(job: Job) -> None:
        started_at[int(job.payload or b"-1")] = now()

    worker = asyncio.create_task(
        qm.run(batch_size=cfg["batch_size"], max_concurrent_tasks=cfg["max_concurrent_tasks"])
    )
    try:
        await asyncio.sleep(args.idle_s)
        commit_at = await run_enqueuer(started_at, args.timeout_s)
    finally:
        qm.shutdown.set()
        await asyncio.wait_for(worker, 30)
        await wconn.close()
    out = latency_result(commit_at, started_at, args.warmup, args.samples)
    out["settings"] = cfg
    return out


async def delayed(args: Any) -> dict[str, Any]:
    cfg = settings(args.concurrency, args.poll_s)
    wconn = await asyncpg.connect(args.dsn)
    qm = QueueManager(Queries(AsyncpgDriver(wconn)))
    started_at: dict[int, float] = {}

    @qm.entrypoint(NOOP)
    async def noop(job: Job) -> None:
        started_at[int(job.payload or b"-1")] = wall()

    worker = asyncio.create_task(
        qm.run(
            dequeue_timeout=timedelta(seconds=cfg["dequeue_timeout_s"]),
            batch_size=cfg["batch_size"],
            max_concurrent_tasks=cfg["max_concurrent_tasks"],
        )
    )
    try:
        await asyncio.sleep(args.idle_s)
        run_at, enqueued_by = await run_delayed_enqueuer(started_at, args.timeout_s, cfg["poll_interval_s"])
    finally:
        qm.shutdown.set()
        await asyncio.wait_for(worker, 30)
        await wconn.close()
    out = delayed_result(run_at, started_at, enqueued_by, args.samples)
    out["settings"] = cfg
    return out


async def single(args: Any) -> dict[str, Any]:
    conn = await asyncpg.connect(args.dsn)
    try:
        queries = Queries(AsyncpgDriver(conn))
        elapsed = await single_main(args, lambda i: queries.enqueue(NOOP, str(i).encode(), 0))
        rows = await conn.fetchval("SELECT count(*) FROM pgqueuer")
    finally:
        await conn.close()
    out = single_result(args.jobs, args.warmup, elapsed, rows)
    out["settings"] = {
        "api": "Queries.enqueue, one job per call",
        "driver": "asyncpg (AsyncpgDriver), 1 connection",
    }
    return out


async def enqueuer(args: Any) -> None:
    conn = await asyncpg.connect(args.dsn)
    queries = Queries(AsyncpgDriver(conn))
    try:
        if args.mode == "delayed":

            async def enqueue_at(i: int, due: float) -> float:
                ids = await queries.enqueue(NOOP, str(i).encode(), 0, timedelta(seconds=due - wall()))
                stored = await conn.fetchval(
                    "SELECT extract(EPOCH FROM execute_after)::float8 FROM pgqueuer WHERE id = $1", ids[0]
                )
                return float(stored)

            await delayed_enqueuer_main(args, enqueue_at)
            return
        await enqueuer_main(args, lambda i: queries.enqueue(NOOP, str(i).encode()))
    finally:
        await conn.close()


async def main() -> None:
    args = parse_args("pgqueuer contestant")
    if args.enqueuer:
        await enqueuer(args)
        return
    await install(args.dsn)
    modes = {"throughput": throughput, "latency": latency, "delayed": delayed, "single": single}
    result = await modes[args.mode](args)
    result.update(
        contestant="pgqueuer",
        mode=args.mode,
        concurrency=args.concurrency,
        versions={p: importlib.metadata.version(p) for p in ("pgqueuer", "asyncpg")},
    )
    emit(result)


if __name__ == "__main__":
    asyncio.run(main())
