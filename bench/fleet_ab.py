"""A small fleet of Python workers of this checkout against one of an older commit.

What one worker's choices cost the others: the jobs a worker holds ahead of its free slots (its
local queue) are out of every other worker's reach, and count against their type's
max_concurrency. Each case is one run of bench/fleet_run.py per side per round, on a fresh
database of one server, the order of the sides swapped every round; the contestant script is
this checkout's for both, only the `pgrun` package differs (the base side imports it from
`git archive REF python sql plpgsql`, which migrates its own schema), as in bench/worker_ab.py.

Cases (two workers of four slots; the handler sleeps the job's time):
* capped N ms: a type capped at 8 (or 1000: a cap that never binds), the first worker started
  alone, the second once the first runs four jobs;
* burst 500 ms: both workers have run jobs of that time, idle 0.5 s, then eight jobs at once;
* chain: one worker runs a workflow of 40 steps, each released by the one before.

Reports each run's seconds and the medians per case, against the ideal (the jobs spread over
the usable slots with no gap).

Usage: python bench/fleet_ab.py --base REF [--rounds 3]
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
CONTESTANT = REPO / "bench" / "fleet_run.py"
CASES = {
    "capped 8, 300 ms x 64": ["--scenario", "capped", "--cap", "8", "--job-ms", "300", "--jobs", "64"],
    "capped 8, 50 ms x 320": ["--scenario", "capped", "--cap", "8", "--job-ms", "50", "--jobs", "320"],
    "capped 8, 2 ms x 2000": ["--scenario", "capped", "--cap", "8", "--job-ms", "2", "--jobs", "2000"],
    "capped 1000, 2 ms x 2000": ["--scenario", "capped", "--cap", "1000", "--job-ms", "2", "--jobs", "2000"],
    "burst, 500 ms x 8": ["--scenario", "burst", "--job-ms", "500", "--jobs", "8"],
    "chain of 40 steps, 0 ms, one worker": [
        "--scenario",
        "chain",
        "--job-ms",
        "0",
        "--jobs",
        "40",
        "--workers",
        "1",
    ],
}


def run_once(dsn: str, python_path: Path, case: list[str]) -> dict[str, object]:
    env = dict(os.environ, PYTHONPATH=str(python_path))
    done = subprocess.run(
        [sys.executable, str(CONTESTANT), "--dsn", dsn, *case], env=env, capture_output=True, text=True
    )
    if done.returncode:
        raise RuntimeError(f"{CONTESTANT.name} {' '.join(case)} failed:\n{done.stderr}")
    out = done.stdout
    result: dict[str, object] = json.loads([line for line in out.splitlines() if line.startswith("{")][-1])
    return result


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--base", required=True, help="the commit to compare against")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    seconds: dict[tuple[str, str], list[float]] = {}
    ideal: dict[str, object] = {}
    with tempfile.TemporaryDirectory(prefix="pgrun_fleet_ab_") as folder, server(fast=False) as admin:
        base_tree = extract_schema(args.base, Path(folder), ("python", "sql", "plpgsql")) / "python"
        trees = {"base": base_tree, "head": REPO / "python"}
        for n in range(args.rounds):
            for label, case in CASES.items():
                for side in ("base", "head") if n % 2 == 0 else ("head", "base"):
                    with scratch_database(admin, prefix="pgrun_fleet") as dsn:
                        got = run_once(dsn, trees[side], case)
                    seconds.setdefault((label, side), []).append(float(str(got["seconds"])))
                    ideal[label] = got["ideal_seconds"]
                    print(f"round {n + 1} {label} {side}: {json.dumps(got)}", flush=True)
    print()
    print(f"| case (two workers of four slots) | ideal, s | base {args.base}, s | head, s | head / base |")
    print("|---|---:|---:|---:|---:|")
    for label in CASES:
        base = statistics.median(seconds[(label, "base")])
        head = statistics.median(seconds[(label, "head")])
        print(f"| {label} | {ideal[label]} | {base:.2f} | {head:.2f} | {head / base:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
