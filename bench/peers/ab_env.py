"""One contestant of the peers harness under several environments, side by side in one run.

An A/B of a worker setting read from the environment (``JOBS_ASYNC_CLAIMS``, ``JOBS_PREFETCH``):
every variant runs every workload once per round, in an order that rotates from round to round,
on one server, so drift on a shared machine falls on all of them alike; the table shows each
variant's median over the rounds and its ratio to the first variant's median (a throughput
workload also reports its bulk load's rows/s: the enqueue of its jobs before the worker starts).

Usage:
  python bench/peers/ab_env.py --variant async:JOBS_ASYNC_CLAIMS=1 --variant durable:JOBS_ASYNC_CLAIMS=0
                               [--contestant "pgrun worker"] [--rounds 3] [--quick] [--jobs N]
                               [--workload c10 c50 latency] [--fast] [--json PATH]
A variant is NAME:VAR=VALUE[,VAR=VALUE...]. Without DATABASE_URL it starts an embedded server
(durable settings unless --fast). The contestant scripts and workloads are run.py's.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from run import CONTESTANTS, MAIN_KEYS, run_one, server, workloads

METRICS = {"throughput": ("jobs_per_s", "enqueue_rows_per_s"), "latency": ("p50_ms", "p99_ms")}


def parse_variant(text: str) -> tuple[str, dict[str, str]]:
    name, _, assignments = text.partition(":")
    env: dict[str, str] = {}
    for item in filter(None, assignments.split(",")):
        var, sep, value = item.partition("=")
        if not sep:
            raise argparse.ArgumentTypeError(f"{item!r} is not VAR=VALUE")
        env[var.strip()] = value.strip()
    if not name or not env:
        raise argparse.ArgumentTypeError(f"{text!r} is not NAME:VAR=VALUE[,VAR=VALUE...]")
    return name, env


def run_variant(env: dict[str, str], *args: Any) -> dict[str, Any]:
    """run.run_one with ``env`` in this process's environment (the contestant inherits it)."""
    saved = {var: os.environ.get(var) for var in env}
    os.environ.update(env)
    try:
        return run_one(*args)
    finally:
        for var, value in saved.items():
            if value is None:
                os.environ.pop(var, None)
            else:
                os.environ[var] = value


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--variant", action="append", type=parse_variant, required=True)
    parser.add_argument("--contestant", default="pgrun worker", choices=sorted(CONTESTANTS))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="2,000 jobs and 50 latency samples")
    parser.add_argument("--jobs", type=int, help="jobs per throughput workload (overrides --quick's)")
    parser.add_argument("--workload", nargs="*", choices=MAIN_KEYS, default=list(MAIN_KEYS))
    parser.add_argument("--fast", action="store_true", help="embedded server without fsync")
    parser.add_argument("--timeout-s", type=float, default=600.0)
    parser.add_argument("--json", default="bench/results/ab-env.json")
    args = parser.parse_args()
    variants: list[tuple[str, dict[str, str]]] = args.variant
    chosen = [w for w in workloads(args.quick) if w["key"] in args.workload]
    for w in chosen:
        if args.jobs and w["mode"] == "throughput":
            w["jobs"] = args.jobs
    out_path = Path(args.json)
    log_dir = out_path.parent / "peers-logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    samples: dict[str, dict[str, dict[str, list[float]]]] = {
        name: {w["key"]: {} for w in chosen} for name, _ in variants
    }
    report: dict[str, Any] = {
        "command": "python bench/peers/ab_env.py " + " ".join(shlex.quote(a) for a in sys.argv[1:]),
        "server": "embedded, fsync off" if args.fast else "embedded, durable (fsync on)",
        "cpus": os.cpu_count(),
        "loadavg_at_start": os.getloadavg(),
        "started_at": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "contestant": args.contestant,
        "variants": dict(variants),
        "workloads": chosen,
        "settings": {},
    }
    with server(args.fast) as admin:
        for n in range(args.rounds):
            for workload in chosen:
                order = variants[n % len(variants) :] + variants[: n % len(variants)]
                for name, env in order:
                    variant_logs = log_dir / name
                    variant_logs.mkdir(exist_ok=True)
                    res = run_variant(env, admin, args.contestant, workload, args.timeout_s, variant_logs)
                    report["settings"].setdefault(name, res.get("settings"))
                    if "error" in res or "skipped" in res:
                        print(f"round {n + 1} {workload['key']} {name}: {res}", flush=True)
                        continue
                    shown = []
                    for metric in METRICS[workload["mode"]]:
                        samples[name][workload["key"]].setdefault(metric, []).append(float(res[metric]))
                        shown.append(f"{metric} {res[metric]:,.2f}")
                    print(f"round {n + 1} {workload['key']:>8} {name:>12}: {', '.join(shown)}", flush=True)
    report["loadavg_at_end"] = os.getloadavg()
    report["samples"] = samples
    first = variants[0][0]
    lines = [
        "| variant | workload | metric | median | rounds | ratio to " + first + " |",
        "|---|---|---|---:|---|---:|",
    ]
    for workload in chosen:
        for name, _ in variants:
            for metric, values in samples[name][workload["key"]].items():
                median = statistics.median(values)
                base = samples[first][workload["key"]].get(metric)
                ratio = median / statistics.median(base) if base else float("nan")
                rounds = ", ".join(f"{v:,.2f}" for v in values)
                lines.append(
                    f"| {name} | {workload['key']} | {metric} | {median:,.2f} | {rounds} | {ratio:.2f} |"
                )
    report["table"] = "\n".join(lines) + "\n"
    print()
    print(report["table"])
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(json.dumps(report, indent=2))
    print(f"wrote {out_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
