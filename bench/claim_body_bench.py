"""claim_jobs of this checkout against claim_jobs of an older commit, on one database: the
function's body is switched between rounds (CREATE OR REPLACE from plpgsql/jobs/claim.sql of
each tree), everything else (schema, indexes, data, server) is this checkout's.

Each round, for each body (the order alternates):

  * the batch-100 cycle (claim_jobs + complete_jobs on 4 connections until --jobs fresh ready
    jobs are done, as jobs_bench.py runs it), unfiltered;
  * the same cycle with a job-type filter naming the jobs' own type (as the Python worker
    claims: a filter is in play, every ready job is one it may take);
  * an idle claim: one job enqueued, 20 ms of quiet, then claim_jobs(max_jobs => 500,
    job_types => its type) on a connection with synchronous_commit off (the worker's claim
    connection), timed from the client; the median of --samples, the first 20 not counted.

The base's claim_jobs must have this checkout's signature. Ratios are of the medians.

Usage: python bench/claim_body_bench.py [--base REF] [--rounds N] [--jobs N] [--samples N] [--fast]
Without DATABASE_URL it starts an embedded server (durable settings unless --fast).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from jobs_bench import CLAIM_OWN_TYPE, bench_cycle, connect, print_switched, reset, server, switched_rounds
from pgrun import migrate
from pgrun.testing import scratch_database

ROOT = Path(__file__).resolve().parent.parent
CLAIM_FILE = "plpgsql/jobs/claim.sql"


def idle_claim_ms(dsn: str, samples: int) -> float:
    reset(dsn)
    times = []
    with connect(dsn) as claimer, connect(dsn) as producer:
        claimer.execute("SET synchronous_commit = off")
        for _ in range(samples):
            producer.execute("SELECT pgrun.enqueue_job('bench.noop')")
            time.sleep(0.02)
            start = time.perf_counter()
            rows = claimer.execute(
                "SELECT job_id, lease_token FROM pgrun.claim_jobs('bench', 60, 500, NULL, '{bench.noop}')",
                prepare=True,
            ).fetchall()
            times.append(time.perf_counter() - start)
            assert len(rows) == 1, f"claimed {len(rows)} jobs, not 1"
            claimer.execute("SELECT pgrun.complete_job(%s, %s)", rows[0])
    return statistics.median(times[20:]) * 1000


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--base", default="HEAD~1")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--jobs", type=int, default=200_000)
    parser.add_argument("--samples", type=int, default=120)
    parser.add_argument("--fast", action="store_true", help="embedded server without fsync")
    args = parser.parse_args()
    bodies = {
        f"base ({args.base})": subprocess.run(
            ["git", "show", f"{args.base}:{CLAIM_FILE}"], cwd=ROOT, check=True, capture_output=True, text=True
        ).stdout,
        "head": (ROOT / CLAIM_FILE).read_text(),
    }
    with server(args.fast) as admin, scratch_database(admin, prefix="pgrun_claim_body") as dsn:
        migrate.migrate(dsn)

        def switch(body: str) -> None:
            with connect(dsn) as conn:
                conn.execute(body)

        base, head = bodies
        results = switched_rounds(
            args.rounds,
            {name: partial(switch, body) for name, body in bodies.items()},
            {
                "cycle, unfiltered": lambda: bench_cycle(dsn, 100, args.jobs),
                "cycle, type filter": lambda: bench_cycle(dsn, 100, args.jobs, claim=CLAIM_OWN_TYPE),
                "idle claim ms": lambda: idle_claim_ms(dsn, args.samples),
            },
        )
    print_switched(results, over=(head, base))
    return 0


if __name__ == "__main__":
    sys.exit(main())
