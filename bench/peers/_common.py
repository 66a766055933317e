"""What every contestant script shares: its arguments, the clock, percentiles and the JSON line.

Standard library only: the peers' scripts import it from their own venv. A contestant script
is run as ``python SCRIPT --dsn DSN --mode throughput|latency ...``; it installs its schema into
the (fresh, empty) database it is given, runs one workload and prints one JSON object as the
last line of its stdout.

Workloads (identical for every contestant):
  throughput  N no-op jobs enqueued in bulk up front, ANALYZE, then a worker at the given
              concurrency processes them; jobs/s = N / (worker start -> every completion written).
  latency     a worker at the given concurrency, started and left idle for a moment; then a
              separate enqueuer process (the same script with --enqueuer) enqueues `samples`
              single jobs one at a time, each `interval_ms` after the previous one started;
              latency = handler start (worker process) - the moment the enqueue call returned,
              committed (enqueuer process), both on time.monotonic(), which on Linux is one
              clock for every process. A separate process, so that neither side waits for the
              other's event loop. The first `warmup` samples are dropped.
  delayed     delayed-start lateness: a worker at the given concurrency, started and left idle;
              then the enqueuer process enqueues `samples` jobs one at a time, back to back,
              each with a due time chosen up front: the first `delay_s` after the enqueuer
              started, then one every `interval_ms`, so every enqueue (and its NOTIFY) is over
              before the first job comes due and the worker is idle at each due time: a job
              can only start on time if the library wakes for a due time it was told about.
              lateness = handler start (worker process, time.time()) - the due time as stored
              by the library (unix seconds; the server's clock is this machine's). `--poll-s`
              sets the library's poll interval (absent: its default). No warm-up is dropped.
  single      single enqueue: no worker; one client (one connection) enqueues `warmup` jobs,
              then N more, one call per job with the library's own single-enqueue API, each
              call its own transaction and durable commit, back to back;
              jobs/s = N / (first counted call -> last counted call returned). The script then
              counts the rows its library holds (warm-up + N expected) and reports them.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

NOOP = "bench_noop"


def parse_args(description: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--dsn", required=True)
    parser.add_argument("--mode", choices=("throughput", "latency", "delayed", "single"), required=True)
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--concurrency", type=int, default=10)
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--interval-ms", type=float, default=20.0)
    parser.add_argument("--idle-s", type=float, default=1.0, help="idle time before the first sample")
    parser.add_argument("--delay-s", type=float, default=1.0, help="delayed: the first job's delay")
    parser.add_argument("--poll-s", type=float, default=None, help="delayed: the library's poll interval")
    parser.add_argument("--timeout-s", type=float, default=600.0, help="give up after this long")
    parser.add_argument("--enqueuer", action="store_true", help="internal: be the latency enqueuer")
    return parser.parse_args()


def percentiles(values_ms: list[float]) -> dict[str, float]:
    ordered = sorted(values_ms)
    if not ordered:
        return {"p50_ms": float("nan"), "p99_ms": float("nan"), "mean_ms": float("nan")}
    rank99 = max(0, min(len(ordered) - 1, round(0.99 * len(ordered)) - 1))
    return {
        "p50_ms": statistics.median(ordered),
        "p99_ms": ordered[rank99],
        "mean_ms": statistics.fmean(ordered),
        "min_ms": ordered[0],
        "max_ms": ordered[-1],
    }


def latency_result(
    commit_at: dict[int, float], started_at: dict[int, float], warmup: int, samples: int
) -> dict[str, Any]:
    """Milliseconds from each enqueue's return to its handler's start, warm-up samples dropped."""
    values = [
        (started_at[i] - commit_at[i]) * 1000
        for i in range(warmup, warmup + samples)
        if i in commit_at and i in started_at
    ]
    out: dict[str, Any] = percentiles(values)
    out["samples"] = len(values)
    out["missing"] = samples - len(values)
    return out


async def enqueuer_main(args: argparse.Namespace, enqueue_one: Callable[[int], Awaitable[Any]]) -> None:
    """The enqueuer process: one job every interval_ms, printing when each enqueue returned."""
    commit_at: dict[int, float] = {}
    deadline = now() + args.timeout_s
    for i in range(args.warmup + args.samples):
        if now() > deadline:
            break
        began = now()
        await enqueue_one(i)
        commit_at[i] = now()
        await asyncio.sleep(max(0.0, args.interval_ms / 1000 - (now() - began)))
    emit({"commit_at": commit_at})


async def spawn_enqueuer(timeout_s: float) -> dict[str, Any]:
    """Run this script again as the enqueuer; return the JSON object it printed last."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, *sys.argv, "--enqueuer", stdout=asyncio.subprocess.PIPE
    )
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), timeout_s)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise
    if proc.returncode != 0:
        raise RuntimeError(f"the enqueuer exited with {proc.returncode}")
    line = [x for x in out.decode().splitlines() if x.startswith("{")][-1]
    result: dict[str, Any] = json.loads(line)
    return result


async def run_enqueuer(started_at: dict[int, float], timeout_s: float) -> dict[int, float]:
    """Run this script again as the enqueuer; return its commit times once the handlers saw them."""
    commit_at = {int(k): float(v) for k, v in (await spawn_enqueuer(timeout_s))["commit_at"].items()}
    deadline = now() + 5.0  # the last jobs' handlers may still be on their way
    while now() < deadline and not all(i in started_at for i in commit_at):
        await asyncio.sleep(0.01)
    return commit_at


async def delayed_enqueuer_main(
    args: argparse.Namespace, enqueue_at: Callable[[int, float], Awaitable[float]]
) -> None:
    """The delayed enqueuer: `samples` jobs back to back, job i due delay_s + i * interval_ms after
    the start; `enqueue_at(i, due)` enqueues job i for the unix time `due` and returns the due
    time the library stored (unix seconds). Prints the stored due times and when the last
    enqueue returned, so the harness can check it came before the first due time."""
    start = wall()
    run_at: dict[int, float] = {}
    for i in range(args.samples):
        run_at[i] = await enqueue_at(i, start + args.delay_s + i * args.interval_ms / 1000)
    emit({"run_at": run_at, "enqueued_by": wall()})


async def run_delayed_enqueuer(
    started_at: dict[int, float], timeout_s: float, poll_s: float
) -> tuple[dict[int, float], float]:
    """Run the delayed enqueuer; wait for the handlers until every job started or the last one
    is a poll interval (plus 10 s) overdue. Returns the stored due times and when the last
    enqueue returned (both unix seconds)."""
    out = await spawn_enqueuer(timeout_s)
    run_at = {int(k): float(v) for k, v in out["run_at"].items()}
    last_due = max(run_at.values(), default=wall())
    deadline = now() + max(0.0, last_due - wall()) + poll_s + 10.0
    while now() < deadline and not all(i in started_at for i in run_at):
        await asyncio.sleep(0.05)
    return run_at, float(out["enqueued_by"])


def delayed_result(
    run_at: dict[int, float], started_at: dict[int, float], enqueued_by: float, samples: int
) -> dict[str, Any]:
    """Milliseconds from each job's stored due time to its handler's start."""
    values = [(started_at[i] - run_at[i]) * 1000 for i in sorted(run_at) if i in started_at]
    out: dict[str, Any] = percentiles(values)
    out["samples"] = len(values)
    out["missing"] = samples - len(values)
    out["early"] = sum(1 for v in values if v < 0)
    out["enqueued_before_first_due_ms"] = (min(run_at.values()) - enqueued_by) * 1000 if run_at else None
    return out


def single_result(jobs: int, warmup: int, elapsed_s: float, rows: int | None) -> dict[str, Any]:
    """The single workload's result: N counted calls in elapsed_s; rows = what the table holds."""
    return {
        "jobs": jobs,
        "warmup": warmup,
        "elapsed_s": elapsed_s,
        "jobs_per_s": jobs / elapsed_s if elapsed_s > 0 else float("nan"),
        "mean_ms": elapsed_s * 1000 / jobs if jobs else float("nan"),
        "rows": rows,
        "rows_expected": jobs + warmup,
    }


async def single_main(args: argparse.Namespace, enqueue_one: Callable[[int], Awaitable[Any]]) -> float:
    """The single workload's loop: `warmup` calls, then `jobs` timed calls back to back, each
    awaited before the next; returns the seconds the timed calls took."""
    for i in range(args.warmup):
        await enqueue_one(i)
    started = time.perf_counter()
    for i in range(args.warmup, args.warmup + args.jobs):
        await enqueue_one(i)
    return time.perf_counter() - started


def single_main_sync(args: argparse.Namespace, enqueue_one: Callable[[int], Any]) -> float:
    """single_main for a blocking client."""
    for i in range(args.warmup):
        enqueue_one(i)
    started = time.perf_counter()
    for i in range(args.warmup, args.warmup + args.jobs):
        enqueue_one(i)
    return time.perf_counter() - started


def emit(result: dict[str, Any]) -> None:
    """The result as the last line of stdout (the harness reads that line)."""
    sys.stdout.write(json.dumps(result) + "\n")
    sys.stdout.flush()


def now() -> float:
    return time.monotonic()


def wall() -> float:
    """Unix time, the clock PostgreSQL's now() reads on this machine (delayed workload)."""
    return time.time()
