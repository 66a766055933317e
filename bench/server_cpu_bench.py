"""Server CPU per call on the hot path, this checkout against an older commit.

The end-to-end numbers of ab_bench.py move by ±10% between runs on a shared machine; this
one leaves the network, the commit and the client out: each round runs, inside one `DO`
block on the server, 2,000 `enqueue_job` calls, then 20 batches of claim_jobs + complete_jobs
of 100 jobs, and divides the elapsed server time by the calls (jobs). The two schemas sit in
two databases of one server and take turns, round by round; the ratios are the medians of the
per-round ratios. Both are called as the superuser (the role model's privilege checks are the
same on both sides, so they cancel out), or with --roles as clients call them under the role
model: enqueue as a producer bound to one organization, the cycle as a worker with a queue
scope (the base must have the role model then).

Usage: python bench/server_cpu_bench.py [--base REF] [--rounds N] [--roles]
Needs DATABASE_URL (a server where it may create databases); `make bench` gives it a
throw-away one. The default base is HEAD, so before a commit it measures the change at hand.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

import psycopg

from ab_bench import grant_scopes
from pgrun import migrate
from pgrun.testing import extract_schema, login_roles, scratch_database

ENQUEUE = """
DO $$
DECLARE t0 timestamptz := clock_timestamp();
BEGIN
    FOR i IN 1..2000 LOOP
        PERFORM pgrun.enqueue_job(job_type => 'cpu.job', payload => jsonb_build_object('n', i));
    END LOOP;
    PERFORM set_config('bench.us', (extract(EPOCH FROM clock_timestamp() - t0) * 1e6 / 2000)::text, false);
END $$
"""
CYCLE = """
DO $$
DECLARE t0 timestamptz := clock_timestamp(); ids uuid[]; tokens uuid[]; n int := 0;
BEGIN
    FOR r IN 1..20 LOOP
        SELECT array_agg(c.job_id), array_agg(c.lease_token) INTO ids, tokens
        FROM pgrun.claim_jobs('cpu', 60, 100, NULL, ARRAY['cpu.job']) AS c;
        PERFORM pgrun.complete_jobs(ids, tokens, array_fill('{"ok": true}'::jsonb, ARRAY[cardinality(ids)]));
        n := n + cardinality(ids);
    END LOOP;
    PERFORM set_config('bench.us', (extract(EPOCH FROM clock_timestamp() - t0) * 1e6 / n)::text, false);
END $$
"""


def per_call_us(dsn: str, block: str) -> float:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(block)
        row = conn.execute("SELECT current_setting('bench.us')").fetchone()
        assert row is not None
        return float(row[0])


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--base", default="HEAD", help="the commit to compare with (default HEAD: the uncommitted change)"
    )
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--roles", action="store_true", help="call as a bound producer and a scoped worker")
    args = parser.parse_args()
    admin = os.environ.get("DATABASE_URL")
    if not admin:
        print("server_cpu_bench: DATABASE_URL is not set", file=sys.stderr)
        return 2
    samples: dict[str, dict[str, list[float]]] = {s: {"enqueue": [], "cycle": []} for s in ("base", "head")}
    with (
        tempfile.TemporaryDirectory(prefix="pgrun_cpu_") as folder,
        scratch_database(admin, prefix="pgrun_cpu_base") as base,
        scratch_database(admin, prefix="pgrun_cpu_head") as head,
    ):
        os.environ["PGRUN_SCHEMA_DIR"] = str(extract_schema(args.base, Path(folder)))
        try:
            migrate.migrate(base, prefix="pgrun_cpu_base")
        finally:
            del os.environ["PGRUN_SCHEMA_DIR"]
        migrate.migrate(head)
        kinds: dict[str, str | None] = {"producer": "producer", "worker": "worker"} if args.roles else {}
        with (
            login_roles(admin, kinds, prefix="pgrun_cpu_base") as base_roles,
            login_roles(admin, kinds) as head_roles,
        ):
            # (owner DSN, enqueue as, cycle as)
            setups = {"base": (base, base, base), "head": (head, head, head)}
            for name, dsn, made in (("base", base, base_roles), ("head", head, head_roles)):
                if made:
                    grant_scopes(dsn, made["producer"].name, made["worker"].name)
                    setups[name] = (dsn, made["producer"].dsn(dsn), made["worker"].dsn(dsn))
            for n in range(args.rounds):
                for name, (dsn, producer, worker) in setups.items():
                    samples[name]["enqueue"].append(per_call_us(producer, ENQUEUE))
                    samples[name]["cycle"].append(per_call_us(worker, CYCLE))
                    with psycopg.connect(dsn, autocommit=True) as conn:
                        conn.execute("TRUNCATE pgrun.jobs CASCADE")
                last = (f"{s} {v['enqueue'][-1]:.0f}/{v['cycle'][-1]:.1f} us" for s, v in samples.items())
                print(f"round {n + 1}: " + ", ".join(last), flush=True)
    print()
    print("| per call, server CPU | base | head | head / base (median of per-round ratios) |")
    print("|---|---:|---:|---:|")
    for key, label in (("enqueue", "enqueue_job"), ("cycle", "claim + complete, per job (batches of 100)")):
        base_us, head_us = samples["base"][key], samples["head"][key]
        ratio = statistics.median(h / b for h, b in zip(head_us, base_us, strict=True))
        base_median, head_median = statistics.median(base_us), statistics.median(head_us)
        print(f"| {label} | {base_median:.1f} us | {head_median:.1f} us | {ratio:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
