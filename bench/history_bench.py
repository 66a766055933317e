"""A hot table that stays small: claim latency and worker throughput with 10M finished jobs kept.

One durable server, two databases: "empty" (migrated, nothing in it) and "history" (migrated,
then --finished N succeeded jobs, 10,000,000 by default). The history is loaded the way a
long-running system leaves it, set-based (INSERT ... SELECT, in chunks of 500,000 jobs):

  * jobs        succeeded rows, created one after another over --days days (default 6) up
                to an hour ago (inside the reaper's default retention, JOBS_RETENTION_HOURS =
                168: the worker's reaper, which purges on start, keeps them all), in that
                order in the heap (as they were enqueued), each with a uuidv7-shaped id from
                its creation time (so the primary key is in time order, like pgrun.uuidv7's),
                run_at = created_at, claimed 5 ms and finished 20 ms later by one of 8
                workers, attempt 1 of 20, lease cleared, result NULL (what a no-op handler's
                completion left before sql/0023; since then the row keeps its 16-byte token);
                the table's own fillfactor applies;
  * job_events  three rows per job: enqueued (attempt 0), claimed (attempt 1, the worker) and
                succeeded (the attempt's outcome, lease token and start), in time order (the
                identity column counts up as in a live system): what a job wrote before issue
                15 item 4 (sql/0019); a job that succeeds today writes none of them (sql/0019,
                sql/0023: its row keeps the attempt and its lease token), so this history is,
                if anything, heavier than a current install's.

The other history tables (job_logs, job_log_counts, job_dead_letters) hold nothing for a no-op
job that succeeded at its first attempt. Autovacuum is off on both tables during the load.

Then:
  1. stale statistics, once: --ready ready jobs in each database (enqueue_jobs, 10,000 per call,
     bench/jobs_bench.py's load_ready), the empty database ANALYZEd, the history database not
     (its statistics are those of the empty tables it was migrated with); claim latency p50/p99
     on both, one claim on each in turn (jobs_bench.claim_latencies: claim_jobs(max_jobs => 1),
     then complete_job, untimed);
  2. VACUUM ANALYZE of both databases (what autovacuum leaves in a steady state), autovacuum
     back on;
  3. --rounds rounds (default 3) of, on both databases:
       (a) claim latency p50/p99 as in 1, after ANALYZE; the leftover ready jobs are then deleted
           (with their events), so (b) starts from the history alone;
       (b) pgrun worker throughput: bench/peers/pgrun_worker.py throughput() (the real worker,
           pgrun.runner.run_loops, in-process) at --concurrency 10 on --jobs 20,000 no-op jobs
           enqueued in bulk (then ANALYZE, which throughput() runs) from a fresh CHECKPOINT;
           which database goes first alternates from round to round;
     before (a) and before (b), the bench waits until autovacuum has done what it would do
     (settle(): each jobs table below the dead-row count that starts its autovacuum, no VACUUM
     of it running), so that both are measured as autovacuum keeps them and not at whatever
     point of its schedule (one visit per database per autovacuum_naptime, 1 min) a measure
     falls; the waits are in the JSON. Each round gives the ratio history/empty (latency:
     empty/history, so above 1 is better for history in both); then the medians;
  4. retention, once (unless --purge 0): purge_finished_jobs(older_than => '1 day',
     max_jobs => --purge-batch) called until --purge jobs (default 1,000,000, the oldest) are
     gone, on one connection, while the main thread keeps taking claim latency samples on the
     history database (with --ready fresh ready jobs); claim latency before the purge is
     sampled the same way for comparison.

Prints a table, writes JSON (--json). The ratios the targets are about (issue 15: "10M finished
jobs vs empty: claim latency and worker throughput >= 0.9x") are printed last.

Usage: python bench/history_bench.py [--quick] [--finished N] [--rounds 3] [--json PATH]
                                     [--keep] [--reuse]
--quick: 1,000,000 finished (unless --finished), 300 latency samples, 20,000 ready, 5,000 jobs,
         purge 100,000. --keep leaves both databases in place (named pgrun_hist_empty and
         pgrun_hist_<N>); --reuse starts from them when they exist (no load, no stale case).
Without DATABASE_URL it starts an embedded server (durable settings). Loading 10M jobs takes the
larger part of the run (3 of about 10 minutes on a 2-core machine) and some 10 GB of disk.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

from psycopg import sql

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE / "peers"))

from pgrun_worker import throughput  # noqa: E402

from jobs_bench import checkpoint, claim_latencies, connect, load_ready, server  # noqa: E402
from pgrun import migrate  # noqa: E402
from pgrun.config import from_env  # noqa: E402
from pgrun.eventloop import run_until_complete  # noqa: E402
from pgrun.testing import drop_database, with_database  # noqa: E402

CHUNK = 500_000  # finished jobs per INSERT ... SELECT (one transaction each)

# One chunk of the history: jobs `lo` .. `hi` - 1 of `n`, job g created `step` seconds after job
# g - 1, the last one an hour ago. The id is a version-7 UUID of the creation time: the first 6
# bytes are the unix milliseconds, the version nibble is 7, the rest random.
LOAD_CHUNK = """
WITH src AS (
    SELECT g, now() - interval '1 hour' - make_interval(secs => (%(n)s - g) * %(step)s) AS t
    FROM generate_series(%(lo)s::bigint, %(hi)s::bigint - 1) AS g
),

ids AS (
    SELECT
        s.g,
        s.t,
        encode(set_byte(u.b, 6, (get_byte(u.b, 6) & 15) | 112), 'hex')::uuid AS id
    FROM src AS s
    CROSS JOIN LATERAL (
        SELECT overlay(
            uuid_send(gen_random_uuid())
            PLACING substring(int8send(floor(extract(EPOCH FROM s.t) * 1000)::bigint) FROM 3 FOR 6)
            FROM 1 FOR 6
        ) AS b
    ) AS u
),

ins AS (
    INSERT INTO pgrun.jobs (
        id, job_type, queue, priority, status, payload, run_at, attempt, total_attempts, max_attempts,
        backoff_base_seconds, backoff_max_seconds, backoff_jitter, worker_id, heartbeat_at,
        created_at, updated_at, started_at, finished_at
    )
    SELECT
        i.id, 'bench_noop', 'default', 100, 'succeeded', jsonb_build_object('n', i.g), i.t, 1, 1, 20,
        2, 3600, 0.2, 'worker-' || (i.g %% 8), i.t + interval '5 ms',
        i.t, i.t + interval '20 ms', i.t + interval '5 ms', i.t + interval '20 ms'
    FROM ids AS i
    ORDER BY i.g
    RETURNING id, worker_id, created_at, started_at, finished_at
)

INSERT INTO pgrun.job_events (
    job_id, event, from_status, to_status, attempt, worker_id, created_at, outcome, lease_token, started_at
)
SELECT
    j.id, e.event, e.from_status, e.to_status, e.attempt,
    CASE WHEN e.k > 1 THEN j.worker_id END,
    CASE e.k WHEN 1 THEN j.created_at WHEN 2 THEN j.started_at ELSE j.finished_at END,
    CASE WHEN e.k = 3 THEN 'succeeded' END,
    CASE WHEN e.k = 3 THEN gen_random_uuid() END,
    CASE WHEN e.k = 3 THEN j.started_at END
FROM ins AS j
CROSS JOIN (
    VALUES
    (1, 'enqueued', NULL, 'queued', 0),
    (2, 'claimed', 'queued', 'running', 1),
    (3, 'succeeded', 'running', 'succeeded', 1)
) AS e (k, event, from_status, to_status, attempt)
ORDER BY j.created_at, e.k
"""

HISTORY_TABLES = ("pgrun.jobs", "pgrun.job_events")


def load_finished(dsn: str, n: int, days: float) -> float:
    """`n` succeeded jobs and their events (see the module's docstring); returns the seconds it took."""
    step = days * 86400 / n
    start = time.perf_counter()
    with connect(dsn) as conn:
        conn.execute("SET work_mem = '256MB'")  # the events' time-order sort, in memory
        for table in HISTORY_TABLES:
            conn.execute(f"ALTER TABLE {table} SET (autovacuum_enabled = false)")
        for lo in range(0, n, CHUNK):
            hi = min(n, lo + CHUNK)
            conn.execute(LOAD_CHUNK, {"n": n, "lo": lo, "hi": hi, "step": step})
            print(f"  loaded {hi:,} of {n:,} finished jobs ({time.perf_counter() - start:.0f} s)", flush=True)
    return time.perf_counter() - start


def vacuum_analyze(dsn: str) -> float:
    """VACUUM ANALYZE the job tables and turn autovacuum back on; returns the seconds it took."""
    start = time.perf_counter()
    with connect(dsn) as conn:
        for table in HISTORY_TABLES:
            conn.execute(f"VACUUM ANALYZE {table}")
            conn.execute(f"ALTER TABLE {table} RESET (autovacuum_enabled)")
    return time.perf_counter() - start


def clear_ready(dsn: str) -> None:
    """Delete the queued jobs a latency measure left, and their events; finished work stays."""
    with connect(dsn) as conn, conn.transaction():
        conn.execute(
            "CREATE TEMP TABLE doomed ON COMMIT DROP AS SELECT id FROM pgrun.jobs WHERE status = 'queued'"
        )
        # A lookup of the events' primary key per job, whatever the statistics say.
        conn.execute("SET LOCAL enable_hashjoin = off")
        conn.execute("SET LOCAL enable_mergejoin = off")
        conn.execute("DELETE FROM pgrun.job_events AS e USING doomed AS d WHERE e.job_id = d.id")
        conn.execute("DELETE FROM pgrun.jobs AS j USING doomed AS d WHERE j.id = d.id")


def latency_round(dsns: dict[str, str], ready: int, samples: int, analyze: tuple[str, ...]) -> dict[str, Any]:
    """Claim latency on each database with `ready` fresh ready jobs; ANALYZE those in `analyze`."""
    for name, dsn in dsns.items():
        load_ready(dsn, ready)
        if name in analyze:
            with connect(dsn) as conn:
                conn.execute("ANALYZE pgrun.jobs")
    result = claim_latencies(dsns, samples)
    for dsn in dsns.values():
        clear_ready(dsn)
    return result


# Dead row versions of pgrun.jobs against the number that starts its autovacuum (the table's
# storage parameters, else the server's settings), and whether a VACUUM of it is running.
AUTOVACUUM_DUE = """
SELECT
    s.n_dead_tup,
    coalesce(o.threshold, current_setting('autovacuum_vacuum_threshold')::float8)
    + coalesce(o.scale, current_setting('autovacuum_vacuum_scale_factor')::float8) * greatest(c.reltuples, 0),
    EXISTS (
        SELECT 1 FROM pg_stat_progress_vacuum AS p WHERE p.datname = current_database() AND p.relid = c.oid
    )
FROM pg_class AS c
JOIN pg_stat_user_tables AS s ON s.relid = c.oid
CROSS JOIN LATERAL (
    SELECT
        max(split_part(r, '=', 2)::float8) FILTER (WHERE r LIKE 'autovacuum_vacuum_threshold=%%'),
        max(split_part(r, '=', 2)::float8) FILTER (WHERE r LIKE 'autovacuum_vacuum_scale_factor=%%')
    FROM unnest(coalesce(c.reloptions, '{}')) AS r
) AS o (threshold, scale)
WHERE c.oid = 'pgrun.jobs'::regclass
"""


def settle(dsns: dict[str, str], timeout_s: float = 300.0) -> float:
    """Wait until autovacuum has done what it would do to each database's jobs table: fewer dead
    row versions than start its autovacuum, and no VACUUM of it running. Returns the seconds
    waited.

    A measure then sees the table the way autovacuum keeps it in a steady state, whatever moment
    of autovacuum's schedule (one visit per database every autovacuum_naptime) it falls on; a
    table whose autovacuum waits for far more dead rows (the default 20 % of a large table) is
    measured with the dead rows it keeps."""
    start = time.perf_counter()
    time.sleep(2.0)  # the statistics of the last writes reach pg_stat_user_tables within a second
    conns = {name: connect(dsn) for name, dsn in dsns.items()}
    try:
        while True:
            pending = []
            for name, conn in conns.items():
                row = conn.execute(AUTOVACUUM_DUE).fetchone()
                assert row is not None
                dead, due, running = row
                if running or dead > due:  # autovacuum starts above the count, not at it
                    pending.append(f"{name} ({dead:,} dead, autovacuum at {due:,.0f})")
            if not pending:
                return time.perf_counter() - start
            if time.perf_counter() - start > timeout_s:
                print(f"  still waiting for autovacuum after {timeout_s:.0f} s: {', '.join(pending)}")
                return time.perf_counter() - start
            time.sleep(1.0)
    finally:
        for conn in conns.values():
            conn.close()


def worker_throughput(dsn: str, jobs: int, concurrency: int) -> dict[str, Any]:
    checkpoint(dsn)
    args = argparse.Namespace(dsn=dsn, jobs=jobs, concurrency=concurrency, timeout_s=600.0)
    out = run_until_complete(throughput(args), from_env())  # the loop `pgrun worker` runs on
    assert out["handled"] == jobs and out["left_in_queue"] == 0, out
    return out


def sizes(dsn: str) -> dict[str, Any]:
    """Rows and on-disk sizes of the job tables and their indexes, and the visibility map's coverage."""
    with connect(dsn) as conn:
        rows = conn.execute(
            """
            SELECT c.relname, c.reltuples::bigint, pg_relation_size(c.oid),
                   CASE WHEN c.relkind = 'r' THEN c.relallvisible::float / greatest(c.relpages, 1) END
            FROM pg_class AS c
            JOIN pg_namespace AS n ON n.oid = c.relnamespace
            WHERE n.nspname = 'pgrun' AND c.relkind IN ('r', 'i')
              AND (c.relname IN ('jobs', 'job_events')
                  OR c.relname LIKE 'jobs\\_%%' OR c.relname LIKE 'job\\_events\\_%%')
            ORDER BY c.relname
            """
        ).fetchall()
    return {
        name: {"rows_estimate": est, "mb": round(size / 2**20, 1), "all_visible": vis}
        for name, est, size, vis in rows
    }


def purge_with_claims(dsn: str, total: int, batch: int, ready: int, samples: int) -> dict[str, Any]:
    """Purge `total` of the oldest finished jobs in batches while claim latency is sampled."""
    settle({"history": dsn})
    load_ready(dsn, ready)
    with connect(dsn) as conn:
        conn.execute("ANALYZE pgrun.jobs")
    before = claim_latencies({"before_purge": dsn}, samples)["before_purge"]

    done = threading.Event()
    purge: dict[str, Any] = {"batches": 0, "purged": 0}

    def run() -> None:
        try:
            with connect(dsn) as conn:
                start = time.perf_counter()
                while purge["purged"] < total:
                    row = conn.execute(
                        "SELECT pgrun.purge_finished_jobs(older_than => interval '1 day', max_jobs => %s)",
                        (min(batch, total - purge["purged"]),),
                        prepare=True,
                    ).fetchone()
                    count = row[0] if row else 0
                    purge["batches"] += 1
                    purge["purged"] += count
                    if count == 0:
                        break
                purge["seconds"] = time.perf_counter() - start
        finally:
            done.set()

    thread = threading.Thread(target=run)
    during: list[float] = []
    with connect(dsn) as conn:
        thread.start()
        while not done.is_set():
            t = time.perf_counter()
            job = conn.execute(
                "SELECT job_id, lease_token FROM pgrun.claim_jobs(worker_id => 'lat', lease_seconds => 60)",
                prepare=True,
            ).fetchone()
            during.append((time.perf_counter() - t) * 1000)
            assert job is not None, "ran out of ready jobs during the purge: raise --ready"
            conn.execute("SELECT pgrun.complete_job(job_id => %s, lease_token => %s)", job, prepare=True)
            time.sleep(0.005)
    thread.join()
    after = claim_latencies({"after_purge": dsn}, samples)["after_purge"]
    clear_ready(dsn)
    during.sort()
    purge["jobs_per_s"] = purge["purged"] / purge["seconds"]
    purge["claims_before"] = before
    purge["claims_during"] = {
        "samples": len(during),
        "p50_ms": statistics.median(during),
        "p99_ms": during[max(0, int(len(during) * 0.99) - 1)],
        "max_ms": during[-1],
    }
    purge["claims_after"] = after
    return purge


def database(admin: str, name: str, reuse: bool) -> tuple[str, bool]:
    """The DSN of database `name` (created unless reused); whether it existed already."""
    with connect(admin) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
    if exists and reuse:
        return with_database(admin, name), True
    if exists:
        drop_database(admin, name)
    with connect(admin) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    return with_database(admin, name), False


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="smaller sizes, for a smoke run")
    parser.add_argument("--finished", type=int, help="finished jobs in the history database (10,000,000)")
    parser.add_argument("--days", type=float, default=6.0, help="the history spans this many days")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=10)
    parser.add_argument(
        "--purge", type=int, help="jobs to purge while claims are sampled (1,000,000; 0: skip)"
    )
    parser.add_argument("--purge-batch", type=int, default=10_000)
    parser.add_argument("--keep", action="store_true", help="leave both databases in place")
    parser.add_argument("--reuse", action="store_true", help="start from the databases --keep left")
    parser.add_argument("--json", default="bench/results/history.json")
    args = parser.parse_args()
    q = args.quick
    finished = args.finished if args.finished is not None else (1_000_000 if q else 10_000_000)
    samples, ready, jobs = (300, 20_000, 5_000) if q else (2_000, 100_000, 20_000)
    purge_total = args.purge if args.purge is not None else (100_000 if q else 1_000_000)
    results: dict[str, Any] = {
        "server": "durable (fsync, synchronous_commit, full_page_writes on)",
        "finished": finished,
        "days": args.days,
        "latency_samples": samples,
        "ready_for_latency": ready,
        "worker_jobs": jobs,
        "concurrency": args.concurrency,
    }
    names = {"empty": "pgrun_hist_empty", "history": f"pgrun_hist_{finished}"}
    with server(False) as admin:
        empty, empty_reused = database(admin, names["empty"], args.reuse)
        history, reused = database(admin, names["history"], args.reuse)
        dsns = {"empty": empty, "history": history}
        try:
            if not empty_reused:
                migrate.migrate(empty)
            if not reused:
                migrate.migrate(history)
                with connect(history) as conn:
                    conn.execute("ANALYZE")  # the statistics of empty tables: stale after the load
                print(f"loading {finished:,} finished jobs ...", flush=True)
                results["load_s"] = load_finished(history, finished, args.days)
                # the empty database's statistics fit it; only the history's are stale
                results["stale"] = latency_round(dsns, ready, samples, analyze=("empty",))
                print_latency("stale statistics", results["stale"])
                results["vacuum_analyze_s"] = vacuum_analyze(history)
                print(f"VACUUM ANALYZE: {results['vacuum_analyze_s']:.0f} s", flush=True)
            vacuum_analyze(empty)
            results["sizes"] = sizes(history)
            for rel, info in results["sizes"].items():
                print(f"  {rel}: {info}", flush=True)
            rounds = []
            for r in range(args.rounds):
                waits = [settle(dsns)]
                lat = latency_round(dsns, ready, samples, analyze=tuple(dsns))
                print_latency(f"round {r + 1}", lat)
                rate = {}
                waits.append(settle(dsns))
                for name in ("empty", "history") if r % 2 == 0 else ("history", "empty"):
                    rate[name] = worker_throughput(dsns[name], jobs, args.concurrency)["jobs_per_s"]
                    print(
                        f"round {r + 1} worker c={args.concurrency} {name}: {rate[name]:,.0f} jobs/s",
                        flush=True,
                    )
                print(
                    f"round {r + 1}: waited {waits[0]:.0f} s and {waits[1]:.0f} s for autovacuum", flush=True
                )
                rounds.append(
                    {
                        "autovacuum_waits_s": waits,
                        "claim": lat,
                        "worker_jobs_per_s": rate,
                        "ratio_claim_p50": lat["empty"]["p50_ms"] / lat["history"]["p50_ms"],
                        "ratio_claim_p99": lat["empty"]["p99_ms"] / lat["history"]["p99_ms"],
                        "ratio_worker": rate["history"] / rate["empty"],
                    }
                )
            results["rounds"] = rounds
            results["median"] = {
                key: statistics.median(r[key] for r in rounds)
                for key in ("ratio_claim_p50", "ratio_claim_p99", "ratio_worker")
            }
            for name in ("empty", "history"):
                results["median"][f"claim_p50_ms_{name}"] = statistics.median(
                    r["claim"][name]["p50_ms"] for r in rounds
                )
                results["median"][f"claim_p99_ms_{name}"] = statistics.median(
                    r["claim"][name]["p99_ms"] for r in rounds
                )
                results["median"][f"worker_jobs_per_s_{name}"] = statistics.median(
                    r["worker_jobs_per_s"][name] for r in rounds
                )
            if purge_total:
                print(f"purging {purge_total:,} finished jobs while claiming ...", flush=True)
                results["purge"] = purge_with_claims(history, purge_total, args.purge_batch, ready, samples)
        finally:
            if not args.keep:
                for name in names.values():
                    drop_database(admin, name)
    report(results)
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


def print_latency(label: str, lat: dict[str, dict[str, float]]) -> None:
    print(
        f"{label} claim latency p50 / p99: "
        + ", ".join(f"{name} {v['p50_ms']:.2f} / {v['p99_ms']:.2f} ms" for name, v in lat.items()),
        flush=True,
    )


def report(results: dict[str, Any]) -> None:
    n = results["finished"]
    print()
    print(
        f"| round | claim p50 empty / {n:,} (ms) | claim p99 empty / {n:,} (ms) "
        f"| worker c={results['concurrency']} empty / {n:,} (jobs/s) "
        "| ratio claim p50 | ratio claim p99 | ratio worker |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for i, r in enumerate(results["rounds"], 1):
        c, w = r["claim"], r["worker_jobs_per_s"]
        print(
            f"| {i} | {c['empty']['p50_ms']:.2f} / {c['history']['p50_ms']:.2f} "
            f"| {c['empty']['p99_ms']:.2f} / {c['history']['p99_ms']:.2f} "
            f"| {w['empty']:,.0f} / {w['history']:,.0f} "
            f"| {r['ratio_claim_p50']:.2f} | {r['ratio_claim_p99']:.2f} | {r['ratio_worker']:.2f} |"
        )
    m = results["median"]
    print(
        f"| median | {m['claim_p50_ms_empty']:.2f} / {m['claim_p50_ms_history']:.2f} "
        f"| {m['claim_p99_ms_empty']:.2f} / {m['claim_p99_ms_history']:.2f} "
        f"| {m['worker_jobs_per_s_empty']:,.0f} / {m['worker_jobs_per_s_history']:,.0f} "
        f"| {m['ratio_claim_p50']:.2f} | {m['ratio_claim_p99']:.2f} | {m['ratio_worker']:.2f} |"
    )
    if "stale" in results:
        s = results["stale"]
        print(
            f"stale statistics (history not analyzed): claim p50 {s['empty']['p50_ms']:.2f} / "
            f"{s['history']['p50_ms']:.2f} ms, p99 {s['empty']['p99_ms']:.2f} / "
            f"{s['history']['p99_ms']:.2f} ms "
            f"(ratio p50 {s['empty']['p50_ms'] / s['history']['p50_ms']:.2f})"
        )
    if "load_s" in results:
        print(f"load: {results['load_s']:.0f} s; VACUUM ANALYZE: {results['vacuum_analyze_s']:.0f} s")
    if "purge" in results:
        p = results["purge"]
        print(
            f"purge: {p['purged']:,} jobs in {p['batches']} calls, {p['seconds']:.1f} s "
            f"({p['jobs_per_s']:,.0f} jobs/s); "
            f"claim p50/p99 before {p['claims_before']['p50_ms']:.2f}/{p['claims_before']['p99_ms']:.2f} ms, "
            f"during {p['claims_during']['p50_ms']:.2f}/{p['claims_during']['p99_ms']:.2f} ms "
            f"({p['claims_during']['samples']} samples, max {p['claims_during']['max_ms']:.1f}), "
            f"after {p['claims_after']['p50_ms']:.2f}/{p['claims_after']['p99_ms']:.2f} ms"
        )
    print(
        "ratios history/empty (latency: empty/history; target >= 0.9): "
        + ", ".join(f"{k} {v:.2f}" for k, v in m.items() if k.startswith("ratio"))
    )


if __name__ == "__main__":
    sys.exit(main())
