"""What jobs_claim_type_idx (sql/0020) costs the hot path: the same schema with the index and
with it dropped, on one database, switched between rounds.

Each round, for each side (the order alternates): bulk enqueue (--batches enqueue_jobs calls of
10,000 jobs from an empty table and a fresh checkpoint) and the batch-100 cycle (claim_jobs +
complete_jobs on 4 connections until --jobs fresh ready jobs are done, as jobs_bench.py runs
it). With the index dropped claim_jobs still works (its per-pair step is then planned over the
primary key), and the cycle never takes that step: every ready job is one it may take. So the
difference is the index's upkeep: one more entry per enqueued job, and one more index for
vacuum to clean of the entries of claimed jobs. Ratios are of the medians.

Usage: python bench/claim_type_index_bench.py [--rounds N] [--batches B] [--jobs N] [--fast]
Without DATABASE_URL it starts an embedded server (durable settings unless --fast).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from jobs_bench import bench_bulk_enqueue, bench_cycle, checkpoint, connect, server
from pgrun import migrate
from pgrun.testing import scratch_database

INDEX = (
    "CREATE INDEX jobs_claim_type_idx ON pgrun.jobs (job_type, queue, priority, run_at, id) "
    "WHERE status <> 'running' AND finished_at IS NULL"
)
SIDES = ("with the index", "without")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--batches", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=200_000)
    parser.add_argument("--fast", action="store_true", help="embedded server without fsync")
    args = parser.parse_args()
    bulk: dict[str, list[float]] = {side: [] for side in SIDES}
    cycle: dict[str, list[float]] = {side: [] for side in SIDES}
    with server(args.fast) as admin, scratch_database(admin, prefix="pgrun_type_idx") as dsn:
        migrate.migrate(dsn)
        for n in range(args.rounds):
            for side in SIDES if n % 2 == 0 else SIDES[::-1]:
                with connect(dsn) as conn:
                    conn.execute("DROP INDEX IF EXISTS pgrun.jobs_claim_type_idx")
                    if side == SIDES[0]:
                        conn.execute(INDEX)
                checkpoint(dsn)
                bulk[side].append(bench_bulk_enqueue(dsn, args.batches))
                cycle[side].append(bench_cycle(dsn, 100, args.jobs))
                print(
                    f"round {n + 1} {side}: bulk {bulk[side][-1]:.0f} rows/s, "
                    f"cycle {cycle[side][-1]:.0f} jobs/s",
                    flush=True,
                )
    print()
    print("| | bulk enqueue rows/s | batch-100 cycle jobs/s |")
    print("|---|---:|---:|")
    for side in SIDES:
        print(f"| {side} | {statistics.median(bulk[side]):,.0f} | {statistics.median(cycle[side]):,.0f} |")
    ratio_bulk = statistics.median(bulk[SIDES[0]]) / statistics.median(bulk[SIDES[1]])
    ratio_cycle = statistics.median(cycle[SIDES[0]]) / statistics.median(cycle[SIDES[1]])
    print(f"| with / without | {ratio_bulk:.3f} | {ratio_cycle:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
