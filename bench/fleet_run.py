"""One run of a small fleet of Python workers (contestant of bench/fleet_ab.py).

Several `pgrun worker` loops (worker only, no reaper) in this one process, each its own pool
and worker id, draining sleeping jobs of one type (`fleet.sleep`, the handler an
``asyncio.sleep`` of the job's time: the fleet waits on handlers, not on this process's CPU).
Two scenarios:

* ``capped``: the type capped at --cap (set_job_runtime_config), --jobs jobs enqueued in bulk,
  the first worker started alone and the others once it has started --slots jobs (so what it
  holds decides what the others get). Measures start of the first worker to the last job
  written.
* ``burst``: each worker first runs --slots jobs of the same time from a queue of its own (so
  each has measured its handlers), the fleet idles 0.5 s, then --jobs jobs are enqueued at
  once into the queue they share. Measures that enqueue to the last job written.
* ``chain``: a workflow of --jobs steps, each depending on the one before (each step's
  completion releases the next), enqueued once the workers have started. Measures that
  enqueue to the run's end: per step, a handler's run, its outcome's write (with the release),
  and the next step's claim.

Prints one JSON line: seconds, the ideal (jobs x time / usable slots), the peak of running jobs
seen (sampled every 10 ms), how many jobs each worker ran.

Usage: python bench/fleet_run.py --dsn DSN --scenario capped|burst|chain [--workers 2] [--slots 4]
       [--job-ms 300] [--jobs 64] [--cap 8]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections import Counter
from typing import Any

import psycopg

from pgrun import migrate
from pgrun.app import App, JobContext
from pgrun.config import Config
from pgrun.runner import default_loops, run_loops

TYPE = "fleet.sleep"


def app_of(worker: str, ran: Counter[str]) -> App:
    app = App()

    @app.job(TYPE)
    async def sleep(ctx: JobContext) -> None:
        ran[worker] += 1
        await asyncio.sleep(ctx.payload["ms"] / 1000)

    return app


def enqueue(dsn: str, jobs: int, ms: int, queue: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        batch = [{"job_type": TYPE, "queue": queue, "payload": {"ms": ms}}] * jobs
        conn.execute("SELECT count(*) FROM pgrun.enqueue_jobs(%s::jsonb)", (json.dumps(batch),))


async def watch(dsn: str, done: asyncio.Event, peak: list[int]) -> None:
    """Samples the running jobs every 10 ms until done."""
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
        while not done.is_set():
            row = await (
                await conn.execute("SELECT count(*) FROM pgrun.jobs WHERE status = 'running'")
            ).fetchone()
            peak[0] = max(peak[0], int(row[0]) if row else 0)
            await asyncio.sleep(0.01)


async def left(dsn: str, queue: str) -> int:
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
        cur = await conn.execute(
            "SELECT count(*) FROM pgrun.jobs WHERE queue = %s AND finished_at IS NULL", (queue,)
        )
        row = await cur.fetchone()
        return int(row[0]) if row else 0


async def main(args: argparse.Namespace) -> dict[str, Any]:
    migrate.migrate(args.dsn)  # the schema of the pgrun package imported: each side its own
    names = [f"fleet-{i}" for i in range(args.workers)]
    ran: Counter[str] = Counter()
    stop = asyncio.Event()
    queues = {name: ["shared", f"own-{name}"] for name in names}

    def start(name: str) -> asyncio.Task[None]:
        config = Config(database_url=args.dsn, worker_id=name, max_global_concurrency=args.slots)
        loops = default_loops(app_of(name, ran), queues=queues[name], reaper=False)
        return asyncio.create_task(run_loops(loops, config, stop))

    tasks = []
    peak = [0]
    done = asyncio.Event()
    if args.scenario == "chain":
        tasks = [start(name) for name in names]
        await asyncio.sleep(0.5)  # started, listening, definitions registered
        steps = [
            {"key": f"s{i}", "job_type": TYPE, "queue": "shared", "payload": {"ms": args.job_ms}}
            | ({"depends_on": [f"s{i - 1}"]} if i else {})
            for i in range(args.jobs)
        ]
        async with await psycopg.AsyncConnection.connect(args.dsn, autocommit=True) as watching:
            began = time.monotonic()
            row = await (
                await watching.execute(
                    "SELECT run_id FROM pgrun.enqueue_workflow(%s::jsonb)",
                    (json.dumps({"name": "chain", "steps": steps}),),
                )
            ).fetchone()
            assert row is not None
            while True:
                status = await (
                    await watching.execute("SELECT status FROM pgrun.workflow_runs WHERE id = %s", (row[0],))
                ).fetchone()
                if status and status[0] in ("succeeded", "failed", "cancelled"):
                    break
                await asyncio.sleep(0.002)
        took = time.monotonic() - began
        stop.set()
        await asyncio.gather(*tasks)
        return {
            "seconds": round(took, 3),
            "ideal_seconds": round(args.jobs * args.job_ms / 1000, 3),
            "per_step_ms": round(took / args.jobs * 1000, 2),
            "ran": dict(sorted(ran.items())),
        }
    if args.scenario == "capped":
        with psycopg.connect(args.dsn, autocommit=True) as conn:
            conn.execute("SELECT pgrun.set_job_runtime_config(%s, max_concurrency => %s)", (TYPE, args.cap))
        enqueue(args.dsn, args.jobs, args.job_ms, "shared")
        watcher = asyncio.create_task(watch(args.dsn, done, peak))
        began = time.monotonic()
        tasks.append(start(names[0]))
        while ran[names[0]] < args.slots:
            await asyncio.sleep(0.005)
        tasks += [start(name) for name in names[1:]]
    else:
        tasks = [start(name) for name in names]
        for name in names:
            enqueue(args.dsn, args.slots, args.job_ms, f"own-{name}")
        while sum(ran.values()) < args.slots * args.workers or any(
            [await left(args.dsn, f"own-{name}") for name in names]
        ):
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.5)
        ran.clear()
        watcher = asyncio.create_task(watch(args.dsn, done, peak))
        began = time.monotonic()
        enqueue(args.dsn, args.jobs, args.job_ms, "shared")
    while await left(args.dsn, "shared"):
        await asyncio.sleep(0.005)
    took = time.monotonic() - began
    done.set()
    stop.set()
    await asyncio.gather(watcher, *tasks)
    usable = (
        min(args.cap, args.workers * args.slots) if args.scenario == "capped" else args.workers * args.slots
    )
    return {
        "seconds": round(took, 3),
        "ideal_seconds": round(-(-args.jobs // usable) * args.job_ms / 1000, 3),
        "peak_running": peak[0],
        "ran": dict(sorted(ran.items())),
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dsn", required=True)
    parser.add_argument("--scenario", choices=["capped", "burst", "chain"], required=True)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--slots", type=int, default=4)
    parser.add_argument("--job-ms", type=int, default=300)
    parser.add_argument("--jobs", type=int, default=64)
    parser.add_argument("--cap", type=int, default=8)
    print(json.dumps(asyncio.run(main(parser.parse_args()))))
    sys.exit(0)
