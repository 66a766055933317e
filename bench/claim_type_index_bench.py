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
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from jobs_bench import (
    bench_bulk_enqueue,
    bench_cycle,
    checkpoint,
    connect,
    print_switched,
    server,
    switched_rounds,
)
from pgrun import migrate
from pgrun.testing import scratch_database


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--batches", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=200_000)
    parser.add_argument("--fast", action="store_true", help="embedded server without fsync")
    args = parser.parse_args()
    with server(args.fast) as admin, scratch_database(admin, prefix="pgrun_type_idx") as dsn:
        migrate.migrate(dsn)
        with connect(dsn) as conn:  # the index exactly as the schema defines it
            row = conn.execute("SELECT pg_get_indexdef('pgrun.jobs_claim_type_idx'::regclass)").fetchone()
        assert row is not None
        index = row[0]

        def switch(present: bool) -> None:
            with connect(dsn) as conn:
                conn.execute("DROP INDEX IF EXISTS pgrun.jobs_claim_type_idx")
                if present:
                    conn.execute(index)
            checkpoint(dsn)

        results = switched_rounds(
            args.rounds,
            {"with the index": lambda: switch(True), "without": lambda: switch(False)},
            {
                "bulk enqueue rows/s": lambda: bench_bulk_enqueue(dsn, args.batches),
                "batch-100 cycle jobs/s": lambda: bench_cycle(dsn, 100, args.jobs),
            },
        )
    print_switched(results, over=("with the index", "without"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
