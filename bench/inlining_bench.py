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
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from jobs_bench import (
    bench_bulk_enqueue,
    bench_single_enqueue,
    checkpoint,
    connect,
    print_switched,
    server,
    switched_rounds,
)
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
    with server(args.fast) as admin, scratch_database(admin, prefix="pgrun_inline") as dsn:
        migrate.migrate(dsn)

        def declare(declaration: str) -> None:
            with connect(dsn) as conn:
                conn.execute(f"ALTER FUNCTION {HELPER} {declaration}")

        def from_checkpoint(measure: Callable[[], float]) -> float:
            checkpoint(dsn)
            return measure()

        try:
            results = switched_rounds(
                args.rounds,
                {d: partial(declare, d) for d in DECLARATIONS},
                {
                    "single enqueue /s": lambda: from_checkpoint(
                        lambda: bench_single_enqueue(dsn, args.seconds)
                    ),
                    "bulk enqueue rows/s": lambda: from_checkpoint(
                        lambda: bench_bulk_enqueue(dsn, args.batches)
                    ),
                },
            )
        finally:
            declare("STABLE")
    print_switched(results, over=("STABLE", "IMMUTABLE"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
