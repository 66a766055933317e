"""What an inlined sql helper saves: pgrun._enqueue_run_at declared IMMUTABLE (as before issue
15's third pass; PostgreSQL then never inlines it, since its body is STABLE) against STABLE (as
shipped, inlined), on one database, the declaration switched between rounds.

Each round, for each declaration: single enqueue (enqueue_job in a loop on one connection, each
call its own transaction, for --seconds) and bulk enqueue (--batches enqueue_jobs calls of
10,000 jobs), each from an empty jobs table and a fresh checkpoint. Ratios are of the medians.
The ALTER FUNCTION takes effect in the next transaction of every session, so the two sides
share everything else: server, database, connection, statistics.

Usage: python bench/inlining_bench.py [--rounds N] [--seconds S] [--batches B] [--fast]
Without DATABASE_URL it starts an embedded server (durable settings unless --fast).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from jobs_bench import bench_bulk_enqueue, bench_single_enqueue, checkpoint, connect, server
from pgrun import migrate
from pgrun.testing import scratch_database

HELPER = "pgrun._enqueue_run_at(timestamptz, numeric, timestamptz)"
DECLARATIONS = ("IMMUTABLE", "STABLE")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--batches", type=int, default=3)
    parser.add_argument("--fast", action="store_true", help="embedded server without fsync")
    args = parser.parse_args()
    single: dict[str, list[float]] = {d: [] for d in DECLARATIONS}
    bulk: dict[str, list[float]] = {d: [] for d in DECLARATIONS}
    with server(args.fast) as admin, scratch_database(admin, prefix="pgrun_inline") as dsn:
        migrate.migrate(dsn)
        try:
            for n in range(args.rounds):
                for declaration in DECLARATIONS:
                    with connect(dsn) as conn:
                        conn.execute(f"ALTER FUNCTION {HELPER} {declaration}")
                    checkpoint(dsn)
                    single[declaration].append(bench_single_enqueue(dsn, args.seconds))
                    checkpoint(dsn)
                    bulk[declaration].append(bench_bulk_enqueue(dsn, args.batches))
                    print(
                        f"round {n + 1} {declaration}: single {single[declaration][-1]:.0f}/s, "
                        f"bulk {bulk[declaration][-1]:.0f} rows/s",
                        flush=True,
                    )
        finally:
            with connect(dsn) as conn:
                conn.execute(f"ALTER FUNCTION {HELPER} STABLE")
    print()
    print("| declaration | single enqueue /s | bulk enqueue rows/s |")
    print("|---|---:|---:|")
    for declaration in DECLARATIONS:
        print(
            f"| {declaration} | {statistics.median(single[declaration]):,.0f} "
            f"| {statistics.median(bulk[declaration]):,.0f} |"
        )
    ratio_single = statistics.median(single["STABLE"]) / statistics.median(single["IMMUTABLE"])
    ratio_bulk = statistics.median(bulk["STABLE"]) / statistics.median(bulk["IMMUTABLE"])
    print(f"| STABLE / IMMUTABLE | {ratio_single:.3f} | {ratio_bulk:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
