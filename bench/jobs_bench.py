"""Job-queue benchmarks with a plain psycopg driver loop (no worker), side by side with pgbench.

Measures, in one run against one server:
  * single enqueue/s          enqueue_job in a loop, one connection, autocommit
  * bulk enqueue rows/s       enqueue_jobs with 10,000-row batches
  * claim->complete jobs/s    claim_jobs + complete_jobs, 4 connections, batch 1 / 10 / 100
  * claim latency             claim_jobs(max_jobs => 1) + complete_job, p50/p99: 100k ready + 1M
                              finished rows, right after the bulk load (no ANALYZE: stale
                              statistics) and again after ANALYZE, each time in turns with a
                              near-empty database
  * pgbench TPC-B tps         the machine's yardstick, same server, 4 clients

The ratio that matters (batch-100 cycle over TPC-B) compares two throughputs on a shared,
noisy machine, so those two are measured in five rounds of turns -- TPC-B, cycle, TPC-B,
cycle, ... -- and the ratio is taken from the medians (each round's figures are kept in the
JSON too).

Usage: python bench/jobs_bench.py [--quick] [--fast] [--json PATH]
Without DATABASE_URL it starts an embedded server (durable settings unless --fast).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg.types.json import Jsonb

from pgrun import migrate
from pgrun.server import EmbeddedServer, find_bindir
from pgrun.testing import scratch_database

DURABLE = {"fsync": "on", "synchronous_commit": "on", "full_page_writes": "on"}

# Rounds of TPC-B then the batch-100 cycle; the ratio is taken from the medians. Five, not
# three: one round caught in a stretch of CPU steal moves a median of three by a whole round.
ROUNDS = 5


@contextmanager
def server(fast: bool) -> Iterator[str]:
    existing = os.environ.get("DATABASE_URL")
    if existing:
        yield existing
        return
    settings = {} if fast else DURABLE
    with EmbeddedServer(ephemeral=True, settings=settings) as srv:
        yield srv.dsn


def connect(dsn: str) -> psycopg.Connection[tuple[Any, ...]]:
    return psycopg.connect(dsn, autocommit=True)


# Tables that hold configuration, not work: a reset keeps them.
KEEP = ("schema_migrations", "job_definitions", "job_runtime_configs", "job_schedules")


def reset(dsn: str) -> None:
    """Empty every table of work and history (both benchmarks start each measure from here).

    The list comes from the catalog, so a renamed or added table cannot be left behind."""
    with connect(dsn) as conn:
        tables = conn.execute(
            "SELECT string_agg(format('pgrun.%%I', tablename), ', ') FROM pg_tables "
            "WHERE schemaname = 'pgrun' AND NOT (tablename = ANY(%s))",
            (list(KEEP),),
        ).fetchone()
        assert tables is not None and tables[0], "no pgrun tables: is the schema migrated?"
        conn.execute(f"TRUNCATE {tables[0]} CASCADE")


def checkpoint(dsn: str) -> None:
    """Start a timed measure from a fresh checkpoint, whichever measure it is.

    With full_page_writes on, the first change to each page after a checkpoint logs the whole
    page, so a checkpoint that falls inside one measure and not the other (the WAL of one
    200k-job cycle is about a third of the default max_wal_size) tilts the ratio. Needs
    superuser or pg_checkpoint; without either the measure runs as it is."""
    with connect(dsn) as conn:
        try:
            conn.execute("CHECKPOINT")
        except psycopg.errors.InsufficientPrivilege:
            print("note: no CHECKPOINT privilege; measures start wherever the last checkpoint left them")


def switched_rounds(
    rounds: int, sides: dict[str, Callable[[], None]], measures: dict[str, Callable[[], float]]
) -> dict[str, dict[str, list[float]]]:
    """An A/B on one database: every round switches to each side in turn (``sides[name]()``,
    the order alternating between rounds) and takes every measure there; returns each side's
    samples per measure."""
    results: dict[str, dict[str, list[float]]] = {side: {m: [] for m in measures} for side in sides}
    names = list(sides)
    for n in range(rounds):
        for side in names if n % 2 == 0 else names[::-1]:
            sides[side]()
            got = results[side]
            for name, measure in measures.items():
                got[name].append(measure())
            print(
                f"round {n + 1} {side}: " + ", ".join(f"{m} {got[m][-1]:,.2f}" for m in measures), flush=True
            )
    return results


def print_switched(results: dict[str, dict[str, list[float]]], over: tuple[str, str]) -> None:
    """The medians of switched_rounds as a markdown table, and the ratio of side ``over[0]``
    over side ``over[1]`` per measure."""
    sides = list(results)
    measures = list(results[sides[0]])

    def shown(value: float) -> str:
        return f"{value:,.0f}" if value >= 100 else f"{value:.2f}"

    print()
    print("| | " + " | ".join(measures) + " |")
    print("|---|" + "---:|" * len(measures))
    for side in sides:
        print(
            f"| {side} | " + " | ".join(shown(statistics.median(results[side][m])) for m in measures) + " |"
        )
    top, bottom = over
    ratios = [statistics.median(results[top][m]) / statistics.median(results[bottom][m]) for m in measures]
    print(f"| {top} / {bottom} | " + " | ".join(f"{r:.3f}" for r in ratios) + " |")


def bulk_payload(count: int, job_type: str = "bench.noop", **fields: Any) -> Jsonb:
    """``count`` enqueue_jobs elements of ``job_type``, each with ``fields`` (queue, priority, ...)."""
    return Jsonb([{"job_type": job_type, "payload": {"n": i}, **fields} for i in range(count)])


def bench_single_enqueue(dsn: str, seconds: float, driver_dsn: str | None = None) -> float:
    """enqueue_job in a loop on one connection (``driver_dsn``: as another role than the owner)."""
    reset(dsn)
    with connect(driver_dsn or dsn) as conn:
        conn.execute("SELECT * FROM pgrun.enqueue_job(job_type => 'bench.noop')")  # warm up
        done = 0
        start = time.perf_counter()
        while time.perf_counter() - start < seconds:
            conn.execute(
                "SELECT job_id FROM pgrun.enqueue_job(job_type => %s, payload => %s)",
                ("bench.noop", Jsonb({"n": done})),
                prepare=True,
            )
            done += 1
        return done / (time.perf_counter() - start)


def bench_bulk_enqueue(dsn: str, batches: int, size: int = 10_000, driver_dsn: str | None = None) -> float:
    """Rows/s of ``batches`` enqueue_jobs calls of ``size`` jobs (``driver_dsn``: as another role)."""
    reset(dsn)
    payload = bulk_payload(size)
    with connect(driver_dsn or dsn) as conn:
        start = time.perf_counter()
        for _ in range(batches):
            conn.execute("SELECT count(*) FROM pgrun.enqueue_jobs(%s)", (payload,))
        return batches * size / (time.perf_counter() - start)


def load_ready(dsn: str, count: int, job_type: str = "bench.noop", **fields: Any) -> None:
    """Enqueue ``count`` ready jobs, 10,000 per enqueue_jobs call (``fields`` as bulk_payload's)."""
    with connect(dsn) as conn:
        for start in range(0, count, 10_000):
            payload = bulk_payload(min(10_000, count - start), job_type, **fields)
            conn.execute("SELECT count(*) FROM pgrun.enqueue_jobs(%s)", (payload,))


# The cycle's two statements, as the driver prepares them. Both speak binary: the claimed ids
# and lease tokens come back as uuid[] values and go to complete_jobs as those same bytes.
CLAIM = (
    b"SELECT count(*), array_agg(job_id), array_agg(lease_token) "
    b"FROM pgrun.claim_jobs(worker_id => $1::text, lease_seconds => 60, max_jobs => $2::int4)"
)
# The same claim with a job-type filter naming the loaded jobs' type, as the Python worker claims.
CLAIM_OWN_TYPE = CLAIM.replace(
    b"max_jobs => $2::int4)", b"max_jobs => $2::int4, job_types => '{bench.noop}')"
)
COMPLETE = (
    b"SELECT count(*) FILTER (WHERE outcome = 'succeeded') "
    b"FROM pgrun.complete_jobs(job_ids => $1::uuid[], lease_tokens => $2::uuid[])"
)


def _checked(result: psycopg.pq.abc.PGresult, ok: psycopg.pq.ExecStatus) -> psycopg.pq.abc.PGresult:
    if result.status != ok:
        raise psycopg.Error((result.error_message or b"").decode() or f"unexpected status {result.status}")
    return result


def _run(pgconn: psycopg.pq.abc.PGconn, name: bytes, params: list[bytes]) -> psycopg.pq.abc.PGresult:
    """One prepared statement, binary parameters and results."""
    result = pgconn.exec_prepared(name, params, param_formats=[1] * len(params), result_format=1)
    return _checked(result, psycopg.pq.ExecStatus.TUPLES_OK)


def _value(result: psycopg.pq.abc.PGresult, column: int) -> bytes:
    value = result.get_value(0, column)
    assert value is not None, f"column {column} is NULL"
    return value


def _int8(result: psycopg.pq.abc.PGresult) -> int:
    return int.from_bytes(_value(result, 0), "big", signed=True)


def _cycle_worker(dsn: str, i: int, batch: int, ready: Any, counts: Any, claim: bytes = CLAIM) -> None:
    """One connection's loop: claim a batch, complete it, until nothing is left.

    The loop talks to the server through psycopg's libpq layer (psycopg.pq), with prepared
    statements and binary values: the claimed ids and lease tokens are relayed to
    complete_jobs as the uuid[] bytes they arrived in, without a Python object per job, and
    no text is formatted or parsed on either side. The client shares the machine's two cores
    with the server, and what is measured is the server's cycle (pgbench, the yardstick, has
    a C client): per job the client spent about 17 us building UUID objects, 6-8 us relaying
    text arrays through cursors, about 2.5 us relaying binary arrays through psycopg.pq
    (docs/performance.md, "Job hot path, third pass")."""
    done = 0
    with connect(dsn) as conn:
        pgconn = conn.pgconn
        _checked(pgconn.prepare(b"claim", claim), psycopg.pq.ExecStatus.COMMAND_OK)
        _checked(pgconn.prepare(b"complete", COMPLETE), psycopg.pq.ExecStatus.COMMAND_OK)
        worker = f"bench-{i}".encode()
        size = batch.to_bytes(4, "big")
        ready.wait()
        while True:
            claimed = _run(pgconn, b"claim", [worker, size])
            count = _int8(claimed)
            if not count:
                break
            completed = _int8(_run(pgconn, b"complete", [_value(claimed, 1), _value(claimed, 2)]))
            assert completed == count, f"completed {completed} of {count}"
            done += count
    counts.put(done)


def bench_cycle(
    dsn: str,
    batch: int,
    jobs: int,
    connections: int = 4,
    driver_dsn: str | None = None,
    claim: bytes = CLAIM,
) -> float:
    """claim_jobs(max_jobs => batch) then complete_jobs on `connections` connections until empty.

    Each connection is driven by its own process, so the client's interpreter lock is not
    what is measured. The jobs are loaded through ``dsn`` (the owner); the cycle connects as
    ``driver_dsn`` when given (a worker role). ``claim`` is the claim statement, with CLAIM's
    two parameters (e.g. CLAIM_OWN_TYPE)."""
    return timed_cycle(
        dsn,
        jobs,
        connections,
        lambda i, ready, counts: _cycle_worker(driver_dsn or dsn, i, batch, ready, counts, claim),
    )


def timed_cycle(dsn: str, jobs: int, connections: int, worker: Callable[[int, Any, Any], None]) -> float:
    """Jobs per second of ``connections`` processes draining ``jobs`` fresh ready jobs: each runs
    ``worker(i, ready, counts)``, waits at the barrier ``ready``, then puts how many it finished
    on ``counts``. The clock runs from the barrier to the last count."""
    reset(dsn)
    load_ready(dsn, jobs)
    with connect(dsn) as conn:
        conn.execute("ANALYZE pgrun.jobs")
    checkpoint(dsn)
    ctx = multiprocessing.get_context("fork")
    ready = ctx.Barrier(connections + 1)
    counts = ctx.Queue()
    procs = [ctx.Process(target=worker, args=(i, ready, counts)) for i in range(connections)]
    for p in procs:
        p.start()
    ready.wait(60)
    start = time.perf_counter()
    total = sum(counts.get(timeout=600) for _ in procs)
    elapsed = time.perf_counter() - start
    for p in procs:
        p.join(60)
    assert total == jobs, f"claimed {total} of {jobs}"
    return jobs / elapsed


def _timed_claim(conn: psycopg.Connection[tuple[Any, ...]]) -> float:
    """Milliseconds for one claim_jobs(max_jobs => 1) call; its completion follows, not timed."""
    start = time.perf_counter()
    row = conn.execute(
        "SELECT job_id, lease_token FROM pgrun.claim_jobs(worker_id => 'lat', lease_seconds => 60)",
        prepare=True,
    ).fetchone()
    elapsed = (time.perf_counter() - start) * 1000
    assert row is not None, "ran out of jobs"
    conn.execute("SELECT pgrun.complete_job(job_id => %s, lease_token => %s)", row, prepare=True)
    return elapsed


def claim_latencies(dsns: dict[str, str], samples: int) -> dict[str, dict[str, float]]:
    """p50/p99/mean claim milliseconds per database, one claim on each in turn.

    Taking the samples in turns, rather than all of one database and then all of the other,
    lets the machine's drift (CPU steal comes and goes over seconds) fall on both alike."""
    conns = {name: connect(dsn) for name, dsn in dsns.items()}
    times: dict[str, list[float]] = {name: [] for name in dsns}
    try:
        for _ in range(samples):
            for name, conn in conns.items():
                times[name].append(_timed_claim(conn))
    finally:
        for conn in conns.values():
            conn.close()
    summary: dict[str, dict[str, float]] = {}
    for name, series in times.items():
        series.sort()
        summary[name] = {
            "p50_ms": statistics.median(series),
            "p99_ms": series[int(len(series) * 0.99) - 1],
            "mean_ms": statistics.fmean(series),
        }
    return summary


def load_history(dsn: str, finished: int, ready: int) -> None:
    """`finished` succeeded rows and `ready` queued rows, loaded the way a busy day leaves them."""
    with connect(dsn) as conn:
        conn.execute("ALTER TABLE pgrun.jobs SET (autovacuum_enabled = false)")
        conn.execute(
            """
            INSERT INTO pgrun.jobs (job_type, queue, priority, status, payload, run_at, attempt,
                total_attempts, max_attempts, backoff_base_seconds, backoff_max_seconds, backoff_jitter,
                result, started_at, finished_at)
            SELECT 'bench.noop', 'default', 100, 'succeeded', jsonb_build_object('n', g),
                now() - interval '1 hour', 1, 1, 20, 2, 3600, 0.2, '{}', now() - interval '59 minutes',
                now() - interval '58 minutes'
            FROM generate_series(1, %s) AS g
            """,
            (finished,),
        )
    load_ready(dsn, ready)


def bench_claim_latency(
    admin: str, dsn: str, samples: int, finished: int, ready: int
) -> dict[str, dict[str, float]]:
    """Claim latency on `dsn` loaded with history, against a second, near-empty database.

    The large database is measured twice, right after the bulk load (stale statistics) and
    after ANALYZE, each time in turns with the near-empty one."""
    with scratch_database(admin, prefix="pgrun_bench_empty") as empty:
        migrate.migrate(empty)
        load_ready(empty, 2 * samples + 100)
        with connect(empty) as conn:
            conn.execute("ANALYZE pgrun.jobs")

        reset(dsn)
        with connect(dsn) as conn:
            # Forget the statistics gathered on the small table: the planner sees stale numbers.
            conn.execute("ANALYZE pgrun.jobs")
        load_history(dsn, finished, ready)
        results = claim_latencies({"empty": empty, "large_stale_stats": dsn}, samples)
        with connect(dsn) as conn:
            conn.execute("ANALYZE pgrun.jobs")
            conn.execute("ALTER TABLE pgrun.jobs RESET (autovacuum_enabled)")
        again = claim_latencies({"empty_again": empty, "large_analyzed": dsn}, samples)
    return {**results, **again}


def bench_pgbench(dsn: str, seconds: int, clients: int = 4) -> float:
    bindir = find_bindir()
    params = conninfo_to_dict(dsn)
    env = {
        **os.environ,
        "PGHOST": str(params.get("host", "127.0.0.1")),
        "PGPORT": str(params.get("port", "5432")),
        "PGUSER": str(params.get("user", "")),
        "PGPASSWORD": str(params.get("password", "")),
    }
    with scratch_database(dsn, prefix="pgbench") as bench_dsn:
        name = str(conninfo_to_dict(bench_dsn)["dbname"])
        subprocess.run(
            [str(bindir / "pgbench"), "-i", "-q", "-s", "10", name], env=env, check=True, capture_output=True
        )
        checkpoint(bench_dsn)
        out = subprocess.run(
            [
                str(bindir / "pgbench"),
                "-c",
                str(clients),
                "-j",
                "2",
                "-T",
                str(seconds),
                "-M",
                "prepared",
                name,
            ],
            env=env,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    match = re.search(r"tps = ([\d.]+)", out)
    assert match, out
    return float(match.group(1))


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="smaller sizes, for a smoke run")
    parser.add_argument("--fast", action="store_true", help="embedded server without fsync")
    parser.add_argument("--json", default="bench/results/jobs.json")
    args = parser.parse_args()
    q = args.quick
    results: dict[str, Any] = {
        "server": "embedded, fsync off" if args.fast else "embedded, durable (fsync on)"
    }
    with server(args.fast) as admin, scratch_database(admin, prefix="pgrun_bench") as dsn:
        migrate.migrate(dsn)
        rounds: list[tuple[float, float]] = []
        for _ in range(1 if q else ROUNDS):
            tps = bench_pgbench(admin, 5 if q else 15)
            rate = bench_cycle(dsn, 100, 20_000 if q else 200_000)
            rounds.append((tps, rate))
            print(
                f"round: pgbench TPC-B {tps:.0f} tps, claim->complete batch 100: {rate:.0f} jobs/s",
                flush=True,
            )
        results["rounds_tpcb_tps_and_batch_100_jobs_per_s"] = rounds
        results["pgbench_tpcb_tps"] = statistics.median(r[0] for r in rounds)
        results["cycle_batch_100_jobs_per_s"] = statistics.median(r[1] for r in rounds)
        print(f"pgbench TPC-B (median): {results['pgbench_tpcb_tps']:.0f} tps", flush=True)
        results["single_enqueue_per_s"] = bench_single_enqueue(dsn, 2 if q else 10)
        print(f"single enqueue: {results['single_enqueue_per_s']:.0f}/s", flush=True)
        results["bulk_enqueue_rows_per_s"] = bench_bulk_enqueue(dsn, 2 if q else 10)
        print(f"bulk enqueue: {results['bulk_enqueue_rows_per_s']:.0f} rows/s", flush=True)
        for batch, jobs in ((1, 2_000 if q else 20_000), (10, 10_000 if q else 50_000)):
            rate = bench_cycle(dsn, batch, jobs)
            results[f"cycle_batch_{batch}_jobs_per_s"] = rate
            print(f"claim->complete batch {batch}: {rate:.0f} jobs/s", flush=True)
        print(
            f"claim->complete batch 100 (median): {results['cycle_batch_100_jobs_per_s']:.0f} jobs/s",
            flush=True,
        )
        results["claim_latency"] = bench_claim_latency(
            admin, dsn, 300 if q else 2000, 100_000 if q else 1_000_000, 10_000 if q else 100_000
        )
        for name, lat in results["claim_latency"].items():
            print(f"claim latency {name}: p50 {lat['p50_ms']:.2f} ms, p99 {lat['p99_ms']:.2f} ms", flush=True)
    tps = results["pgbench_tpcb_tps"]
    lat = results["claim_latency"]
    results["ratios"] = {
        "cycle_batch_100_over_tpcb": results["cycle_batch_100_jobs_per_s"] / tps,
        "claim_p50_large_stale_over_empty": lat["large_stale_stats"]["p50_ms"] / lat["empty"]["p50_ms"],
        "claim_p50_large_analyzed_over_empty": lat["large_analyzed"]["p50_ms"] / lat["empty_again"]["p50_ms"],
    }
    print()
    print("| measure | value |")
    print("|---|---|")
    for key, value in results.items():
        if isinstance(value, float):
            print(f"| {key} | {value:,.0f} |")
    for key, value in results["ratios"].items():
        print(f"| {key} | {value:.2f} |")
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
