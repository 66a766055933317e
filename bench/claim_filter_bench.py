"""What a claim costs when ready jobs it may not take sit ahead of the ones it may.

claim_jobs walks jobs_claim_idx (priority, run_at, id) in order and reads each row's queue and
job type from the table: jobs of another queue or type than the claimer asked for, of a paused
type, or of a capped type at its cap, are read and passed over. Until sql/0020 a claim read all
of them when many sat ahead (a better priority, an earlier run_at); now the walk stops at its
bound and the rest comes from jobs_claim_type_idx, so every case should read about the same as
nothing ahead (docs/lease-machine.md, "Ready jobs a claim passes over").

Each case starts from an empty jobs table: 200 ready jobs the claimer may take (type own.job,
queue default, priority 100), then --ahead ready jobs ahead of them (priority 10) that it may
not take, then ANALYZE; then --claims claims of up to 10 jobs, timed from the client, the
first three not counted. Cases: nothing ahead (the baseline); another job type, the claimer
filtering on its own; a paused type, no filter; another queue, the claimer filtering on its own.

Usage: python bench/claim_filter_bench.py [--ahead N] [--claims N] [--fast]
Without DATABASE_URL it starts an embedded server (durable settings unless --fast).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from jobs_bench import connect, load_ready, reset, server
from pgrun import migrate
from pgrun import queries as q
from pgrun.testing import scratch_database


def claim_ms(dsn: str, claims: int, **filters: Any) -> float:
    params = {
        "worker_id": "bench",
        "lease_seconds": 60,
        "max_jobs": 10,
        "queues": None,
        "job_types": None,
    }
    params.update(filters)
    times = []
    with connect(dsn) as conn:
        for _ in range(claims):
            start = time.perf_counter()
            rows = conn.execute(q.CLAIM_JOBS, params, prepare=True).fetchall()
            times.append(time.perf_counter() - start)
            assert len(rows) == 10, f"claimed {len(rows)}, not 10: the case ran out of jobs"
    return statistics.median(times[3:]) * 1000


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--ahead", type=int, default=100_000)
    parser.add_argument("--claims", type=int, default=18)
    parser.add_argument("--fast", action="store_true", help="embedded server without fsync")
    args = parser.parse_args()
    cases = [
        ("nothing ahead", None, {"job_types": ["own.job"]}),
        (
            "another job type ahead, claimer filters on its type",
            ("other.job", "default"),
            {"job_types": ["own.job"]},
        ),
        ("a paused type ahead, no filter", ("paused.job", "default"), {}),
        ("another queue ahead, claimer filters on its queue", ("own.job", "bulk"), {"queues": ["default"]}),
    ]
    results = {}
    with server(args.fast) as admin, scratch_database(admin, prefix="pgrun_claim_filter") as dsn:
        migrate.migrate(dsn)
        with connect(dsn) as conn:  # reset() keeps job_runtime_configs: paused in every case
            conn.execute("SELECT pgrun.set_job_runtime_config('paused.job', paused => true)")
        for label, ahead, filters in cases:
            reset(dsn)
            load_ready(dsn, 200, "own.job", queue="default", priority=100)
            if ahead is not None:
                load_ready(dsn, args.ahead, ahead[0], queue=ahead[1], priority=10)
            with connect(dsn) as conn:
                conn.execute("ANALYZE pgrun.jobs")
            results[label] = claim_ms(dsn, args.claims, **filters)
            print(f"{label}: {results[label]:.2f} ms", flush=True)
    base = results["nothing ahead"]
    print()
    print(f"| case ({args.ahead:,} jobs ahead) | claim of 10, median ms | vs nothing ahead |")
    print("|---|---:|---:|")
    for label, ms in results.items():
        print(f"| {label} | {ms:.2f} | {ms / base:.1f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
