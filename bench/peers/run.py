"""Side by side with the peers: pgrun, pgqueuer, procrastinate, graphile-worker on one server, in one run.

Every contestant is a script in this folder that gets a fresh, empty database, installs its own
schema its own way, runs one workload and prints a JSON line (see _common.py for the
workloads). The pgrun contestants run on the project's interpreter; pgqueuer and procrastinate
run in their own venv (bench/peers/.venv-peers), which this script creates and fills from PyPI
with the latest releases (`--no-upgrade` reuses what is there). graphile-worker runs on Node.js
(`node`, installed with apt-get if missing and this runs as root) at the version pinned in
bench/peers/graphile/package-lock.json, which this script installs there with `npm ci`
(`--no-upgrade` reuses bench/peers/graphile/node_modules when it is there).

Contestants: the pgrun worker (pgrun_worker.py, once pgrun.worker exists), the pgrun SQL loop
(pgrun_sqlloop.py: claim_jobs/complete_jobs over LISTEN, a floor for the worker), pgqueuer
(peer_pgqueuer.py), procrastinate (peer_procrastinate.py) and graphile-worker twice
(peer_graphile.mjs: its defaults, and "batched": local queue 50, batched completions). Each
workload of each contestant gets its own database (created, used, dropped), so no run inherits
another's dead rows.

Usage: python bench/peers/run.py [--quick] [--fast] [--only NAME ...] [--workload KEY ...]
                                 [--profile] [--settle-load 0.3] [--json PATH]
Workloads (keys for --workload): c10, c50 (throughput), latency (enqueue -> start on an idle
worker), delayed and delayed-default (delayed-start lateness with a 60 s poll everywhere, then
with each library's default poll; the SQL loop is skipped there), single (one client enqueues
N jobs one call per job, each its own durable commit, no worker: 2,000 jobs, --quick 500; the
SQL loop and graphile-worker batched are skipped there, the latter because addJob does not
depend on the worker's options). The single workload also runs a yardstick row, "floor: INSERT
per commit" (floor_insert.py: one plain-table row per commit over psycopg), and only there.
--profile runs the pgrun contestants under py-spy, 1,000 samples a second (collapsed stacks in
bench/results/peers-logs/).
Before the first workload it waits (up to --settle-timeout-s, 600 s) for the 1-minute load
average to fall below --settle-load (0.3; 0 does not wait): a run started right after other
work reads low. The JSON says how long it waited and the load average it started at.
Without DATABASE_URL it starts an embedded server (durable settings unless --fast).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

from psycopg.conninfo import conninfo_to_dict

from pgrun.server import EmbeddedServer
from pgrun.testing import create_database, drop_database

HERE = Path(__file__).resolve().parent
PEERS_VENV = HERE / ".venv-peers"
PEER_PACKAGES = ("pgqueuer", "asyncpg", "procrastinate", "psycopg[binary]")
DURABLE = {"fsync": "on", "synchronous_commit": "on", "full_page_writes": "on"}
GRAPHILE_DIR = HERE / "graphile"  # package.json + package-lock.json; node_modules installed by npm ci
# name: (script, environment, extra arguments); environment "project" = this interpreter,
# "peers" = the peers' venv, "node" = Node.js with GRAPHILE_DIR's node_modules.
FLOOR = "floor: INSERT per commit"  # the single workload's yardstick (no queue library)
CONTESTANTS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "pgrun worker": ("pgrun_worker.py", "project", ()),
    "pgrun SQL loop": ("pgrun_sqlloop.py", "project", ()),
    "pgqueuer": ("peer_pgqueuer.py", "peers", ()),
    "procrastinate": ("peer_procrastinate.py", "peers", ()),
    "graphile-worker": ("peer_graphile.mjs", "node", ()),
    "graphile-worker batched": ("peer_graphile.mjs", "node", ("--batched",)),
    FLOOR: ("floor_insert.py", "project", ()),
}
PEERS = ("pgqueuer", "procrastinate")  # issue 5's target: 2x the faster of these
GRAPHILE_BATCHED = "graphile-worker batched"  # issue 15's target: 1.5x its c=10
# issue 15's single-enqueue target: 1.5x the fastest of these
SINGLE_PEERS = ("pgqueuer", "procrastinate", "graphile-worker")
# (contestant, workload key) pairs not run: recorded as skipped with this reason
SKIPPED = {
    ("pgrun SQL loop", "single"): "single enqueue is the client's call: see the pgrun worker row",
    (GRAPHILE_BATCHED, "single"): "addJob does not depend on the worker's options: see graphile-worker",
}
ONLY_FOR = {FLOOR: {"single"}}  # contestants that run (and are reported) for these workloads only


@contextmanager
def server(fast: bool) -> Iterator[str]:
    existing = os.environ.get("DATABASE_URL")
    if existing:
        yield existing
        return
    with EmbeddedServer(ephemeral=True, settings={} if fast else DURABLE) as srv:
        yield srv.dsn


def url_for(admin_dsn: str, database: str) -> str:
    """A postgresql:// URL for `database` on the admin DSN's server (asyncpg takes URLs only)."""
    p = conninfo_to_dict(admin_dsn)
    auth = quote(str(p.get("user", "")))
    if p.get("password"):
        auth += ":" + quote(str(p["password"]))
    host = p.get("host", "127.0.0.1")
    port = p.get("port", "5432")
    return f"postgresql://{auth}@{host}:{port}/{quote(database)}"


def peers_python() -> Path:
    return PEERS_VENV / "bin" / "python"


def ensure_peers_venv(upgrade: bool, profile: bool = False) -> dict[str, str]:
    """The peers' venv with the latest releases from PyPI; returns the installed versions."""
    if not peers_python().exists():
        subprocess.run([sys.executable, "-m", "venv", str(PEERS_VENV)], check=True, timeout=300)
        upgrade = True
    if profile and not (PEERS_VENV / "bin" / "py-spy").exists():
        subprocess.run(
            [str(peers_python()), "-m", "pip", "install", "-q", "--disable-pip-version-check", "py-spy"],
            check=True,
            timeout=900,
        )
    if upgrade:
        print(f"installing {', '.join(PEER_PACKAGES)} (latest) into {PEERS_VENV} ...", flush=True)
        try:
            subprocess.run(
                [
                    str(peers_python()),
                    "-m",
                    "pip",
                    "install",
                    "-q",
                    "--disable-pip-version-check",
                    "-U",
                    *PEER_PACKAGES,
                ],
                check=True,
                timeout=900,
            )
        except (subprocess.SubprocessError, OSError) as exc:
            print(f"warning: could not upgrade the peers ({exc}); using what is installed", flush=True)
    names = ("pgqueuer", "asyncpg", "procrastinate", "psycopg", "psycopg-pool")
    out = subprocess.run(
        [
            str(peers_python()),
            "-c",
            "import importlib.metadata as m, json, sys; "
            "print(json.dumps({n: m.version(n) for n in sys.argv[1:]}))",
            *names,
        ],
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout
    return dict(json.loads(out))


def ensure_node(upgrade: bool) -> tuple[dict[str, str], str | None]:
    """Node.js and graphile-worker's node_modules (npm ci from the pinned lock file).

    Returns the installed versions and None, or ({}, why) when the graphile-worker contestants
    cannot run."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        if os.geteuid() == 0 and shutil.which("apt-get"):
            print("installing nodejs and npm with apt-get ...", flush=True)
            try:
                subprocess.run(["apt-get", "update", "-qq"], check=True, timeout=600)
                subprocess.run(
                    ["apt-get", "install", "-y", "-qq", "nodejs", "npm"],
                    check=True,
                    timeout=1800,
                    env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"},
                )
            except (subprocess.SubprocessError, OSError) as exc:
                return {}, f"node not installed ({exc})"
        if shutil.which("node") is None or shutil.which("npm") is None:
            return {}, "node/npm not found (apt-get install nodejs npm)"
    installed = (GRAPHILE_DIR / "node_modules" / "graphile-worker" / "package.json").exists()
    if upgrade or not installed:
        print(f"installing graphile-worker (npm ci) into {GRAPHILE_DIR} ...", flush=True)
        try:
            subprocess.run(
                ["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"],
                cwd=GRAPHILE_DIR,
                check=True,
                timeout=900,
            )
        except (subprocess.SubprocessError, OSError) as exc:
            if not installed:
                return {}, f"npm ci failed ({exc})"
            print(f"warning: npm ci failed ({exc}); using what is installed", flush=True)
    modules = GRAPHILE_DIR / "node_modules"
    versions = {
        name: json.loads((modules / name / "package.json").read_text())["version"]
        for name in ("graphile-worker", "pg")
    }
    versions["node"] = subprocess.run(
        ["node", "--version"], check=True, capture_output=True, text=True, timeout=60
    ).stdout.strip()
    return versions, None


DELAYED_POLL_S = 60.0  # the "long poll" of the delayed workload; pgrun's JOBS_POLL_INTERVAL_MS maximum
MAIN_KEYS = ("c10", "c50", "latency")
DELAYED_KEYS = ("delayed", "delayed-default")
SINGLE_KEYS = ("single",)
WORKLOAD_KEYS = MAIN_KEYS + DELAYED_KEYS + SINGLE_KEYS


def workloads(quick: bool) -> list[dict[str, Any]]:
    jobs = 2_000 if quick else 20_000
    samples = 50 if quick else 200
    delayed = {"mode": "delayed", "concurrency": 10, "samples": 20 if quick else 50, "interval_ms": 100}
    return [
        {"key": "c10", "mode": "throughput", "concurrency": 10, "jobs": jobs},
        {"key": "c50", "mode": "throughput", "concurrency": 50, "jobs": jobs},
        {"key": "latency", "mode": "latency", "concurrency": 10, "samples": samples, "interval_ms": 20},
        {"key": "delayed", **delayed, "delay_s": 1.0, "poll_s": DELAYED_POLL_S},
        {"key": "delayed-default", **delayed, "delay_s": 1.0, "poll_s": None},
        {"key": "single", "mode": "single", "concurrency": 1, "jobs": 500 if quick else 2_000},
    ]


def run_one(
    admin: str, name: str, workload: dict[str, Any], timeout_s: float, log_dir: Path, profile: bool = False
) -> dict[str, Any]:
    script, env_kind, extra = CONTESTANTS[name]
    if env_kind == "node":
        interpreter = shutil.which("node") or "node"
    else:
        interpreter = str(peers_python()) if env_kind == "peers" else sys.executable
    database = create_database(admin, prefix="peers_" + re.sub(r"\W", "_", name.split()[0].lower()))
    try:
        args = [
            interpreter,
            str(HERE / script),
            *extra,
            "--dsn",
            url_for(admin, database),
            "--mode",
            workload["mode"],
            "--concurrency",
            str(workload["concurrency"]),
            "--timeout-s",
            str(timeout_s),
        ]
        if workload["mode"] in ("throughput", "single"):
            args += ["--jobs", str(workload["jobs"])]
        else:
            args += ["--samples", str(workload["samples"]), "--interval-ms", str(workload["interval_ms"])]
        if workload["mode"] == "delayed":
            args += ["--delay-s", str(workload["delay_s"])]
            if workload["poll_s"] is not None:
                args += ["--poll-s", str(workload["poll_s"])]
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        env.pop("DATABASE_URL", None)
        if env_kind != "project":
            env.pop("PYTHONPATH", None)
        log = log_dir / f"{name.replace(' ', '_')}-{workload['key']}.log"
        if profile and env_kind == "project":
            # Collapsed stacks (one line per stack and its sample count) for flamegraph tools.
            spy = str(PEERS_VENV / "bin" / "py-spy")
            args = [
                spy,
                "record",
                "--format",
                "raw",
                "--rate",
                # a c=10 run of 20,000 jobs lasts ~0.4 s: 200 a second gave too few samples to read
                "1000",
                "-o",
                str(log.with_suffix(".pyspy")),
                "--",
                *args,
            ]
        started = time.perf_counter()
        try:
            proc = subprocess.run(
                args, capture_output=True, text=True, timeout=timeout_s + 120, env=env, cwd=HERE.parent.parent
            )
        except subprocess.TimeoutExpired as exc:
            return {"error": f"timed out after {exc.timeout:.0f} s"}
        log.write_text(f"$ {shlex.join(args)}\n--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}")
        lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
        if proc.returncode != 0 or not lines:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
            return {"error": f"exit {proc.returncode}: " + " | ".join(tail), "log": str(log)}
        result: dict[str, Any] = json.loads(lines[-1])
        result["wall_s"] = time.perf_counter() - started
        return result
    finally:
        drop_database(admin, database)


def settle(below: float, timeout_s: float) -> float:
    """Wait until the 1-minute load average is below ``below`` (at most ``timeout_s``); the
    seconds waited. A run started right after other work reads its throughput 15-25 % low on
    this machine class: the load average decays over minutes, so the wait is at the start."""
    started = time.monotonic()
    if below <= 0:
        return 0.0
    announced = False
    while os.getloadavg()[0] >= below and time.monotonic() - started < timeout_s:
        if not announced:
            load = os.getloadavg()[0]
            print(f"waiting for the load average ({load:.2f}) to fall below {below}", flush=True)
            announced = True
        time.sleep(5)
    return round(time.monotonic() - started, 1)


def fmt(value: Any, digits: int = 0) -> str:
    if isinstance(value, (int, float)):
        return f"{value:,.{digits}f}"
    return "—"


def table(results: dict[str, dict[str, dict[str, Any]]]) -> str:
    head = (
        "| contestant | jobs/s, c=10 | jobs/s, c=50 | enqueue→start p50 ms | p99 ms | bulk enqueue rows/s |\n"
        "|---|---:|---:|---:|---:|---:|\n"
    )
    rows = []
    for name, res in results.items():
        if not any(k in res for k in MAIN_KEYS):
            continue
        c10, c50, lat = res.get("c10", {}), res.get("c50", {}), res.get("latency", {})
        if all("skipped" in r for r in (c10, c50, lat)):
            rows.append(f"| {name} | skipped: {c10.get('skipped')} | | | | |")
            continue
        rows.append(
            f"| {name} | {fmt(c10.get('jobs_per_s'))} | {fmt(c50.get('jobs_per_s'))} "
            f"| {fmt(lat.get('p50_ms'), 2)} | {fmt(lat.get('p99_ms'), 2)} "
            f"| {fmt(c10.get('enqueue_rows_per_s'))} |"
        )
    return head + "\n".join(rows) + "\n"


def table_delayed(results: dict[str, dict[str, dict[str, Any]]]) -> str:
    """Delayed-start lateness (handler start - due time), long poll and each library's default."""
    head = (
        "| contestant | poll s | lateness p50 ms | p99 ms | max ms "
        "| default poll s | p50 ms | p99 ms | max ms |\n"
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|\n"
    )
    rows = []
    for name, res in results.items():
        if not any(k in res for k in DELAYED_KEYS):
            continue
        cells = []
        for key in DELAYED_KEYS:
            r = res.get(key, {})
            if "skipped" in r or "error" in r:
                cells.append(f"n/a: {r.get('skipped') or r.get('error')} | | |")
                continue
            poll = r.get("settings", {}).get("poll_interval_s")
            cells.append(
                f"{fmt(poll, 0)} | {fmt(r.get('p50_ms'), 1)} | {fmt(r.get('p99_ms'), 1)} "
                f"| {fmt(r.get('max_ms'), 1)}"
                + (f" ({r['missing']} never started)" if r.get("missing") else "")
            )
        rows.append(f"| {name} | " + " | ".join(cells) + " |")
    return head + "\n".join(rows) + "\n"


def single_rate(results: dict[str, dict[str, dict[str, Any]]], name: str) -> float | None:
    rate = results.get(name, {}).get("single", {}).get("jobs_per_s")
    return rate if isinstance(rate, (int, float)) else None


def table_single(results: dict[str, dict[str, dict[str, Any]]]) -> str:
    """Single enqueue: jobs/s, mean ms per call, ratios to the fastest peer and to the floor."""
    head = (
        "| contestant | jobs/s | mean ms per enqueue | vs fastest peer | vs floor |\n"
        "|---|---:|---:|---:|---:|\n"
    )
    peers = [r for r in (single_rate(results, p) for p in SINGLE_PEERS) if r is not None]
    fastest = max(peers) if peers else None
    floor = single_rate(results, FLOOR)
    rows = []
    for name, res in results.items():
        r = res.get("single")
        if r is None:
            continue
        rate = single_rate(results, name)
        if rate is None:
            rows.append(f"| {name} | n/a: {r.get('skipped') or r.get('error')} | | | |")
            continue
        rows.append(
            f"| {name} | {fmt(rate)} | {fmt(r.get('mean_ms'), 3)} "
            f"| {fmt(rate / fastest if fastest else None, 2)} | {fmt(rate / floor if floor else None, 2)} |"
        )
    return head + "\n".join(rows) + "\n"


def verdict(results: dict[str, dict[str, dict[str, Any]]]) -> dict[str, Any]:
    """The issue's targets: pgrun throughput at least twice the faster peer's; p50 latency <= 5 ms."""

    def best(name: str) -> float | None:
        rates = [results.get(name, {}).get(k, {}).get("jobs_per_s") for k in ("c10", "c50")]
        known = [r for r in rates if isinstance(r, (int, float))]
        return max(known) if known else None

    def c10(name: str) -> float | None:
        rate = results.get(name, {}).get("c10", {}).get("jobs_per_s")
        return rate if isinstance(rate, (int, float)) else None

    peer_best = [b for b in (best(p) for p in PEERS) if b is not None]
    batched = c10(GRAPHILE_BATCHED)
    out: dict[str, Any] = {
        "faster_peer_jobs_per_s": max(peer_best) if peer_best else None,
        "graphile_batched_c10_jobs_per_s": batched,
    }
    for name in ("pgrun worker", "pgrun SQL loop"):
        mine = best(name)
        p50 = results.get(name, {}).get("latency", {}).get("p50_ms")
        entry: dict[str, Any] = {}
        if mine is not None and peer_best:
            ratio = mine / max(peer_best)
            entry = {
                "best_jobs_per_s": mine,
                "throughput_ratio_vs_faster_peer": ratio,
                "throughput_target_met": ratio >= 2.0,
                "p50_ms": p50,
                "latency_target_met": isinstance(p50, (int, float)) and p50 <= 5.0,
            }
        mine_c10 = c10(name)
        if mine_c10 is not None and batched:
            # issue 15: worker throughput at c=10 >= 1.5x graphile-worker's batched mode
            entry["c10_ratio_vs_graphile_batched"] = mine_c10 / batched
            entry["c10_vs_graphile_batched_target_met"] = mine_c10 / batched >= 1.5
        if entry:
            out[name] = entry
    single_peers = {p: r for p in SINGLE_PEERS if (r := single_rate(results, p)) is not None}
    mine_single = single_rate(results, "pgrun worker")
    if single_peers and mine_single is not None:
        fastest = max(single_peers, key=lambda p: single_peers[p])
        floor = single_rate(results, FLOOR)
        # issue 15: single enqueue >= 1.5x the fastest peer's single enqueue in the same run
        out["single"] = {
            "pgrun_jobs_per_s": mine_single,
            "fastest_peer": fastest,
            "fastest_peer_jobs_per_s": single_peers[fastest],
            "ratio_vs_fastest_peer": mine_single / single_peers[fastest],
            "target_met": mine_single / single_peers[fastest] >= 1.5,
            "floor_jobs_per_s": floor,
            "ratio_vs_floor": mine_single / floor if floor else None,
        }
    return out


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="2,000 jobs and 50 latency samples")
    parser.add_argument("--fast", action="store_true", help="embedded server without fsync")
    parser.add_argument("--only", nargs="*", choices=sorted(CONTESTANTS), help="run only these")
    parser.add_argument(
        "--workload", nargs="*", choices=WORKLOAD_KEYS, help="run only these workloads (default: all)"
    )
    parser.add_argument("--no-upgrade", action="store_true", help="reuse the peers' venv as it is")
    parser.add_argument("--timeout-s", type=float, default=600.0, help="per workload")
    parser.add_argument(
        "--profile", action="store_true", help="run the pgrun contestants under py-spy (peers' venv)"
    )
    parser.add_argument(
        "--settle-load",
        type=float,
        default=0.3,
        help="wait (up to --settle-timeout-s) for the 1-minute load average to fall below this before"
        " the first workload (0: do not wait)",
    )
    parser.add_argument("--settle-timeout-s", type=float, default=600.0)
    parser.add_argument("--json", default="bench/results/peers.json")
    args = parser.parse_args()
    names = [n for n in CONTESTANTS if not args.only or n in args.only]
    chosen = [w for w in workloads(args.quick) if not args.workload or w["key"] in args.workload]
    versions: dict[str, str] = {}
    if args.profile or any(CONTESTANTS[n][1] == "peers" for n in names):
        versions.update(ensure_peers_venv(upgrade=not args.no_upgrade, profile=args.profile))
    node_missing: str | None = None
    if any(CONTESTANTS[n][1] == "node" for n in names):
        node_versions, node_missing = ensure_node(upgrade=not args.no_upgrade)
        versions.update(node_versions)
    import psycopg

    versions["pgrun"] = _pgrun_version()
    versions["psycopg (pgrun)"] = psycopg.__version__
    out_path = Path(args.json)
    log_dir = out_path.parent / "peers-logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    report: dict[str, Any] = {
        "command": "python bench/peers/run.py " + " ".join(shlex.quote(a) for a in sys.argv[1:]),
        "server": "embedded, fsync off" if args.fast else "embedded, durable (fsync on)",
        "cpus": os.cpu_count(),
        "started_at": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "versions": versions,
        "workloads": chosen,
    }
    results: dict[str, dict[str, dict[str, Any]]] = {n: {} for n in names}
    with server(args.fast) as admin:
        report["settled_s"] = settle(args.settle_load, args.settle_timeout_s)
        report["loadavg_at_start"] = os.getloadavg()
        with psycopg.connect(admin) as conn:
            report["postgresql"] = conn.execute("SHOW server_version").fetchone()[0]  # type: ignore[index]
        for workload in chosen:
            for name in names:
                if name in ONLY_FOR and workload["key"] not in ONLY_FOR[name]:
                    continue
                if (name, workload["key"]) in SKIPPED:
                    res: dict[str, Any] = {"skipped": SKIPPED[(name, workload["key"])]}
                elif node_missing and CONTESTANTS[name][1] == "node":
                    res = {"skipped": node_missing}
                else:
                    res = run_one(admin, name, workload, args.timeout_s, log_dir, args.profile)
                results[name][workload["key"]] = res
                shown = (
                    f"{res['jobs_per_s']:,.0f} jobs/s"
                    if "jobs_per_s" in res
                    else f"p50 {res['p50_ms']:.2f} ms, p99 {res['p99_ms']:.2f} ms, max {res['max_ms']:.2f} ms"
                    if "p50_ms" in res
                    else res.get("skipped") or res.get("error")
                )
                print(f"{name:>23} {workload['key']:>15}: {shown}", flush=True)
    report["loadavg_at_end"] = os.getloadavg()
    report["results"] = results
    report["verdict"] = verdict(results)
    keys = {w["key"] for w in chosen}
    print()
    if keys & set(MAIN_KEYS):
        report["table"] = table(results)
        print(report["table"])
        print(json.dumps(report["verdict"], indent=2))
    if keys & set(DELAYED_KEYS):
        report["table_delayed"] = table_delayed(results)
        print("delayed-start lateness (handler start - due time):")
        print(report["table_delayed"])
    if keys & set(SINGLE_KEYS):
        report["table_single"] = table_single(results)
        print("single enqueue (one client, one call and one durable commit per job, no worker):")
        print(report["table_single"])
        if "single" in report["verdict"]:
            print(json.dumps(report["verdict"]["single"], indent=2))
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(json.dumps(report, indent=2))
    print(f"wrote {out_path}")
    return 0


def _pgrun_version() -> str:
    """The package version and the commit of the tree pgrun is imported from (+dirty)."""
    import importlib.metadata

    import pgrun

    try:
        version = importlib.metadata.version("pgrun")
    except importlib.metadata.PackageNotFoundError:
        version = "checkout"
    try:
        commit = subprocess.run(
            ["git", "describe", "--always", "--dirty", "--exclude", "*"],
            cwd=Path(pgrun.__file__).resolve().parent,
            capture_output=True,
            text=True,
            timeout=30,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit = ""
    return f"{version} ({commit})" if commit else version


if __name__ == "__main__":
    sys.exit(main())
