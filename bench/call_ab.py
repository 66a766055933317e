"""One-job calls of this checkout against an older commit, interleaved call by call.

What a single enqueue, an idle worker's claim of one job and the completion of one job cost,
for changes too small for bench/ab_bench.py's alternating rounds to see on a shared machine
(its rounds move by ±20 %). Both schemas live in one server, each in its own database, called
by a login role of its pgrun_admin (no superuser: a superuser skips the privilege checks):
one connection per schema, and every cycle (enqueue_job, claim_jobs, complete_jobs, each its
own transaction) runs on one and then on the other, in turns, so drift falls on both alike.
Each step's per-call time is the median of its calls (spikes from the host do not move it);
a round's ratio is head / base of those medians, and the result is the median over rounds.

With --sync off (the default) a commit does not wait for the WAL flush, so the time is the
server's work and the round trip; --sync on adds the flush of a durable commit. Unlike
server_cpu_bench.py, whose calls share one transaction inside a DO block, every call here is a
transaction of its own, as a web request's enqueue and an idle worker's claim are: what plpgsql
and the executor set up again in each transaction is counted.

With --batch N (N > 1) a cycle is enqueue_jobs of N jobs, claim_jobs of N and complete_jobs of
N instead: the other side of a change that moves cost between statements and rows (what a
worker's batches pay). Use fewer --calls then (a cycle of 500 jobs takes ~30 ms a side).

With --job-types the claims name the job type they take (bench.noop), as a worker's claims
name the types it has handlers for; without it they name none. With --capped N the job type
has max_concurrency N on both sides (set_job_runtime_config): the claims take the capped path
(the type's runtime row locked, its running jobs counted).

Usage: python bench/call_ab.py --base REF [--rounds 3] [--calls 3000] [--sync off|on] [--batch 1]
                               [--job-types] [--capped N]
Without DATABASE_URL it starts an embedded server (durable settings).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ab_bench import admin_sides

WARMUP = 300


def steps(batch: int) -> tuple[str, str, str]:
    if batch == 1:
        return ("enqueue_job", "claim_jobs (one job)", "complete_jobs (one job)")
    return (f"enqueue_jobs ({batch} jobs)", f"claim_jobs ({batch} jobs)", f"complete_jobs ({batch} jobs)")


def cycle(
    conn: psycopg.Connection[Any], batch: int, job_types: list[str] | None
) -> tuple[float, float, float]:
    """``batch`` jobs through their life (one job: enqueue_job; more: enqueue_jobs), each call
    its own transaction, the claim naming ``job_types``; seconds per step."""
    clock = time.perf_counter
    t0 = clock()
    if batch == 1:
        conn.execute("SELECT count(*) FROM pgrun.enqueue_job('bench.noop', '{\"n\": 1}')").fetchall()
    else:
        conn.execute(
            "SELECT count(*) FROM pgrun.enqueue_jobs(("
            "SELECT jsonb_agg(jsonb_build_object("
            "'job_type', 'bench.noop', 'payload', jsonb_build_object('n', i))"
            ") FROM generate_series(1, %s) AS i))",
            (batch,),
        ).fetchall()
    t1 = clock()
    rows = conn.execute(
        "SELECT job_id, lease_token FROM pgrun.claim_jobs('call-ab', 60, %s, NULL, %s)",
        (max(10, batch), job_types),
    ).fetchall()
    t2 = clock()
    conn.execute(
        "SELECT count(*) FROM pgrun.complete_jobs(%s::uuid[], %s::uuid[], NULL)",
        ([r[0] for r in rows], [r[1] for r in rows]),
    ).fetchall()
    t3 = clock()
    assert len(rows) == batch, (len(rows), batch)
    return t1 - t0, t2 - t1, t3 - t2


def run_round(
    dsns: dict[str, str], calls: int, sync: str, batch: int, job_types: list[str] | None
) -> dict[str, list[float]]:
    """Per-step medians (µs) of ``calls`` cycles on each side, interleaved one by one."""
    conns = {
        name: psycopg.connect(dsn, autocommit=True, options=f"-c synchronous_commit={sync}")
        for name, dsn in dsns.items()
    }
    try:
        names = list(conns)
        for _ in range(max(3, WARMUP // batch)):
            for name in names:
                cycle(conns[name], batch, job_types)
        got: dict[str, list[tuple[float, float, float]]] = {name: [] for name in names}
        for n in range(calls):
            for name in names if n % 2 == 0 else names[::-1]:
                got[name].append(cycle(conns[name], batch, job_types))
    finally:
        for conn in conns.values():
            conn.close()
    return {
        name: [statistics.median(c[i] for c in cycles) * 1e6 for i in range(3)]
        for name, cycles in got.items()
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--base", required=True, help="the commit to compare with")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--calls", type=int, default=3000, help="cycles per side and round")
    parser.add_argument("--sync", choices=("off", "on"), default="off")
    parser.add_argument(
        "--batch", type=int, default=1, help="jobs per call (more than one: enqueue_jobs, claims that size)"
    )
    parser.add_argument(
        "--job-types", action="store_true", help="claims name their job type, as a worker's do"
    )
    parser.add_argument("--capped", type=int, help="the job type's max_concurrency on both sides")
    parser.add_argument("--json", default="bench/results/call_ab.json")
    args = parser.parse_args()

    if not 1 <= args.batch <= 1000:
        parser.error("--batch is 1..1000 (claim_jobs' max_jobs)")
    step_names = steps(args.batch)
    rounds: list[dict[str, list[float]]] = []
    with admin_sides(args.base, "pgrun_call", parser.error) as sides:
        dsns = sides.dsns
        job_types = ["bench.noop"] if args.job_types else None
        if args.capped is not None:
            for dsn in dsns.values():
                with psycopg.connect(dsn, autocommit=True) as conn:
                    conn.execute(
                        "SELECT pgrun.set_job_runtime_config('bench.noop', max_concurrency => %s)",
                        (args.capped,),
                    )
        for n in range(args.rounds):
            got = run_round(dsns, args.calls, args.sync, args.batch, job_types)
            rounds.append(got)
            print(
                f"round {n + 1}: "
                + ", ".join(
                    f"{step} {got['base'][i]:.0f} -> {got['head'][i]:.0f} us"
                    for i, step in enumerate(step_names)
                ),
                flush=True,
            )

    ratios = {
        step: statistics.median(r["head"][i] / r["base"][i] for r in rounds)
        for i, step in enumerate(step_names)
    }
    medians = {
        side: {step: statistics.median(r[side][i] for r in rounds) for i, step in enumerate(step_names)}
        for side in ("base", "head")
    }
    print()
    print(f"| call (synchronous_commit {args.sync}) | base {args.base}, µs | head, µs | head / base |")
    print("|---|---:|---:|---:|")
    for step in step_names:
        print(f"| {step} | {medians['base'][step]:.0f} | {medians['head'][step]:.0f} | {ratios[step]:.3f} |")
    results = {
        "base": args.base,
        "sync": args.sync,
        "batch": args.batch,
        "job_types": args.job_types,
        "capped": args.capped,
        "rounds": rounds,
        "medians": medians,
        "ratios": ratios,
    }
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
