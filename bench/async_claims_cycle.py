"""The SQL cycle (claim_jobs + complete_jobs) with durable and with asynchronous claims.

bench/jobs_bench.py's claim -> complete cycle (4 connections, each driven by its own process,
prepared binary statements), run in alternating rounds in two ways on one durable server:

  * durable   every commit waits for the WAL flush (what jobs_bench measures);
  * async     each process claims on a connection whose session has synchronous_commit = off
              and completes on a second, durable one: what the Python worker does with
              JOBS_ASYNC_CLAIMS (docs/lease-machine.md, "Durability").

Usage: python bench/async_claims_cycle.py [--batch 1 10 100] [--jobs N] [--rounds 3] [--json PATH]
Without DATABASE_URL it starts an embedded server (durable settings).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path
from typing import Any

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))

from jobs_bench import (
    CLAIM,
    COMPLETE,
    _checked,
    _int8,
    _run,
    _value,
    connect,
    server,
    timed_cycle,
)
from pgrun import migrate
from pgrun.testing import scratch_database

ASYNC = "-c synchronous_commit=off"


def _split_worker(dsn: str, i: int, batch: int, asynchronous: bool, ready: Any, counts: Any) -> None:
    """One process: claim a batch on the claim connection, complete it on the other."""
    done = 0
    with (
        psycopg.connect(dsn, autocommit=True, options=ASYNC if asynchronous else "") as claims,
        connect(dsn) as outcomes,
    ):
        _checked(claims.pgconn.prepare(b"claim", CLAIM), psycopg.pq.ExecStatus.COMMAND_OK)
        _checked(outcomes.pgconn.prepare(b"complete", COMPLETE), psycopg.pq.ExecStatus.COMMAND_OK)
        worker = f"bench-{i}".encode()
        size = batch.to_bytes(4, "big")
        ready.wait()
        while True:
            claimed = _run(claims.pgconn, b"claim", [worker, size])
            count = _int8(claimed)
            if not count:
                break
            completed = _int8(_run(outcomes.pgconn, b"complete", [_value(claimed, 1), _value(claimed, 2)]))
            assert completed == count, f"completed {completed} of {count}"
            done += count
    counts.put(done)


def cycle(dsn: str, batch: int, jobs: int, asynchronous: bool, connections: int = 4) -> float:
    return timed_cycle(
        dsn,
        jobs,
        connections,
        lambda i, ready, counts: _split_worker(dsn, i, batch, asynchronous, ready, counts),
    )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--batch", type=int, nargs="*", default=[1, 10, 100])
    parser.add_argument("--jobs", type=int, help="jobs per run (default: 10,000 x batch, at most 100,000)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", default="bench/results/async-claims-cycle.json")
    args = parser.parse_args()
    samples: dict[str, dict[str, list[float]]] = {str(b): {"durable": [], "async": []} for b in args.batch}
    with server(False) as admin, scratch_database(admin, prefix="pgrun_bench") as dsn:
        migrate.migrate(dsn)
        for n in range(args.rounds):
            for batch in args.batch:
                jobs = args.jobs or min(10_000 * batch, 100_000)
                order = [False, True] if n % 2 == 0 else [True, False]
                for asynchronous in order:
                    rate = cycle(dsn, batch, jobs, asynchronous)
                    name = "async" if asynchronous else "durable"
                    samples[str(batch)][name].append(rate)
                    print(f"round {n + 1} batch {batch:>3} {name:>7}: {rate:,.0f} jobs/s", flush=True)
    lines = ["| batch | durable jobs/s | async jobs/s | async / durable |", "|---:|---:|---:|---:|"]
    for batch, by_name in samples.items():
        on_flush = statistics.median(by_name["durable"])
        no_wait = statistics.median(by_name["async"])
        lines.append(f"| {batch} | {on_flush:,.0f} | {no_wait:,.0f} | {no_wait / on_flush:.2f} |")
    table = "\n".join(lines) + "\n"
    print()
    print(table)
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    report = {
        "command": "python bench/async_claims_cycle.py " + " ".join(sys.argv[1:]),
        "cpus": os.cpu_count(),
        "samples": samples,
        "table": table,
    }
    out.write_text(json.dumps(report, indent=2))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
