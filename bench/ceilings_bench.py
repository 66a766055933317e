"""What pgrun's own jobs table allows: an enqueue against plainer writes of the same job.

Four measures on one migrated scratch database, durable commits, every call its own
transaction, the variants of a measure called in a fresh random order each round (so drift
falls on all alike) and summarised by their medians:

single  one job per call: pgrun's `Client.enqueue_job` (a login role of pgrun_admin, a
        one-connection pool); the same SQL call on a plain connection; a SECURITY DEFINER
        plpgsql function that only inserts the job row into pgrun.jobs and notifies (no checks,
        no definitions, no request, no UUIDv7: what any function-shaped enqueue pays at least);
        a prepared `INSERT` of that row into pgrun.jobs itself (superuser); a prepared `INSERT`
        into a three-column table (the peers bench's floor).
bulk    10,000 jobs per call: `Client.enqueue_jobs`; one `INSERT ... SELECT` of the same JSON
        array into pgrun.jobs (ids from the session's UUIDv7 slots, settings as constants);
        the same into the three-column table.
table   one-row prepared `INSERT`s into copies of pgrun.jobs built up piece by piece: the
        columns, defaults and primary key; with its CHECK constraints; with its indexes (no
        checks); with both; pgrun.jobs; and the three-column table.
idle    an idle worker's claim of the job just enqueued (the enqueue → start path's largest
        part): 20 ms idle, one job enqueued on another connection, then at once, each on a
        connection of its own: `claim_jobs` as an idle worker at concurrency 10 calls it
        (max_jobs 10, the job types it runs; a pgrun_admin login); `claim_jobs` without job
        types (the walk that locks as it reads, taken when every ready job is one the claimer
        may take); one plain `UPDATE ... FOR UPDATE SKIP LOCKED` statement that claims the
        first ready job the way graphile-worker's claim does (superuser: no function, no access
        or argument checks, no paused or capped types), and the same statement as the whole
        body of a `SECURITY DEFINER` plpgsql function with claim_jobs' SET clauses (what any
        claim behind an API function pays at least); `SELECT 1`. Medians and 90th percentiles.

So each of pgrun's layers (client, checks and settings, function, the table's constraints,
indexes and width) has a price, and a target above a plain write into pgrun.jobs is a target
for the table, not for the code around it.

Usage: python bench/ceilings_bench.py [--calls 2000] [--bulk-rounds 10] [--idle-samples 150]
       [--measures single bulk table idle]
Without DATABASE_URL it starts an embedded server (durable settings); with it, DATABASE_URL must
be a superuser's (it makes a scratch database, copies of pgrun.jobs and two functions in it).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

sys.path.insert(0, str(Path(__file__).resolve().parent))

from jobs_bench import server
from pgrun import migrate
from pgrun.client import Client, configure_connection
from pgrun.testing import login_roles, scratch_database

JOB_TYPE = "bench.noop"
PAYLOAD = Jsonb({"n": 1})
WARMUP = 50
BULK = 10_000

# The settings every variant writes as constants: what pgrun's defaults resolve to.
ROW_COLUMNS = (
    "id, job_type, queue, priority, payload, run_at, max_attempts, "
    "backoff_base_seconds, backoff_max_seconds, backoff_jitter"
)
ROW_VALUES = "gen_random_uuid(), %s, 'default', 100, %s, now(), 20, 2, 3600, 0.2"

IDLE_SECONDS = 0.020
IDLE_BASE = "claim_jobs as an idle worker calls it (max_jobs 10, its job types)"
BARE_CLAIM = """
UPDATE pgrun.jobs AS j
SET status = 'running', worker_id = 'ceiling', lease_token = gen_random_uuid(),
    lease_expires_at = now() + interval '30 seconds', heartbeat_at = now(),
    attempt = j.attempt + 1, total_attempts = j.total_attempts + 1, started_at = now(), updated_at = now()
FROM (
    SELECT x.ctid AS tid FROM pgrun.jobs AS x
    WHERE x.status = 'queued' AND x.run_at <= now()
    ORDER BY x.priority, x.run_at, x.id
    LIMIT 1
    FOR UPDATE SKIP LOCKED
) AS s
WHERE j.ctid = s.tid
RETURNING j.id, j.job_type, j.payload, j.attempt, j.lease_token, j.lease_expires_at
"""

SETUP = f"""
CREATE TABLE public.ceiling_floor (id bigserial PRIMARY KEY, job_type text NOT NULL, payload jsonb NOT NULL);
CREATE TABLE public.ceiling_wide (LIKE pgrun.jobs INCLUDING DEFAULTS) WITH (fillfactor = 50);
ALTER TABLE public.ceiling_wide ADD PRIMARY KEY (id);
CREATE TABLE public.ceiling_checks (LIKE pgrun.jobs INCLUDING DEFAULTS INCLUDING CONSTRAINTS)
    WITH (fillfactor = 50);
ALTER TABLE public.ceiling_checks ADD PRIMARY KEY (id);
CREATE TABLE public.ceiling_indexes (LIKE pgrun.jobs INCLUDING DEFAULTS INCLUDING INDEXES)
    WITH (fillfactor = 50);
CREATE TABLE public.ceiling_all (LIKE pgrun.jobs INCLUDING ALL) WITH (fillfactor = 50);
CREATE FUNCTION public.ceiling_bare_enqueue(p_job_type text, p_payload jsonb)
RETURNS uuid
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_id uuid;
    v_queue text;
BEGIN
    INSERT INTO pgrun.jobs AS j ({ROW_COLUMNS})
    VALUES (gen_random_uuid(), p_job_type, 'default', 100, p_payload, now(), 20, 2, 3600, 0.2)
    RETURNING j.id, j.queue INTO v_id, v_queue;
    PERFORM pg_notify('pgrun_jobs', v_queue);
    RETURN v_id;
END;
$$;
ALTER FUNCTION public.ceiling_bare_enqueue(text, jsonb) OWNER TO pgrun_owner;
"""

CLAIM_JOBS = "pgrun.claim_jobs(text, integer, integer, text[], text[], integer)"


def create_bare_claim_function(conn: psycopg.Connection[Any]) -> None:
    """public.ceiling_bare_claim(): BARE_CLAIM as the whole body of a SECURITY DEFINER plpgsql
    function owned by pgrun_owner, with claim_jobs' own SET clauses (read from the catalog)."""
    config = conn.execute(
        "SELECT proconfig FROM pg_proc WHERE oid = %s::regprocedure", (CLAIM_JOBS,)
    ).fetchone()
    if not config or not config[0]:
        raise RuntimeError(f"{CLAIM_JOBS} has no SET clauses to copy")
    settings = "\n".join("SET {} TO {}".format(*item.split("=", 1)) for item in config[0])
    conn.execute(
        f"""
        CREATE FUNCTION public.ceiling_bare_claim()
        RETURNS TABLE (r_id uuid, r_type text, r_payload jsonb, r_attempt int, r_token uuid, r_at timestamptz)
        LANGUAGE plpgsql VOLATILE SECURITY DEFINER
        {settings}
        AS $$ BEGIN RETURN QUERY {BARE_CLAIM}; END $$
        """
    )
    conn.execute("ALTER FUNCTION public.ceiling_bare_claim() OWNER TO pgrun_owner")


BULK_INTO_JOBS = f"""
INSERT INTO pgrun.jobs ({ROW_COLUMNS})
SELECT pgrun._uuidv7_at(s.first + e.n - 1), e.job ->> 'job_type', 'default', 100, e.job -> 'payload',
       now(), 20, 2, 3600, 0.2
FROM jsonb_array_elements(%s::jsonb) WITH ORDINALITY AS e (job, n),
     pgrun._uuidv7_reserve({BULK}) AS s (first)
RETURNING id
"""
BULK_INTO_FLOOR = """
INSERT INTO public.ceiling_floor (job_type, payload)
SELECT e.job ->> 'job_type', e.job -> 'payload' FROM jsonb_array_elements(%s::jsonb) AS e (job)
RETURNING id
"""


Call = Callable[[], object]


def enqueue_job(conn: psycopg.Connection[Any]) -> object:
    """One prepared pgrun.enqueue_job call of the bench's job on ``conn``."""
    query = "SELECT * FROM pgrun.enqueue_job(%s, %s)"
    return conn.execute(query, (JOB_TYPE, PAYLOAD), prepare=True).fetchall()


def insert_row(conn: psycopg.Connection[Any], table: str) -> Call:
    """One prepared INSERT of a job row with pgrun's default settings into ``table``."""
    query = f"INSERT INTO {table} ({ROW_COLUMNS}) VALUES ({ROW_VALUES})"
    return lambda: conn.execute(query, (JOB_TYPE, PAYLOAD), prepare=True)


def insert_floor(conn: psycopg.Connection[Any]) -> Call:
    """One prepared INSERT into the three-column table (the peers bench's floor)."""
    query = "INSERT INTO public.ceiling_floor (job_type, payload) VALUES (%s, %s)"
    return lambda: conn.execute(query, (JOB_TYPE, PAYLOAD), prepare=True)


def timed_rounds(
    variants: dict[str, Call], rounds: int, warmup: int, before: Call | None = None, after: Call | None = None
) -> dict[str, list[float]]:
    """Seconds per call of each variant over ``rounds`` (after ``warmup`` untimed ones); every
    round calls each once, in a new order, ``before`` and ``after`` around each call untimed."""
    times: dict[str, list[float]] = {name: [] for name in variants}
    names = list(variants)
    for n in range(warmup + rounds):
        random.shuffle(names)
        for name in names:
            if before is not None:
                before()
            start = time.perf_counter()
            variants[name]()
            if n >= warmup:
                times[name].append(time.perf_counter() - start)
            if after is not None:
                after()
    return times


def interleaved(variants: dict[str, Call], rounds: int, warmup: int) -> dict[str, float]:
    """Median seconds per call of each variant (timed_rounds)."""
    return {name: statistics.median(t) for name, t in timed_rounds(variants, rounds, warmup).items()}


def report(title: str, medians: dict[str, float], base: str, per: int, unit: str) -> list[dict[str, Any]]:
    print(f"\n{title}")
    print(f"| | per call | {unit}/s | / {base} |")
    print("|---|---:|---:|---:|")
    rows = []
    for name, seconds in medians.items():
        ratio = seconds / medians[base]
        shown = f"{seconds * 1e6:.0f} µs" if seconds < 0.01 else f"{seconds * 1e3:.1f} ms"
        print(f"| {name} | {shown} | {per / seconds:,.0f} | {ratio:.2f} |")
        rows.append({"variant": name, "seconds": seconds, "per_s": per / seconds, "ratio": ratio})
    return rows


def bulk_jobs() -> list[dict[str, Any]]:
    return [{"job_type": JOB_TYPE, "payload": {"n": i}} for i in range(BULK)]


MEASURES = ("single", "bulk", "table", "idle")
IDLE_PLAIN = "claim_jobs without job types (the walk every ready job may take)"
IDLE_WRAPPED = "the UPDATE below as the body of a SECURITY DEFINER plpgsql function"
IDLE_BARE = "one UPDATE ... FOR UPDATE SKIP LOCKED (no function, no checks)"


def measure_writes(admin: str, dsn: str, args: argparse.Namespace, results: dict[str, Any]) -> None:
    """The single, bulk and table measures that ``args.measures`` names."""
    with (
        login_roles(admin, {"admin": "admin"}) as made,
        psycopg.connect(dsn, autocommit=True) as superuser,
        psycopg.connect(made["admin"].dsn(dsn), autocommit=True) as app,
        Client.connect(made["admin"].dsn(dsn), max_size=1) as client,
    ):
        configure_connection(app)
        floor = insert_floor(superuser)
        if "single" in args.measures:
            single: dict[str, Call] = {
                "Client.enqueue_job": lambda: client.enqueue_job(JOB_TYPE, {"n": 1}),
                "SELECT pgrun.enqueue_job (plain connection)": lambda: enqueue_job(app),
                "plpgsql function: INSERT + pg_notify only": lambda: app.execute(
                    "SELECT public.ceiling_bare_enqueue(%s, %s)", (JOB_TYPE, PAYLOAD), prepare=True
                ).fetchall(),
                "INSERT into pgrun.jobs": insert_row(superuser, "pgrun.jobs"),
                "INSERT into a 3-column table": floor,
            }
            results["single"] = report(
                "single (one job a call, durable commit)",
                interleaved(single, args.calls, WARMUP),
                "Client.enqueue_job",
                1,
                "jobs",
            )

        if "bulk" in args.measures:
            bulk: dict[str, Call] = {
                "Client.enqueue_jobs": lambda: client.enqueue_jobs(bulk_jobs()),
                "INSERT ... SELECT into pgrun.jobs": lambda: superuser.execute(
                    BULK_INTO_JOBS, (json.dumps(bulk_jobs()),)
                ).fetchall(),
                "INSERT ... SELECT into a 3-column table": lambda: superuser.execute(
                    BULK_INTO_FLOOR, (json.dumps(bulk_jobs()),)
                ).fetchall(),
            }
            results["bulk"] = report(
                f"bulk ({BULK:,} jobs a call)",
                interleaved(bulk, args.bulk_rounds, 1),
                "Client.enqueue_jobs",
                BULK,
                "rows",
            )

        if "table" in args.measures:
            tables = {
                "columns, defaults, primary key": "public.ceiling_wide",
                "+ CHECK constraints": "public.ceiling_checks",
                "+ indexes (no CHECK constraints)": "public.ceiling_indexes",
                "+ CHECK constraints and indexes": "public.ceiling_all",
                "pgrun.jobs": "pgrun.jobs",
            }
            table = {label: insert_row(superuser, name) for label, name in tables.items()}
            table["3-column table"] = floor
            results["table"] = report(
                "table (one-row INSERT, durable commit)",
                interleaved(table, args.calls, WARMUP),
                "pgrun.jobs",
                1,
                "rows",
            )


def measure_idle(admin: str, dsn: str, args: argparse.Namespace, results: dict[str, Any]) -> None:
    """The idle measure: each variant on a connection of its own, a pgrun_admin login for the
    functions (as a worker calls them), the superuser for the bare statement."""
    names = ("claimer", "plain", "wrapped", "idler")

    def connect(url: str) -> psycopg.Connection[Any]:
        return psycopg.connect(url, autocommit=True)

    with (
        login_roles(admin, dict.fromkeys(names, "admin")) as roles,
        psycopg.connect(dsn, autocommit=True) as superuser,
        psycopg.connect(dsn, autocommit=True) as bare,
        contextlib.ExitStack() as stack,
    ):
        conns = {name: stack.enter_context(connect(roles[name].dsn(dsn))) for name in names}
        superuser.execute("TRUNCATE pgrun.jobs CASCADE")
        claim = "SELECT * FROM pgrun.claim_jobs('ceiling', 30, 10, NULL, %s)"
        idle_variants: dict[str, Call] = {
            IDLE_BASE: lambda: conns["claimer"].execute(claim, ([JOB_TYPE],), prepare=True).fetchall(),
            IDLE_PLAIN: lambda: conns["plain"].execute(claim, (None,), prepare=True).fetchall(),
            IDLE_WRAPPED: lambda: (
                conns["wrapped"].execute("SELECT * FROM public.ceiling_bare_claim()", prepare=True).fetchall()
            ),
            IDLE_BARE: lambda: bare.execute(BARE_CLAIM, prepare=True).fetchall(),
            "SELECT 1": lambda: conns["idler"].execute("SELECT 1", prepare=True).fetchall(),
        }

        def quiet_then_enqueue() -> None:
            """IDLE_SECONDS of quiet, then a job enqueued on another connection."""
            time.sleep(IDLE_SECONDS)
            enqueue_job(superuser)

        def delete_jobs() -> None:
            superuser.execute("DELETE FROM pgrun.jobs", prepare=True)

        for name, call in idle_variants.items():  # each claim takes the one job (untimed)
            quiet_then_enqueue()
            got = call()
            delete_jobs()
            if name != "SELECT 1" and len(got) != 1:  # type: ignore[arg-type]
                raise RuntimeError(f"{name} claimed {got!r}, not the one ready job")

        # the job is deleted after each call (untimed)
        times = timed_rounds(
            idle_variants,
            args.idle_samples,
            10,
            before=quiet_then_enqueue,
            after=delete_jobs,
        )
    base = statistics.median(times[IDLE_BASE])
    print(f"\nidle (a claim right after an enqueue, {IDLE_SECONDS * 1e3:.0f} ms idle before it)")
    print("| | median | p90 | median / claim_jobs |")
    print("|---|---:|---:|---:|")
    results["idle"] = []
    for name, got in times.items():
        median, p90 = statistics.median(got), statistics.quantiles(got, n=10)[-1]
        print(f"| {name} | {median * 1e3:.3f} ms | {p90 * 1e3:.3f} ms | {median / base:.2f} |")
        results["idle"].append({"variant": name, "median_s": median, "p90_s": p90})


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=2000, help="calls per variant, single and table")
    parser.add_argument("--bulk-rounds", type=int, default=10)
    parser.add_argument("--idle-samples", type=int, default=150, help="calls per variant, idle")
    parser.add_argument("--measures", nargs="+", choices=MEASURES, default=list(MEASURES))
    parser.add_argument("--json", default="bench/results/ceilings.json")
    args = parser.parse_args()

    results: dict[str, Any] = {}
    with server(False) as admin, scratch_database(admin, prefix="pgrun_ceiling") as dsn:
        migrate.migrate(dsn)
        with psycopg.connect(dsn, autocommit=True) as owner:
            owner.execute(SETUP)
            create_bare_claim_function(owner)
        if set(args.measures) - {"idle"}:
            measure_writes(admin, dsn, args, results)
        if "idle" in args.measures:
            measure_idle(admin, dsn, args, results)

    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
