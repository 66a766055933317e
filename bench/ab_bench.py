"""The hot path of this checkout against an older commit, side by side on one server.

Measures single enqueue/s (enqueue_job in a loop, one connection), bulk enqueue rows/s
(enqueue_jobs of 10,000 jobs, five calls; one with --quick) and the batch-100 cycle
(claim_jobs + complete_jobs, 4 connections, 200,000 jobs) for three setups in alternating
rounds, so drift on a shared machine falls on all of them alike; the ratios come from the
medians:

  * base          the schema of --base (default: the last commit before the role model),
                  migrated by a login role and called by it, as deployments did then (every
                  client was the owner); a base that has the role model already (migration
                  0007) is installed with its own role prefix instead and measured twice,
                  as "base, admin" and "base, roles", called exactly as head is;
  * head, admin   this checkout's schema, called by a login role of pgrun_admin (no tenant
                  filter);
  * head, roles   this checkout's schema, called as clients call it under the role model:
                  enqueue by a producer bound to one organization (its jobs are stamped),
                  the cycle by a worker role with a queue scope.

No setup calls as a superuser: a superuser skips every privilege check PostgreSQL makes on
the functions and tables a statement uses, which no production client does.

Usage: python bench/ab_bench.py [--base REF] [--quick] [--fast] [--json PATH]
Without DATABASE_URL it starts an embedded server (durable settings unless --fast).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))

from jobs_bench import bench_bulk_enqueue, bench_cycle, bench_single_enqueue, server
from pgrun import migrate
from pgrun.testing import extract_schema, login_roles, scratch_database, set_database_owner

REPO = Path(__file__).resolve().parents[1]
# The last commit before migration 0007 (the role model): every client was the owner then.
DEFAULT_BASE = "5672efb"
ORGANIZATION = "0b0e0f00-0000-4000-8000-000000000001"
# The role prefix of a base that has the role model (head keeps pgrun's default).
BASE_PREFIX = "pgrun_ab_base"
MEASURES = ("single_enqueue_per_s", "bulk_enqueue_rows_per_s", "cycle_batch_100_jobs_per_s")


@dataclass(frozen=True)
class AdminSides:
    """The two sides of a call-by-call comparison (``admin_sides``): each side's scratch
    database as the server's superuser sees it, and the DSN of its admin login role."""

    databases: dict[str, str]
    dsns: dict[str, str]


def grant_scopes(dsn: str, producer: str, worker: str) -> None:
    """The producer bound to one organization, the worker scoped to the default queue."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        bound = "SELECT pgrun.set_role_access(%s, organization_ids => ARRAY[%s]::uuid[])"
        conn.execute(bound, (producer, ORGANIZATION))
        conn.execute("SELECT pgrun.set_role_access(%s, queues => ARRAY['default'])", (worker,))


def base_of(name: str, medians: dict[str, Any]) -> str:
    """The base setup a head setup is compared with: the same kind of caller when the base has
    the role model, else the one legacy base."""
    twin = "base, " + name.split(", ", 1)[1]
    return twin if twin in medians else "base"


def run_rounds(
    setups: dict[str, tuple[str, str | None, str | None]],
    rounds: int,
    seconds: float,
    jobs: int,
    batches: int,
    samples: dict[str, dict[str, list[float]]],
) -> None:
    """Alternating rounds: every setup once per round, so drift falls on all of them alike; the
    order rotates by one setup each round, so no setup always runs after the same one (whose
    vacuum and checkpoint work may still be going on)."""
    names = list(setups)
    for n in range(rounds):
        for name in names[n % len(names) :] + names[: n % len(names)]:
            dsn, producer, worker = setups[name]
            enqueue = bench_single_enqueue(dsn, seconds, driver_dsn=producer)
            bulk = bench_bulk_enqueue(dsn, batches, driver_dsn=producer)
            cycle = bench_cycle(dsn, 100, jobs, driver_dsn=worker)
            got = samples.setdefault(name, {key: [] for key in MEASURES})
            got["single_enqueue_per_s"].append(enqueue)
            got["bulk_enqueue_rows_per_s"].append(bulk)
            got["cycle_batch_100_jobs_per_s"].append(cycle)
            print(
                f"round {n + 1} {name}: enqueue {enqueue:.0f}/s, bulk {bulk:.0f} rows/s, "
                f"cycle {cycle:.0f} jobs/s",
                flush=True,
            )


@contextmanager
def schema_at(ref: str) -> Iterator[Path]:
    """sql/ and plpgsql/ as they were at ``ref``, in a temporary folder."""
    with tempfile.TemporaryDirectory(prefix="pgrun_ab_") as folder:
        yield extract_schema(ref, Path(folder))


@contextmanager
def admin_sides(base: str, prefix: str, error: Callable[[str], NoReturn]) -> Iterator[AdminSides]:
    """This checkout's schema and ``base``'s on one server (DATABASE_URL's, else an embedded
    durable one), each in a scratch database named from ``prefix``, each called by a login role
    of its pgrun_admin (no superuser: it would skip the privilege checks). ``error`` (a parser's)
    is called when ``base`` predates the role model (migration 0007)."""
    with (
        server(False) as admin,
        schema_at(base) as base_schema,
        scratch_database(admin, prefix=f"{prefix}_head") as head,
        scratch_database(admin, prefix=f"{prefix}_base") as base_db,
    ):
        if not (base_schema / "sql" / "0007_access.sql").exists():
            error("--base must have the role model (migration 0007)")
        migrate_from(head, None)
        migrate_from(base_db, base_schema, prefix=BASE_PREFIX)
        with (
            login_roles(admin, {"admin": "admin"}) as made,
            login_roles(admin, {"base_admin": "admin"}, prefix=BASE_PREFIX) as made_base,
        ):
            yield AdminSides(
                databases={"base": base_db, "head": head},
                dsns={"base": made_base["base_admin"].dsn(base_db), "head": made["admin"].dsn(head)},
            )


def migrate_from(dsn: str, schema: Path | None, prefix: str | None = None) -> None:
    previous = os.environ.get("PGRUN_SCHEMA_DIR")
    if schema is not None:
        os.environ["PGRUN_SCHEMA_DIR"] = str(schema)
    try:
        migrate.migrate(dsn, prefix=prefix)
    finally:
        if previous is None:
            os.environ.pop("PGRUN_SCHEMA_DIR", None)
        else:
            os.environ["PGRUN_SCHEMA_DIR"] = previous


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--base", default=DEFAULT_BASE, help=f"the commit to compare with (default {DEFAULT_BASE})"
    )
    parser.add_argument("--quick", action="store_true", help="one short round, for a smoke run")
    parser.add_argument("--fast", action="store_true", help="embedded server without fsync")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", default="bench/results/ab.json")
    args = parser.parse_args()
    rounds = 1 if args.quick else args.rounds
    seconds, jobs, batches = (2.0, 20_000, 1) if args.quick else (10.0, 200_000, 5)

    samples: dict[str, dict[str, list[float]]] = {}
    with (
        server(args.fast) as admin,
        schema_at(args.base) as base_schema,
        scratch_database(admin, prefix="pgrun_ab_head") as head,
    ):
        migrate_from(head, None)
        roles = {"legacy": None, "admin": "admin", "producer": "producer", "worker": "worker"}
        has_roles = (base_schema / "sql" / "0007_access.sql").exists()
        base_roles = {f"base_{k}": k for k in ("admin", "producer", "worker")} if has_roles else {}
        # The base database is made inside the roles' block: it belongs to the legacy login
        # role, which can only be dropped once the database is gone.
        with (
            login_roles(admin, roles) as made,
            scratch_database(admin, prefix="pgrun_ab_base") as base,
        ):
            # (setup's owner-side DSN for loading and resetting, enqueue as, cycle as)
            setups: dict[str, tuple[str, str | None, str | None]] = {}
            if has_roles:
                migrate_from(base, base_schema, prefix=BASE_PREFIX)
            else:
                # The base schema belongs to the login role that migrates it, as in a deployment.
                set_database_owner(admin, base, made["legacy"].name)
                migrate_from(made["legacy"].dsn(base), base_schema)
                legacy = made["legacy"].dsn(base)
                setups["base"] = (base, legacy, legacy)
            with login_roles(admin, base_roles, prefix=BASE_PREFIX) as made_base:
                if has_roles:
                    grant_scopes(base, made_base["base_producer"].name, made_base["base_worker"].name)
                    base_admin = made_base["base_admin"].dsn(base)
                    setups["base, admin"] = (base, base_admin, base_admin)
                    setups["base, roles"] = (
                        base,
                        made_base["base_producer"].dsn(base),
                        made_base["base_worker"].dsn(base),
                    )
                grant_scopes(head, made["producer"].name, made["worker"].name)
                head_admin = made["admin"].dsn(head)
                setups["head, admin"] = (head, head_admin, head_admin)
                setups["head, roles"] = (head, made["producer"].dsn(head), made["worker"].dsn(head))
                run_rounds(setups, rounds, seconds, jobs, batches, samples)

    medians = {name: {k: statistics.median(v) for k, v in got.items()} for name, got in samples.items()}
    results: dict[str, Any] = {
        "server": "embedded, fsync off" if args.fast else "embedded, durable (fsync on)",
        "base": args.base,
        "rounds": samples,
        "medians": medians,
        "ratios_over_base": {
            name: {k: v / medians[base_of(name, medians)][k] for k, v in m.items()}
            for name, m in medians.items()
            if not name.startswith("base")
        },
    }
    print()
    print(
        "| setup | single enqueue /s | bulk enqueue rows/s | batch-100 cycle jobs/s "
        "| single vs base | bulk vs base | cycle vs base |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, m in medians.items():
        ratio = results["ratios_over_base"].get(name, dict.fromkeys(MEASURES, 1.0))
        values = " | ".join(f"{m[key]:,.0f}" for key in MEASURES)
        ratios = " | ".join(f"{ratio[key]:.3f}" for key in MEASURES)
        print(f"| {name} | {values} | {ratios} |")
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
