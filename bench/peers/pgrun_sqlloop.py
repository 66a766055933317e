"""pgrun SQL-loop contestant: the smallest worker loop over the SQL API, from the project venv.

Not the pgrun worker: a floor for it. Three autocommit psycopg 3 connections in one asyncio
loop: one waits on LISTEN pgrun_jobs (enqueue notifies it with the queue name), one claims
with `pgrun.claim_jobs(max_jobs => free slots)`, one flushes finished jobs with
`pgrun.complete_jobs` (everything that finished while the previous flush was in flight goes in
the next one). A slot frees when its handler returns; polling every second is the fallback
when no notification comes. Schema applied with `pgrun.migrate.migrate`, bulk enqueue with
`pgrun.enqueue_jobs` (10,000 per call), single enqueue with `pgrun.enqueue_job`.
Not run for the delayed workload (it prints `skipped`): this loop keeps no timer for due times,
so a delayed job waits for its 1 s poll; that measures the poll, not pgrun.
Not run for the single workload either (it prints `skipped`): single enqueue is the client's
call, which the pgrun worker contestant measures (`Client.enqueue_job`).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

import psycopg
from _common import NOOP, emit, enqueuer_main, latency_result, now, parse_args, run_enqueuer
from psycopg.types.json import Jsonb

from pgrun import migrate

POLL_S = 1.0
LEASE_S = 60


class SqlLoop:
    def __init__(self, dsn: str, concurrency: int, on_start: Any = None) -> None:
        self.dsn = dsn
        self.concurrency = concurrency
        self.on_start = on_start
        self.running = 0
        self.handled = 0
        self.completed = 0
        self.lost = 0
        self.buffer: list[tuple[Any, Any]] = []
        self.wake = asyncio.Event()
        self.slot_free = asyncio.Event()
        self.flush_ready = asyncio.Event()
        self.stop = asyncio.Event()
        self.tasks: set[asyncio.Task[None]] = set()

    def settings(self) -> dict[str, Any]:
        return {
            "driver": "psycopg 3 async, 3 connections (listen, claim, complete)",
            "concurrency": self.concurrency,
            "claim": "claim_jobs(max_jobs => free slots), lease 60 s",
            "complete": "complete_jobs, one flush in flight, the next one takes all that finished",
            "notify": "LISTEN pgrun_jobs; poll fallback 1 s",
        }

    async def _listen(self, conn: psycopg.AsyncConnection[Any]) -> None:
        await conn.execute("LISTEN pgrun_jobs")
        while not self.stop.is_set():
            async for _ in conn.notifies(timeout=0.5):
                self.wake.set()

    async def _handle(self, job_id: Any, token: Any, payload: Any) -> None:
        if self.on_start is not None:
            self.on_start(payload)
        self.handled += 1  # the no-op
        self.buffer.append((job_id, token))
        self.flush_ready.set()
        self.running -= 1
        self.slot_free.set()

    async def _flush(self, conn: psycopg.AsyncConnection[Any], final: asyncio.Event) -> None:
        while True:
            if not self.buffer:
                if final.is_set():
                    return
                self.flush_ready.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.flush_ready.wait(), 0.2)
                continue
            batch, self.buffer = self.buffer, []
            cur = await conn.execute(
                "SELECT count(*) FILTER (WHERE outcome = 'lease_lost') "
                "FROM pgrun.complete_jobs(job_ids => %s, lease_tokens => %s)",
                ([b[0] for b in batch], [b[1] for b in batch]),
                prepare=True,
            )
            row = await cur.fetchone()
            self.lost += int(row[0]) if row else 0
            self.completed += len(batch)

    async def _wait(self, *events: asyncio.Event, timeout: float) -> None:
        waiters = [asyncio.ensure_future(e.wait()) for e in events]
        try:
            await asyncio.wait(waiters, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for w in waiters:
                w.cancel()

    async def run(self, drain: bool, deadline: float) -> None:
        """Claim and run jobs until `stop` is set, or (drain) until nothing is left."""
        listen = await psycopg.AsyncConnection.connect(self.dsn, autocommit=True)
        claim = await psycopg.AsyncConnection.connect(self.dsn, autocommit=True)
        complete = await psycopg.AsyncConnection.connect(self.dsn, autocommit=True)
        final = asyncio.Event()
        listener = asyncio.create_task(self._listen(listen))
        flusher = asyncio.create_task(self._flush(complete, final))
        try:
            while not self.stop.is_set() and now() < deadline:
                free = self.concurrency - self.running
                if free <= 0:
                    self.slot_free.clear()
                    await self._wait(self.slot_free, self.stop, timeout=POLL_S)
                    continue
                self.wake.clear()
                cur = await claim.execute(
                    "SELECT job_id, lease_token, payload FROM pgrun.claim_jobs("
                    "worker_id => 'bench-sqlloop', lease_seconds => %s, max_jobs => %s)",
                    (LEASE_S, min(free, 1000)),
                    prepare=True,
                )
                rows = await cur.fetchall()
                for job_id, token, payload in rows:
                    self.running += 1
                    task = asyncio.create_task(self._handle(job_id, token, payload))
                    self.tasks.add(task)
                    task.add_done_callback(self.tasks.discard)
                if len(rows) < free:
                    if drain and not rows and self.running == 0:
                        break
                    self.slot_free.clear()
                    events = [self.wake, self.stop] + ([self.slot_free] if drain else [])
                    await self._wait(*events, timeout=POLL_S)
            if self.tasks:
                await asyncio.wait(list(self.tasks), timeout=30)
            final.set()
            await asyncio.wait_for(flusher, 30)
        finally:
            self.stop.set()
            final.set()
            for task in (listener, flusher):
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
            for conn in (listen, claim, complete):
                await conn.close()


async def enqueue_bulk(dsn: str, jobs: int) -> float:
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
        t = time.perf_counter()
        for start in range(0, jobs, 10_000):
            count = min(10_000, jobs - start)
            batch = Jsonb([{"job_type": NOOP, "payload": {"n": start + i}} for i in range(count)])
            await conn.execute("SELECT count(*) FROM pgrun.enqueue_jobs(%s)", (batch,))
        elapsed = time.perf_counter() - t
        await conn.execute("ANALYZE")
    return jobs / elapsed


async def throughput(args: Any) -> dict[str, Any]:
    enqueue_rate = await enqueue_bulk(args.dsn, args.jobs)
    loop = SqlLoop(args.dsn, args.concurrency)
    start = time.perf_counter()
    await asyncio.wait_for(loop.run(drain=True, deadline=now() + args.timeout_s), args.timeout_s + 60)
    elapsed = time.perf_counter() - start
    async with await psycopg.AsyncConnection.connect(args.dsn, autocommit=True) as conn:
        cur = await conn.execute("SELECT count(*) FROM pgrun.jobs WHERE status <> 'succeeded'")
        row = await cur.fetchone()
    return {
        "jobs": args.jobs,
        "handled": loop.handled,
        "lease_lost": loop.lost,
        "left_in_queue": row[0] if row else None,
        "enqueue_rows_per_s": enqueue_rate,
        "elapsed_s": elapsed,
        "jobs_per_s": args.jobs / elapsed,
        "settings": loop.settings(),
    }


async def latency(args: Any) -> dict[str, Any]:
    started_at: dict[int, float] = {}

    def on_start(payload: Any) -> None:
        started_at[int(payload["n"])] = now()

    loop = SqlLoop(args.dsn, args.concurrency, on_start)
    worker = asyncio.create_task(loop.run(drain=False, deadline=now() + args.timeout_s + 60))
    try:
        await asyncio.sleep(args.idle_s)
        commit_at = await run_enqueuer(started_at, args.timeout_s)
    finally:
        loop.stop.set()
        await asyncio.wait_for(worker, 60)
    out = latency_result(commit_at, started_at, args.warmup, args.samples)
    out["settings"] = loop.settings()
    return out


async def enqueuer(args: Any) -> None:
    async with await psycopg.AsyncConnection.connect(args.dsn, autocommit=True) as conn:

        async def enqueue_one(i: int) -> None:
            await conn.execute(
                "SELECT job_id FROM pgrun.enqueue_job(job_type => %s, payload => %s)",
                (NOOP, Jsonb({"n": i})),
                prepare=True,
            )

        await enqueuer_main(args, enqueue_one)


async def main() -> None:
    args = parse_args("pgrun SQL-loop contestant")
    if args.mode == "single":
        emit(
            {
                "contestant": "pgrun SQL loop",
                "mode": args.mode,
                "skipped": "single enqueue is measured by the pgrun worker row (Client.enqueue_job)",
            }
        )
        return
    if args.mode == "delayed":
        emit(
            {
                "contestant": "pgrun SQL loop",
                "mode": args.mode,
                "skipped": "no timer for due times (a floor for the claim path, not a product loop)",
            }
        )
        return
    if args.enqueuer:
        await enqueuer(args)
        return
    await asyncio.to_thread(migrate.migrate, args.dsn)
    result = await (throughput(args) if args.mode == "throughput" else latency(args))
    result.update(
        contestant="pgrun SQL loop",
        mode=args.mode,
        concurrency=args.concurrency,
        versions={"psycopg": psycopg.__version__},
    )
    emit(result)


if __name__ == "__main__":
    asyncio.run(main())
