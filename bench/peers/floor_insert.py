"""The single-enqueue floor: no queue library, one plain INSERT per durable commit.

A yardstick for the single workload, not a contestant: one autocommit psycopg 3 connection
inserts one row per statement (its own transaction and commit) into a plain table
`floor_jobs (id bigserial PRIMARY KEY, job_type text, payload jsonb)`, back to back, with the
statement prepared (psycopg's `prepare=True`). What one client can commit one row at a time on
this server; every library's single enqueue pays at least this. Other workloads print `skipped`.
"""

from __future__ import annotations

import psycopg
from _common import NOOP, emit, parse_args, single_main_sync, single_result
from psycopg.types.json import Jsonb

SCHEMA = "CREATE TABLE floor_jobs (id bigserial PRIMARY KEY, job_type text NOT NULL, payload jsonb NOT NULL)"
INSERT = "INSERT INTO floor_jobs (job_type, payload) VALUES (%s, %s)"


def main() -> None:
    args = parse_args("single-enqueue floor (plain INSERT per commit)")
    base = {"contestant": "floor: INSERT per commit", "mode": args.mode}
    if args.mode != "single":
        emit({**base, "skipped": "a yardstick for the single workload only"})
        return
    with psycopg.connect(args.dsn, autocommit=True) as conn:
        conn.execute(SCHEMA)
        elapsed = single_main_sync(
            args, lambda i: conn.execute(INSERT, (NOOP, Jsonb({"n": i})), prepare=True)
        )
        row = conn.execute("SELECT count(*) FROM floor_jobs").fetchone()
    out = single_result(args.jobs, args.warmup, elapsed, row[0] if row else None)
    out["settings"] = {
        "api": "INSERT one row, autocommit (one commit per row), prepared",
        "driver": "psycopg 3, 1 connection",
    }
    emit({**base, **out, "versions": {"psycopg": psycopg.__version__}})


if __name__ == "__main__":
    main()
