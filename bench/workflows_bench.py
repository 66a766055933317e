"""Workflow benchmarks, side by side with plain jobs in the same run.

  * enqueue time for a 1,000-step and a 10,000-step DAG (a layered DAG: each step depends on
    up to two steps of the previous layer of 10)
  * completing a 1,000-wide fan-in (1 -> 1000 -> 1) with 4 concurrent connections: time from
    the first completion to the join's release; the same 9,998 wide (a run's 10,000-step
    limit), with fresh statistics and with those of the empty tables (no ANALYZE after the
    workflow is enqueued)
  * workflow-job throughput as a ratio of plain-job throughput: the same number of jobs,
    claimed and completed by 4 connections in batches of 10, as plain jobs and as
    workflow jobs in 10-step chains (every completion releases the next step) and in
    50-step fan-outs (roots only)

Usage: python bench/workflows_bench.py [--quick] [--fast] [--json PATH]
Without DATABASE_URL it starts an embedded server (durable settings unless --fast).
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from pathlib import Path
from typing import Any

from psycopg.types.json import Jsonb

from jobs_bench import connect, reset, server
from pgrun import migrate
from pgrun.testing import scratch_database


def layered_dag(steps: int, width: int = 10) -> dict[str, Any]:
    spec: list[dict[str, Any]] = []
    for i in range(steps):
        layer, pos = divmod(i, width)
        step: dict[str, Any] = {"key": f"s{i}", "job_type": "wf.step"}
        if layer:
            prev = (layer - 1) * width
            step["depends_on"] = sorted({f"s{prev + pos}", f"s{prev + (pos + 1) % width}"})
        spec.append(step)
    return {"steps": spec}


def bench_enqueue_dag(dsn: str, steps: int) -> float:
    reset(dsn)
    spec = Jsonb(layered_dag(steps))
    with connect(dsn) as conn:
        start = time.perf_counter()
        conn.execute("SELECT * FROM pgrun.enqueue_workflow(%s)", (spec,))
        return (time.perf_counter() - start) * 1000


def drain(dsn: str, connections: int = 4, batch: int = 10, job_types: list[str] | None = None) -> int:
    """Claim and complete until nothing is ready; return how many jobs were completed."""
    done = [0] * connections

    def worker(i: int) -> None:
        idle = 0
        with connect(dsn) as conn:
            while idle < 3:
                rows = conn.execute(
                    "SELECT job_id, lease_token FROM pgrun.claim_jobs(worker_id => %s, lease_seconds => 60, "
                    "max_jobs => %s, job_types => %s)",
                    (f"bench-{i}", batch, job_types),
                    prepare=True,
                ).fetchall()
                if not rows:
                    idle += 1
                    time.sleep(0.002)
                    continue
                idle = 0
                conn.execute(
                    "SELECT count(*) FROM pgrun.complete_jobs(job_ids => %s, lease_tokens => %s)",
                    ([r[0] for r in rows], [r[1] for r in rows]),
                    prepare=True,
                )
                done[i] += len(rows)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(connections)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(done)


ANALYZE_WORKFLOW_TABLES = (
    "ANALYZE pgrun.jobs, pgrun.workflow_runs, pgrun.workflow_steps, pgrun.workflow_step_dependencies"
)


def bench_fan_in(dsn: str, width: int, stale: bool = False) -> float:
    """Milliseconds from the first fan-out completion to the join being released. ``stale``:
    the statistics are those of the empty tables (ANALYZE before the workflow is enqueued, none
    after), as on a new install whose first big workflow runs before autovacuum analyzes."""
    reset(dsn)
    steps: list[dict[str, Any]] = [{"key": "root", "job_type": "wf.root"}]
    steps += [{"key": f"f{i}", "job_type": "wf.fan", "depends_on": ["root"]} for i in range(width)]
    steps.append({"key": "join", "job_type": "wf.join", "depends_on": [f"f{i}" for i in range(width)]})
    with connect(dsn) as conn:
        if stale:
            conn.execute(ANALYZE_WORKFLOW_TABLES)
        conn.execute("SELECT * FROM pgrun.enqueue_workflow(%s)", (Jsonb({"steps": steps}),))
        if not stale:
            conn.execute(ANALYZE_WORKFLOW_TABLES)
        assert drain(dsn, connections=1, job_types=["wf.root"]) == 1
        start = time.perf_counter()
        completed = drain(dsn, connections=4, job_types=["wf.fan"])
        elapsed = (time.perf_counter() - start) * 1000
        assert completed == width
        row = conn.execute("SELECT count(*) FROM pgrun.jobs WHERE job_type = 'wf.join'").fetchone()
        assert row == (1,), "the join must be released exactly once"
    return elapsed


def bench_plain(dsn: str, jobs: int) -> float:
    reset(dsn)
    with connect(dsn) as conn:
        payload = Jsonb([{"job_type": "plain.noop"} for _ in range(jobs)])
        conn.execute("SELECT count(*) FROM pgrun.enqueue_jobs(%s)", (payload,))
        conn.execute("ANALYZE pgrun.jobs")
    start = time.perf_counter()
    assert drain(dsn) == jobs
    return jobs / (time.perf_counter() - start)


def bench_workflow_jobs(dsn: str, jobs: int, shape: str) -> float:
    reset(dsn)
    per_run = 10 if shape == "chain" else 50
    with connect(dsn) as conn:
        for _ in range(jobs // per_run):
            if shape == "chain":
                steps = [
                    {"key": f"c{i}", "job_type": "wf.step", **({"depends_on": [f"c{i - 1}"]} if i else {})}
                    for i in range(per_run)
                ]
            else:
                steps = [{"key": f"r{i}", "job_type": "wf.step"} for i in range(per_run)]
            conn.execute("SELECT * FROM pgrun.enqueue_workflow(%s)", (Jsonb({"steps": steps}),))
        conn.execute("ANALYZE pgrun.jobs")
    start = time.perf_counter()
    completed = drain(dsn)
    elapsed = time.perf_counter() - start
    assert completed == jobs, f"completed {completed} of {jobs}"
    with connect(dsn) as conn:
        row = conn.execute("SELECT count(*) FROM pgrun.workflow_runs WHERE status <> 'succeeded'").fetchone()
        assert row == (0,), "every run must have succeeded"
    return jobs / elapsed


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--fast", action="store_true", help="embedded server without fsync")
    parser.add_argument("--json", default="bench/results/workflows.json")
    args = parser.parse_args()
    jobs = 2_000 if args.quick else 10_000
    results: dict[str, Any] = {
        "server": "embedded, fsync off" if args.fast else "embedded, durable (fsync on)"
    }
    with server(args.fast) as admin, scratch_database(admin, prefix="pgrun_bench") as dsn:
        migrate.migrate(dsn)
        for steps in (1_000, 10_000):
            results[f"enqueue_dag_{steps}_ms"] = bench_enqueue_dag(dsn, steps)
            print(f"enqueue {steps}-step DAG: {results[f'enqueue_dag_{steps}_ms']:.0f} ms", flush=True)
        results["fan_in_1000_ms"] = bench_fan_in(dsn, 1_000)
        print(f"1000-wide fan-in, 4 connections: {results['fan_in_1000_ms']:.0f} ms", flush=True)
        # 9,998 into 1 with fresh and with an empty table's statistics (issue 15 item 6)
        for stale in (False, True):
            key = f"fan_in_9998{'_stale_stats' if stale else ''}_ms"
            results[key] = bench_fan_in(dsn, 9_998, stale=stale)
            print(
                f"9998-wide fan-in, 4 connections, {'stale' if stale else 'fresh'} statistics: "
                f"{results[key]:.0f} ms",
                flush=True,
            )
        results["plain_jobs_per_s"] = bench_plain(dsn, jobs)
        results["chain_jobs_per_s"] = bench_workflow_jobs(dsn, jobs, "chain")
        results["fanout_jobs_per_s"] = bench_workflow_jobs(dsn, jobs, "fanout")
        # Plain once more, so drift during the run shows up in the ratio's denominator.
        results["plain_jobs_per_s_again"] = bench_plain(dsn, jobs)
    plain = (results["plain_jobs_per_s"] + results["plain_jobs_per_s_again"]) / 2
    results["ratio_chain_over_plain"] = results["chain_jobs_per_s"] / plain
    results["ratio_fanout_over_plain"] = results["fanout_jobs_per_s"] / plain
    print()
    print("| measure | value |")
    print("|---|---|")
    for key, value in results.items():
        if isinstance(value, float):
            print(f"| {key} | {value:,.2f} |" if key.startswith("ratio") else f"| {key} | {value:,.0f} |")
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
