"""The Python worker of this checkout against the one of an older commit, end to end.

Runs bench/peers/pgrun_worker.py's throughput workload (N no-op jobs enqueued in bulk, then
`pgrun worker`'s loops at the given concurrency until every job is written) once per side per
round, each run on a fresh database of one server, the order of the two sides swapped every
round. The contestant script is this checkout's for both; only the `pgrun` package differs:
the base side imports it from `git archive REF python sql plpgsql` (so it migrates its own
schema too). Reports each run's jobs/s and the worker process's CPU per job, then the medians
and the median of the per-round ratios (head / base). For changes to the worker or the client:
the SQL functions' own share shows in bench/ab_bench.py.

Usage: python bench/worker_ab.py --base REF [--rounds 6] [--jobs 50000] [--concurrency 10]
Without DATABASE_URL it starts an embedded server with the benches' durable settings.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from jobs_bench import server
from pgrun.testing import extract_schema, scratch_database

REPO = Path(__file__).resolve().parents[1]
CONTESTANT = REPO / "bench" / "peers" / "pgrun_worker.py"
MEASURES = ("jobs_per_s", "worker_cpu_us_per_job")


def run_once(dsn: str, python_path: Path, jobs: int, concurrency: int) -> dict[str, float]:
    env = dict(os.environ, PYTHONPATH=str(python_path))
    out = subprocess.run(
        [
            sys.executable,
            str(CONTESTANT),
            "--dsn",
            dsn,
            "--mode",
            "throughput",
            "--jobs",
            str(jobs),
            "--concurrency",
            str(concurrency),
        ],
        env=env,
        cwd=CONTESTANT.parent,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    result = json.loads([line for line in out.splitlines() if line.startswith("{")][-1])
    if result.get("left_in_queue"):
        raise RuntimeError(f"{result['left_in_queue']} jobs were not written: {result}")
    return {m: float(result[m]) for m in MEASURES}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--base", required=True, help="the commit to compare against")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--jobs", type=int, default=50_000)
    parser.add_argument("--concurrency", type=int, default=10)
    args = parser.parse_args()
    results: dict[str, list[dict[str, float]]] = {"base": [], "head": []}
    with tempfile.TemporaryDirectory(prefix="pgrun_worker_ab_") as folder, server(fast=False) as admin:
        base_tree = extract_schema(args.base, Path(folder), ("python", "sql", "plpgsql")) / "python"
        trees = {"base": base_tree, "head": REPO / "python"}
        for n in range(args.rounds):
            for side in ("base", "head") if n % 2 == 0 else ("head", "base"):
                with scratch_database(admin, prefix="pgrun_wab") as dsn:
                    got = run_once(dsn, trees[side], args.jobs, args.concurrency)
                results[side].append(got)
                print(
                    f"round {n + 1} {side}: {got['jobs_per_s']:,.0f} jobs/s, "
                    f"worker {got['worker_cpu_us_per_job']:.1f} µs CPU/job",
                    flush=True,
                )
    for measure in MEASURES:
        base = [r[measure] for r in results["base"]]
        head = [r[measure] for r in results["head"]]
        ratios = [h / b for h, b in zip(head, base, strict=True)]
        print(
            f"{measure}: base {statistics.median(base):,.1f}, head {statistics.median(head):,.1f}, "
            f"head/base {statistics.median(ratios):.3f} (per round {', '.join(f'{r:.2f}' for r in ratios)})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
