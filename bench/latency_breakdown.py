"""Where an idle worker's enqueue -> start time goes, segment by segment.

Runs the latency workload of bench/peers/pgrun_worker.py (the one `make bench-peers` times: a
worker at concurrency 10 left idle, then a separate enqueuer process enqueuing one job every
20 ms) with clocks added inside the worker process, and splits each sample's enqueue -> start
time into:

  notify      the worker's NOTIFY arrives (Worker.poke), from the enqueue call's return
              (negative: the notification came before the enqueuer saw its answer)
  to claim    poke -> the claim task runs (the claim loop wakes and starts it)
  to send     the claim task -> claim_jobs sent (pool connection, parameters)
  claim       claim_jobs sent -> answered (the round trip and the server's work)
  rows        answered -> the claim's jobs queued (rows built, connection returned)
  to start    the claim's end -> the handler runs

Medians over the samples of each round, after the workload's warm-up; the slowest samples'
segments too (which segment makes the tail). Then the same server is asked what a claim of
one ready job costs right after an enqueue commits (on another connection), on a machine idle
for 20 ms before that enqueue ("cold", as in the workload) and on one busy with the previous
call ("hot"): SELECT 1 (the wake-up and the round trip alone) and claim_jobs of that job.

The clocks wrap private methods of pgrun.worker (Worker.poke, Worker._claim) and
pgrun.client._run_on_async: a refactor that renames them fails this script loudly.

Usage: python bench/latency_breakdown.py [--rounds 3] [--json PATH]
Without DATABASE_URL it starts an embedded server (durable settings).
"""

from __future__ import annotations

import argparse
import bisect
import importlib
import itertools
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))

from jobs_bench import server
from pgrun import migrate
from pgrun.config import from_env
from pgrun.eventloop import run_until_complete
from pgrun.testing import scratch_database

REPO = Path(__file__).resolve().parents[1]
PEERS = REPO / "bench" / "peers"
PROBE_ENV = "PGRUN_LATENCY_PROBE"
SEGMENTS = ("notify", "to claim", "to send", "claim", "rows", "to start", "total")
IDLE_S = 0.02


def probe_main() -> None:
    """The worker process (and, with --enqueuer, the enqueuer it spawns): pgrun_worker.py's
    own main, with clocks on the worker's claim path, their readings added to its JSON line."""
    sys.path.insert(0, str(PEERS))
    # Any: the methods are replaced with timed ones, signatures and all
    pgrun_worker: Any = importlib.import_module("pgrun_worker")
    now = importlib.import_module("_common").now

    if "--enqueuer" not in sys.argv:
        client_module: Any = importlib.import_module("pgrun.client")
        worker_module: Any = importlib.import_module("pgrun.worker")

        clocks: dict[str, Any] = {k: [] for k in ("poke", "claim", "sent", "answer", "queued")}
        worker_cls = worker_module.Worker
        poke, claim, run_on = worker_cls.poke, worker_cls._claim, client_module._run_on_async

        def timed_poke(self: Any) -> None:
            clocks["poke"].append(now())
            poke(self)

        async def timed_claim(self: Any, *args: Any) -> None:
            clocks["claim"].append(now())
            await claim(self, *args)
            clocks["queued"].append(now())

        async def timed_run_on(conn: Any, call: Any) -> Any:
            if "claim_jobs" not in call.query:
                return await run_on(conn, call)
            async with conn.cursor(row_factory=call.row_factory) as cur:
                clocks["sent"].append(now())
                await cur.execute(call.query, call.params)
                clocks["answer"].append(now())
                return call.finish(await cur.fetchall())

        worker_cls.poke = timed_poke
        worker_cls._claim = timed_claim
        client_module._run_on_async = timed_run_on
        latency_result, emit = pgrun_worker.latency_result, pgrun_worker.emit

        def kept_result(commit_at: dict[int, float], started_at: dict[int, float], *rest: Any) -> Any:
            clocks["commit_at"] = commit_at
            clocks["started_at"] = started_at
            return latency_result(commit_at, started_at, *rest)

        def emit_with_clocks(result: dict[str, Any]) -> None:
            result["clocks"] = clocks
            emit(result)

        pgrun_worker.latency_result = kept_result
        pgrun_worker.emit = emit_with_clocks
    # the loop `pgrun worker` runs on (JOBS_EVENT_LOOP; uvloop's unless named)
    run_until_complete(pgrun_worker.main(), from_env())


def segments(result: dict[str, Any], warmup: int) -> list[dict[str, float]]:
    """Each sample's segments (ms): the last poke and the last claim before its handler started."""
    clocks = result["clocks"]
    commit_at = {int(k): v for k, v in clocks["commit_at"].items()}
    started_at = {int(k): v for k, v in clocks["started_at"].items()}
    poke, claim, sent, answer, queued = (clocks[k] for k in ("poke", "claim", "sent", "answer", "queued"))
    rows = []
    for n in sorted(commit_at):
        if n < warmup or n not in started_at:
            continue
        start = started_at[n]
        p = poke[bisect.bisect_right(poke, start) - 1]
        c = bisect.bisect_right(claim, start) - 1
        if c < 0 or claim[c] < p:
            continue  # started by a claim the poll or a freed slot sent: no NOTIFY path to split
        marks = (commit_at[n], p, claim[c], sent[c], answer[c], queued[c], start)
        parts = [b - a for a, b in itertools.pairwise(marks)] + [start - commit_at[n]]
        rows.append({name: 1e3 * value for name, value in zip(SEGMENTS, parts, strict=True)})
    return rows


def run_workload(dsn: str) -> list[dict[str, float]]:
    out = subprocess.run(
        [sys.executable, __file__, "--dsn", dsn, "--mode", "latency", "--concurrency", "10"],
        env=dict(os.environ, **{PROBE_ENV: "1"}),
        cwd=PEERS,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    result = json.loads([line for line in out.splitlines() if line.startswith("{")][-1])
    return segments(result, int(result.get("warmup", 5)))


def idle_costs(dsn: str, calls: int = 60) -> dict[str, dict[str, float]]:
    """SELECT 1 and a claim of one ready job right after an enqueue commits, the machine idle
    for IDLE_S before that enqueue or busy with the previous call (medians, ms)."""
    got: dict[str, dict[str, list[float]]] = {"cold": {}, "hot": {}}
    claim = "SELECT * FROM pgrun.claim_jobs('probe', 30, 10, NULL, ARRAY['bench_noop'])"
    with (
        psycopg.connect(dsn, autocommit=True, options="-c synchronous_commit=off") as conn,
        psycopg.connect(dsn, autocommit=True) as other,
    ):
        for n in range(calls):
            for kind in ("cold", "hot") if n % 2 == 0 else ("hot", "cold"):
                for name, query in (("SELECT 1", "SELECT 1"), ("claim_jobs, one job", claim)):
                    if kind == "cold":
                        time.sleep(IDLE_S)
                    # as in the workload: an enqueue commits, then the claim goes out at once
                    other.execute("SELECT pgrun.enqueue_job('bench_noop', '{}')")
                    started = time.perf_counter()
                    conn.execute(query).fetchall()
                    got[kind].setdefault(name, []).append(1e3 * (time.perf_counter() - started))
                    conn.execute(claim)  # nothing left ready for the next call
    return {kind: {name: statistics.median(v) for name, v in calls_.items()} for kind, calls_ in got.items()}


def main() -> int:
    if os.environ.get(PROBE_ENV):
        probe_main()
        return 0
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", default="bench/results/latency_breakdown.json")
    args = parser.parse_args()
    rounds: list[dict[str, Any]] = []
    with server(fast=False) as admin:
        for n in range(args.rounds):
            with scratch_database(admin, prefix="pgrun_latency") as dsn:
                rows = run_workload(dsn)
            medians = {name: statistics.median(r[name] for r in rows) for name in SEGMENTS}
            slowest = sorted(rows, key=lambda r: r["total"])[-max(1, len(rows) // 50) :]
            rounds.append({"samples": len(rows), "median": medians, "slowest": slowest})
            print(
                f"round {n + 1} ({len(rows)} samples), medians ms: "
                + ", ".join(f"{name} {medians[name]:.3f}" for name in SEGMENTS),
                flush=True,
            )
            for r in slowest:
                print("    slow: " + ", ".join(f"{name} {r[name]:.2f}" for name in SEGMENTS))
        with scratch_database(admin, prefix="pgrun_latency") as dsn:
            migrate.migrate(dsn)
            idle = idle_costs(dsn)
    print()
    print("| segment | median ms (median of rounds) |")
    print("|---|---:|")
    for name in SEGMENTS:
        print(f"| {name} | {statistics.median(r['median'][name] for r in rounds):.3f} |")
    print()
    print(f"| call, right after an enqueue | idle {IDLE_S * 1e3:.0f} ms before, ms | back to back, ms |")
    print("|---|---:|---:|")
    for name in idle["cold"]:
        print(f"| {name} | {idle['cold'][name]:.3f} | {idle['hot'][name]:.3f} |")
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps({"rounds": rounds, "idle_costs": idle}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
