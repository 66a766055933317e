"""The `pgrun` command line."""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg_pool import PoolTimeout

from pgrun import display
from pgrun import migrate as migrations
from pgrun.app import App
from pgrun.client import Client
from pgrun.errors import PgrunError
from pgrun.reaper import PURGE_BATCH
from pgrun.results import JsonObject, ScheduleSummary
from pgrun.server import EmbeddedServer, ServerError

if TYPE_CHECKING:
    from pgrun.config import Config
    from pgrun.metrics import NoMetrics

#: The most jobs one enqueue_jobs call takes (job.batch_too_large beyond), and the largest
#: purge batch purge_finished_jobs takes (job.invalid_max_jobs beyond).
ENQUEUE_JOBS_LIMIT = 100_000

# A password in a command-line argument is visible to every user of the machine (ps).
_URL_HELP = "defaults to $DATABASE_URL; keep passwords out of it (DATABASE_URL or ~/.pgpass instead)"


def _database_url(args: argparse.Namespace) -> str:
    url: str | None = args.database_url or os.environ.get("DATABASE_URL")
    if not url:
        raise SystemExit(
            "pgrun: DATABASE_URL is not set. Point it at a PostgreSQL 14+ database, "
            "or run `pgrun dev` (or `make dev`) for a local one."
        )
    if args.database_url and _has_password(args.database_url):
        # The command line is world-readable (ps, /proc/<pid>/cmdline): say so, never the password.
        print(
            "pgrun: warning: --database-url carries a password, which every user of this machine can "
            "read in the process list (ps). Put the URL in DATABASE_URL, or the password in a "
            "password file (~/.pgpass or PGPASSFILE), instead (docs/security.md).",
            file=sys.stderr,
        )
    return url


def _has_password(url: str) -> bool:
    try:
        return bool(conninfo_to_dict(url).get("password"))
    except psycopg.ProgrammingError:
        return False  # not a connection string at all: connecting will say so


def _progress(command: str) -> Callable[[str], None]:
    """A progress line on stderr: the command, the seconds since it started, the news."""
    started = time.monotonic()

    def report(news: str) -> None:
        print(f"pgrun {command}: [{time.monotonic() - started:.1f} s] {news}", file=sys.stderr, flush=True)

    return report


def cmd_migrate(args: argparse.Namespace) -> int:
    log: list[str] = []
    warnings: list[str] = []
    report = _progress("migrate")
    try:
        applied = migrations.migrate(
            _database_url(args),
            log,
            prefix=args.role_prefix,
            lock_timeout=args.lock_timeout,
            warnings=warnings,
            progress=lambda label: report(f"applying {label}"),
        )
    except migrations.MigrationError as exc:
        print(f"pgrun migrate: {exc}", file=sys.stderr)
        return 1
    finally:
        for warning in warnings:
            print(f"pgrun migrate: warning: {warning}", file=sys.stderr)
    for line in log:
        print(line)
    print("schema is up to date" if not applied else f"applied {len(applied)} migration(s)")
    return 0


def cmd_check_schema(args: argparse.Namespace) -> int:
    warnings: list[str] = []
    try:
        problems = migrations.check_schema(_database_url(args), warnings)
    except migrations.MigrationError as exc:
        print(f"pgrun check-schema: {exc}", file=sys.stderr)
        return 1
    # A warning is a risk to the schema, not a difference from this code: the exit code stays.
    for warning in warnings:
        print(f"pgrun check-schema: warning: {warning}", file=sys.stderr)
    if problems:
        for problem in problems:
            print(f"pgrun check-schema: {problem}", file=sys.stderr)
        return 1
    print("schema matches this code")
    return 0


def cmd_sql_bundle(args: argparse.Namespace) -> int:
    text = migrations.sql_bundle()
    if args.output == "-":
        sys.stdout.write(text)
    else:
        Path(args.output).write_text(text, encoding="utf-8")
        print(f'wrote {args.output}; apply it with: psql "$DATABASE_URL" -f {args.output}')
    return 0


def _raise_on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


def cmd_dev(args: argparse.Namespace) -> int:
    """Start an embedded server; print its URL, or run a command against it."""
    command: list[str] = list(args.command or [])
    if command and command[0] == "--":
        command = command[1:]
    signal.signal(signal.SIGTERM, _raise_on_sigterm)
    server = EmbeddedServer(ephemeral=args.ephemeral or bool(command))
    try:
        server.start()
    except ServerError as exc:
        print(f"pgrun dev: {exc}", file=sys.stderr)
        return 1
    try:
        if args.migrate:
            migrations.migrate(server.dsn)
        if command:
            env = {**os.environ, **server.env()}
            # The command sees the same pgrun (and venv) as this process.
            env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
            return subprocess.run(command, env=env, check=False).returncode
        print(f"export DATABASE_URL='{server.dsn}'", flush=True)
        print("# PostgreSQL is running; press Ctrl-C to stop it.", flush=True)
        while True:
            signal.pause()
    except KeyboardInterrupt:
        return 0 if not command else 130
    finally:
        server.stop()


# -- worker and operations ---------------------------------------------------------------


def load_app(target: str, app_dir: str | None = None) -> App:
    """``package.module:attribute`` (attribute defaults to ``app``), importable from ``app_dir``
    (default: the working directory).

    The folder goes at the *end* of ``sys.path``, and the working directory that
    ``python -m`` / ``python -c`` put first is taken out of the front: a stray module there
    (a ``croniter.py``, a ``json.py``) must not take the place of an installed one inside the
    worker (docs/security.md)."""
    module_name, _, attribute = target.partition(":")
    folder = os.path.abspath(app_dir or os.getcwd())
    here = os.getcwd()
    while sys.path and sys.path[0] in ("", ".", here):
        sys.path.pop(0)
    if folder not in sys.path:
        sys.path.append(folder)
    module = importlib.import_module(module_name)
    app = getattr(module, attribute or "app", None)
    if not isinstance(app, App):
        raise SystemExit(f"pgrun worker: {target} is not a pgrun.App")
    return app


def cmd_worker(args: argparse.Namespace) -> int:
    from pgrun import config as configuration
    from pgrun import runner

    logging.basicConfig(
        level=getattr(logging, args.log_level.upper(), logging.INFO),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    config = configuration.from_env()
    overrides: dict[str, object] = {"database_url": _database_url(args)}
    if args.concurrency is not None:
        overrides["max_global_concurrency"] = args.concurrency
    if args.metrics_port is not None:
        overrides["metrics_port"] = args.metrics_port
    if args.metrics_host is not None:
        overrides["metrics_host"] = args.metrics_host
    if args.metrics_queue_depth:
        overrides["metrics_queue_depth"] = True
    config = config.with_overrides(**overrides)
    app = load_app(args.app, args.app_dir)
    worker_metrics = _start_metrics(config)
    if not args.no_scheduler:
        # the cron scheduler runs on every worker host unless told not to (pgrun.scheduler)
        from pgrun.scheduler import loop_factory

        app.loops.setdefault("scheduler", loop_factory(app.schedules))
    # The loops this process runs. Extra loops an app registers with App.add_loop (the cron
    # scheduler) join worker and reaper; --no-scheduler drops that one via `exclude`.
    loops = runner.default_loops(
        app,
        queues=args.queue or None,
        reaper=not args.no_reaper,
        exclude=("scheduler",) if args.no_scheduler else (),
        metrics=worker_metrics,
    )
    return runner.run(app, config, loops)


def _start_metrics(config: Config) -> NoMetrics:
    """The worker's metrics and their HTTP endpoint when a metrics port is set (else the no-op
    hooks). One line and exit 1 when prometheus_client is missing or the port is taken."""
    from pgrun import metrics

    if config.metrics_port is None:
        if config.metrics_queue_depth:
            logging.getLogger("pgrun.metrics").warning(
                "--metrics-queue-depth without --metrics-port (JOBS_METRICS_PORT): nothing served"
            )
        return metrics.NO_METRICS
    try:
        worker_metrics = metrics.WorkerMetrics()
        metrics.add_process_collectors(worker_metrics.registry)
        if config.metrics_queue_depth:
            worker_metrics.registry.register(metrics.QueueDepthCollector(config.database_url))
        metrics.serve(worker_metrics.registry, config.metrics_port, config.metrics_host)
    except metrics.MetricsUnavailable as exc:
        raise SystemExit(f"pgrun worker: {exc}") from None
    except OSError as exc:
        raise SystemExit(
            f"pgrun worker: cannot serve metrics on {config.metrics_host}:{config.metrics_port}: {exc}"
        ) from None
    logging.getLogger("pgrun.metrics").info(
        "metrics at http://%s:%d/metrics%s",
        config.metrics_host,
        config.metrics_port,
        " (with queue depth)" if config.metrics_queue_depth else "",
    )
    return worker_metrics


def _client(args: argparse.Namespace) -> Client:
    url = _database_url(args)
    # The pool would retry an unreachable server quietly until its timeout and then say only
    # PoolTimeout: one plain connection first surfaces the server's own reason at once.
    psycopg.connect(url).close()
    return Client.connect(url, max_size=1)


def _run_client_command(args: argparse.Namespace, action: str) -> int:
    try:
        with _client(args) as client:
            result: int = args.action(client, args)
            return result
    except PgrunError as exc:
        print(f"pgrun {action}: {exc.describe()}", file=sys.stderr)
        if exc.hint:
            print(f"hint: {exc.hint}", file=sys.stderr)
        return 1


def _json_arg(text: str | None) -> object:
    if text is None:
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise SystemExit(f"pgrun: not valid JSON: {text!r} ({exc})") from exc


#: The enqueue options that describe one job: not allowed with --from-file.
_ONE_JOB_OPTIONS = {
    "payload": "--payload",
    "queue": "--queue",
    "priority": "--priority",
    "delay": "--delay",
    "max_attempts": "--max-attempts",
    "timeout": "--timeout",
    "key": "--key",
}


def _enqueue(client: Client, args: argparse.Namespace) -> int:
    if args.from_file is not None:
        given = [flag for name, flag in _ONE_JOB_OPTIONS.items() if getattr(args, name) is not None]
        if args.job_type is not None or given:
            what = ", ".join(["TYPE"] * (args.job_type is not None) + given)
            raise SystemExit(f"pgrun enqueue: --from-file takes each job from its line; drop {what}")
        return _enqueue_file(client, args)
    if args.job_type is None:
        raise SystemExit("pgrun enqueue: name a job type, or give --from-file FILE.jsonl")
    job = client.enqueue_job(
        args.job_type,
        _json_arg(args.payload),  # type: ignore[arg-type]
        queue=args.queue,
        priority=args.priority,
        delay=args.delay,
        max_attempts=args.max_attempts,
        timeout_seconds=args.timeout,
        idempotency_key=args.key,
        organization_id=args.organization,
    )
    print(f"{job.job_id} {job.status}{'' if job.created else ' (existing job, same idempotency key)'}")
    return 0


_ELEMENT = re.compile(r"^element (\d+): ")


def _lines(first: int, last: int) -> str:
    return f"line {first}" if first == last else f"lines {first}-{last}"


def _read_jsonl(handle: Any, organization: str | None) -> Iterator[tuple[int, JsonObject | str]]:
    """(line number, job) for each non-blank line; (line number, why) for a line that is not a
    JSON object. --organization fills organization_id where a line has none."""
    for number, line in enumerate(handle, 1):
        text = line.strip()
        if not text:
            continue
        try:
            job = json.loads(text)
        except json.JSONDecodeError as exc:
            yield number, f"not valid JSON ({exc.msg} at column {exc.colno})"
            continue
        if not isinstance(job, dict):
            yield number, f"a JSON {type(job).__name__}, not an object with enqueue_job's keys"
            continue
        if organization is not None and "organization_id" not in job:
            job["organization_id"] = organization
        yield number, job


def _enqueue_file(client: Client, args: argparse.Namespace) -> int:
    """One job per line, sent through enqueue_jobs in chunks of --chunk-size lines; each chunk
    is one statement, so one transaction: it lands whole or not at all. The first bad line
    (not JSON, or refused by the server) stops the run; the chunks before it stay enqueued."""
    report = _progress("enqueue")
    path = args.from_file
    sent = created = 0
    landed_through = 0  # the last line of the last chunk that landed

    def summary() -> str:
        if not sent:
            return "nothing was enqueued"
        existing = sent - created
        return (
            f"lines 1-{landed_through} landed: {sent} job(s), {created} new, {existing} existing (same key)"
        )

    def stop(number: int | None, why: str, hint: str | None = None) -> int:
        where = f"line {number}: " if number is not None else ""
        print(f"pgrun enqueue: {path}: {where}{why}", file=sys.stderr)
        if hint:
            print(f"hint: {hint}", file=sys.stderr)
        after = f"; nothing from line {landed_through + 1} on was enqueued" if sent else ""
        print(f"pgrun enqueue: {summary()}{after}", file=sys.stderr)
        return 1

    def send(chunk: list[tuple[int, JsonObject]]) -> int | None:
        nonlocal sent, created, landed_through
        try:
            items = client.enqueue_jobs([job for _, job in chunk])
        except PgrunError as exc:
            detail = exc.detail or ""
            match = _ELEMENT.match(detail)
            if match and 1 <= int(match.group(1)) <= len(chunk):
                number = chunk[int(match.group(1)) - 1][0]
                why = f"{exc.code}: {detail[match.end() :]}" if detail[match.end() :] else exc.code
                return stop(number, why, exc.hint)
            lines = _lines(chunk[0][0], chunk[-1][0])
            return stop(None, f"{lines} refused: {exc.describe()}", exc.hint)
        sent += len(items)
        created += sum(1 for item in items if item.created)
        landed_through = chunk[-1][0]
        report(f"{_lines(chunk[0][0], landed_through)}: {len(items)} job(s) enqueued ({sent} so far)")
        return None

    try:
        handle = sys.stdin if path == "-" else open(path, encoding="utf-8")  # noqa: SIM115
    except OSError as exc:
        raise SystemExit(f"pgrun enqueue: cannot read {path}: {exc.strerror or exc}") from None
    with handle:
        chunk: list[tuple[int, JsonObject]] = []
        try:
            for number, job in _read_jsonl(handle, args.organization):
                if isinstance(job, str):
                    return stop(number, job)
                chunk.append((number, job))
                if len(chunk) == args.chunk_size:
                    failed = send(chunk)
                    if failed is not None:
                        return failed
                    chunk = []
        except UnicodeDecodeError as exc:
            return stop(None, f"not UTF-8 text ({exc.reason} at byte {exc.start} of a read)")
        if chunk:
            failed = send(chunk)
            if failed is not None:
                return failed
    print(f"enqueued {sent} job(s) from {path} ({created} new, {sent - created} existing)")
    return 0


def _status_text(client: Client, args: argparse.Namespace) -> str:
    org = args.organization
    return display.status_table(
        client.queue_depth(organization_id=org), client.job_metrics(organization_id=org)
    )


def _status(client: Client, args: argparse.Namespace) -> int:
    if not args.watch:
        print(_status_text(client, args))
        return 0
    return _watch(lambda: _status_text(client, args), args.interval)


#: Home the cursor and clear the screen (ANSI): between --watch frames, on a terminal only.
CLEAR_SCREEN = "\x1b[H\x1b[2J"


def _watch(render: Callable[[], str], interval: float) -> int:
    """Print ``render()`` every ``interval`` seconds until Ctrl-C (exit 0). On a terminal
    each frame replaces the last; piped, frames follow each other, a blank line apart."""
    out = sys.stdout
    tty = out.isatty()
    first = True
    try:
        while True:
            frame = render()  # read before clearing: the screen never sits empty
            stamp = datetime.now().astimezone().strftime("%Y-%m-%d %H:%M:%S %Z")
            header = f"pgrun status  {stamp}  (every {interval:g} s; Ctrl-C to stop)"
            prefix = CLEAR_SCREEN if tty else ("" if first else "\n")
            out.write(f"{prefix}{header}\n{frame}\n")
            out.flush()
            first = False
            time.sleep(interval)
    except KeyboardInterrupt:
        return 0


def _interval(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 0.1 <= seconds <= 86_400:
        raise argparse.ArgumentTypeError(f"{text} is outside 0.1 .. 86400 seconds")
    return seconds


def _chunk_size(text: str) -> int:
    try:
        size = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if not 1 <= size <= ENQUEUE_JOBS_LIMIT:
        raise argparse.ArgumentTypeError(f"{text} is outside 1 .. {ENQUEUE_JOBS_LIMIT}")
    return size


def _jobs(client: Client, args: argparse.Namespace) -> int:
    jobs = client.list_jobs(
        status=args.status,
        job_type=args.type,
        queue=args.queue,
        workflow_run_id=args.run,
        after_id=args.after,
        max_rows=args.limit,
        organization_id=args.organization,
    )
    print(display.jobs_table(jobs) if jobs else "no jobs")
    return 0


def _job(client: Client, args: argparse.Namespace) -> int:
    print(json.dumps(client.get_job(args.job_id, organization_id=args.organization), indent=2, default=str))
    return 0


def _runs(client: Client, args: argparse.Namespace) -> int:
    runs = client.list_workflow_runs(
        status=args.status, after_id=args.after, max_rows=args.limit, organization_id=args.organization
    )
    print(display.runs_table(runs) if runs else "no runs")
    return 0


def _run(client: Client, args: argparse.Namespace) -> int:
    run = client.get_workflow_run(args.run_id, organization_id=args.organization)
    print(json.dumps(run, indent=2, default=str) if args.json else display.run_report(run))
    return 0


def _cancel(client: Client, args: argparse.Namespace) -> int:
    if args.run:
        result = client.cancel_workflow_run(args.id, reason=args.reason, organization_id=args.organization)
        print(
            f"run {args.id}: {result.status} ({result.cancelled_steps} steps, {result.cancelled_jobs} jobs "
            f"cancelled, {result.cancel_requested_jobs} running jobs asked to stop)"
        )
    else:
        outcome = client.cancel_job(args.id, reason=args.reason, organization_id=args.organization)
        print(f"job {args.id}: {outcome}")
    return 0


def _requeue(client: Client, args: argparse.Namespace) -> int:
    print(
        f"job {args.job_id}: queued for {client.requeue_job(args.job_id, organization_id=args.organization)}"
    )
    return 0


def _purge(client: Client, args: argparse.Namespace) -> int:
    """Retention, in batches until one comes back short (an admin's right: docs/security.md)."""
    report = _progress("purge")
    total = batches = 0
    while True:
        deleted = client.purge_finished_jobs(
            args.older_than * 3600, max_jobs=args.batch_size, organization_id=args.organization
        )
        total += deleted
        batches += 1
        if deleted < args.batch_size:
            break
        # a full batch: there may be more, and each batch is its own transaction
        report(f"batch {batches}: {deleted} deleted ({total} so far); next batch")
    print(f"purged {total} finished job(s) older than {args.older_than:g} hour(s)")
    return 0


_SCHEDULE_COLUMNS = (
    "name",
    "cron",
    "timezone",
    "job type",
    "catch-up",
    "state",
    "next run",
    "last plan time",
    "last fired at",
)


def _schedule_state(row: ScheduleSummary) -> str:
    """enabled, disabled, paused, or paused with the reason the scheduler gave."""
    if row.paused_at:
        reason = row.paused_reason
        return f"paused: {display.clip(reason, 60)}" if reason else "paused"
    return "enabled" if row.enabled else "disabled"


#: list_schedules' largest page.
_SCHEDULE_PAGE = 1000


def _all_schedules(client: Client, organization_id: str | None) -> list[ScheduleSummary]:
    """Every schedule the role may see, by organization then name: all pages of
    list_schedules (which pages by schedule id)."""
    rows: list[ScheduleSummary] = []
    after_id = None
    while True:
        page = client.list_schedules(
            organization_id=organization_id, after_id=after_id, max_rows=_SCHEDULE_PAGE
        )
        rows.extend(page)
        if len(page) < _SCHEDULE_PAGE:
            break
        after_id = page[-1].schedule_id
    rows.sort(key=lambda r: (r.organization_id is not None, str(r.organization_id or ""), r.name))
    return rows


def _schedules(client: Client, args: argparse.Namespace) -> int:
    rows = _all_schedules(client, args.organization)
    if not rows:
        print("no schedules")
        return 0
    print(
        display.table(
            _SCHEDULE_COLUMNS,
            [
                [
                    r.name,
                    r.cron,
                    r.timezone,
                    r.job_type,
                    r.catch_up,
                    _schedule_state(r),
                    r.next_run_at,
                    r.last_plan_at,
                    r.last_fired_at,
                ]
                for r in rows
            ],
        )
    )
    return 0


def _pause_schedule(client: Client, args: argparse.Namespace) -> int:
    paused = client.pause_schedule(args.name, organization_id=args.organization)
    state = "paused" if paused.changed else "already paused"
    print(f"schedule {args.name}: {state} (since {display.cell(paused.paused_at)})")
    return 0


def _resume_schedule(client: Client, args: argparse.Namespace) -> int:
    resumed = client.resume_schedule(args.name, organization_id=args.organization)
    if resumed.changed:
        print(f"schedule {args.name}: resumed (due at {display.cell(resumed.next_run_at)})")
    else:
        print(f"schedule {args.name}: not paused (nothing changed)")
    return 0


def _delete_schedule(client: Client, args: argparse.Namespace) -> int:
    deleted = client.delete_schedule(args.name, organization_id=args.organization)
    print(f"schedule {args.name}: deleted with its {deleted.ticks_deleted} tick(s); the jobs it made stay")
    return 0


def _add_schedule_commands(p: argparse.ArgumentParser) -> None:
    """`pgrun schedules` lists; `pgrun schedules pause|resume|delete NAME` acts on one."""
    actions = p.add_subparsers(dest="schedule_action", metavar="{pause,resume,delete}")
    for name, action, help_text in (
        ("pause", _pause_schedule, "pause a schedule: no plan time fires until it is resumed"),
        (
            "resume",
            _resume_schedule,
            "resume a paused schedule (catch-up all replays the paused window; latest and none do not)",
        ),
        ("delete", _delete_schedule, "delete a schedule and its ticks (the jobs it made stay)"),
    ):
        a = actions.add_parser(name, help=help_text, description=help_text)
        a.add_argument("name", help="the schedule's name")
        # SUPPRESS: given before the action (`pgrun schedules --organization X pause NAME`), the
        # value stays; given after it, it is taken here
        a.add_argument("--database-url", default=argparse.SUPPRESS, help=_URL_HELP)
        a.add_argument(
            "--organization",
            default=argparse.SUPPRESS,
            help='the organization the schedule belongs to (docs/security.md, "Tenancy")',
        )
        command = f"schedules {name}"
        a.set_defaults(action=action, func=lambda args, command=command: _run_client_command(args, command))


def _client_command(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
    name: str,
    action: object,
    help_text: str,
) -> argparse.ArgumentParser:
    p = sub.add_parser(name, help=help_text, description=help_text)
    p.add_argument("--database-url", help=_URL_HELP)
    p.add_argument(
        "--organization", help='the organization the command acts for (docs/security.md, "Tenancy")'
    )
    p.set_defaults(func=lambda args: _run_client_command(args, name), action=action)
    return p


def add_operation_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "worker",
        help="run the worker and reaper loops for an app (module:attribute)",
        description="Run the handlers of APP (e.g. myapp.jobs:app) until SIGTERM/SIGINT: worker and "
        "reaper loops (and any loop the app registers) on one connection pool. Configuration: the "
        "JOBS_* environment variables (docs/python.md).",
    )
    p.add_argument("app", help="the pgrun.App, as package.module:attribute")
    p.add_argument(
        "--app-dir",
        help="the folder APP is imported from (default: the working directory); it is searched "
        "after the installed packages, never before them",
    )
    p.add_argument("--database-url", help=_URL_HELP)
    p.add_argument("--queue", action="append", help="claim only from this queue (repeatable)")
    p.add_argument("--concurrency", type=int, help="overrides JOBS_MAX_GLOBAL_CONCURRENCY")
    p.add_argument("--no-reaper", action="store_true", help="do not run the reaper loop here")
    p.add_argument(
        "--no-scheduler",
        action="store_true",
        help="do not run the cron scheduler loop here (nor upsert the app's @app.periodic schedules)",
    )
    p.add_argument("--log-level", default="info", help="debug, info (default), warning, error")
    p.add_argument(
        "--metrics-port",
        type=int,
        help="serve Prometheus metrics on this port (overrides JOBS_METRICS_PORT; needs the "
        "pgrun[dashboard] extra; docs/metrics.md)",
    )
    p.add_argument(
        "--metrics-host", help="the address the metrics endpoint binds (default 127.0.0.1, JOBS_METRICS_HOST)"
    )
    p.add_argument(
        "--metrics-queue-depth",
        action="store_true",
        help="also serve the queue-depth gauges read from the database at each scrape "
        "(JOBS_METRICS_QUEUE_DEPTH); turn it on for ONE worker only",
    )
    p.set_defaults(func=cmd_worker)

    p = _client_command(
        sub, "enqueue", _enqueue, "enqueue one job, or (--from-file) one job per line of a JSON-lines file"
    )
    p.add_argument("job_type", nargs="?", help="the job type (not with --from-file)")
    p.add_argument(
        "--from-file",
        metavar="FILE",
        help="a JSON-lines file (- for stdin): one object per line with enqueue_job's keys (job_type, "
        "payload, queue, priority, run_at, delay, max_attempts, timeout_seconds, idempotency_key, "
        "organization_id); blank lines are skipped. Sent in chunks of --chunk-size lines, each chunk one "
        "transaction; the first bad line stops the run and the chunks before it stay enqueued",
    )
    p.add_argument(
        "--chunk-size",
        type=_chunk_size,
        default=1000,
        help="lines per enqueue_jobs call with --from-file (default 1000)",
    )
    p.add_argument("--payload", help="a JSON object")
    p.add_argument("--queue")
    p.add_argument("--priority", type=int)
    p.add_argument("--delay", type=float, help="seconds from now")
    p.add_argument("--max-attempts", type=int)
    p.add_argument("--timeout", type=int, help="seconds")
    p.add_argument("--key", help="idempotency key")

    p = _client_command(sub, "status", _status, "queues: depth, running, dead, rates (last 5 minutes)")
    p.add_argument(
        "--watch", action="store_true", help="refresh until Ctrl-C (the screen is redrawn on a terminal)"
    )
    p.add_argument(
        "--interval",
        type=_interval,
        default=2.0,
        help="seconds between refreshes with --watch (default 2; each reads job_metrics, which scans "
        "the jobs table)",
    )

    p = _client_command(
        sub,
        "schedules",
        _schedules,
        "list cron schedules with their next and last fire times; with pause, resume or delete NAME, "
        "act on one",
    )
    _add_schedule_commands(p)

    p = _client_command(sub, "jobs", _jobs, "list jobs, oldest first")
    p.add_argument("--status")
    p.add_argument("--type")
    p.add_argument("--queue")
    p.add_argument("--run", help="only this workflow run's jobs")
    p.add_argument("--after", help="the last id of the previous page")
    p.add_argument("--limit", type=int, default=50)

    p = _client_command(sub, "job", _job, "one job as JSON, with its attempts")
    p.add_argument("job_id")

    p = _client_command(sub, "runs", _runs, "list workflow runs, oldest first")
    p.add_argument("--status")
    p.add_argument("--after")
    p.add_argument("--limit", type=int, default=50)

    p = _client_command(sub, "run", _run, "one workflow run: its steps, their states and timings")
    p.add_argument("run_id")
    p.add_argument("--json", action="store_true", help="the raw get_workflow_run JSON")

    p = _client_command(sub, "cancel", _cancel, "cancel a job (or, with --run, a workflow run)")
    p.add_argument("id")
    p.add_argument("--run", action="store_true", help="ID is a workflow run")
    p.add_argument("--reason")

    p = _client_command(sub, "requeue", _requeue, "put a dead or cancelled job back in the queue")
    p.add_argument("job_id")

    p = _client_command(
        sub,
        "purge",
        _purge,
        "delete finished jobs (and their history) older than --older-than hours; admins only",
    )
    p.add_argument(
        "--older-than", type=float, default=168, help="hours since the job finished (default 168: 7 days)"
    )
    p.add_argument(
        "--batch-size",
        type=_chunk_size,
        default=PURGE_BATCH,
        help=f"jobs deleted per call, each call one transaction (default {PURGE_BATCH})",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pgrun", description="pgrun: jobs and workflows in PostgreSQL")
    sub = parser.add_subparsers(dest="command_name", required=True)

    p = sub.add_parser("migrate", help="apply the schema to DATABASE_URL")
    p.add_argument("--database-url", help=_URL_HELP)
    p.add_argument(
        "--lock-timeout",
        type=float,
        help="seconds to wait for another migration to finish before naming it and giving up "
        f"(default {migrations.DEFAULT_LOCK_TIMEOUT:g}, or ${migrations.LOCK_TIMEOUT_ENV}; 0: no limit)",
    )
    p.add_argument(
        "--role-prefix",
        help="the prefix of pgrun's group roles on a first install (default pgrun, or $PGRUN_ROLE_PREFIX): "
        "<prefix>_owner, _admin, _producer, _worker, _reader (docs/security.md)",
    )
    p.set_defaults(func=cmd_migrate)

    p = sub.add_parser("check-schema", help="read-only: does the database match this code?")
    p.add_argument("--database-url", help=_URL_HELP)
    p.set_defaults(func=cmd_check_schema)

    p = sub.add_parser("sql-bundle", help="write one pgrun.sql for psql -f")
    p.add_argument("-o", "--output", default="pgrun.sql", help="file to write, - for stdout")
    p.set_defaults(func=cmd_sql_bundle)

    p = sub.add_parser(
        "dev",
        help="start a local PostgreSQL and print its DATABASE_URL (or run a command against it)",
        description="Start a private PostgreSQL cluster under ./.pgrun (PGRUN_HOME). Without a "
        "command it prints DATABASE_URL and runs until Ctrl-C, keeping its data in .pgrun/dev. "
        "With `-- COMMAND ...` it starts a throw-away cluster, runs the command with "
        "DATABASE_URL and PG* variables set, stops the cluster and exits with the command's code.",
    )
    p.add_argument("--migrate", action="store_true", help="apply the schema after start")
    p.add_argument("--ephemeral", action="store_true", help="throw the cluster away on stop")
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND to run against the server")
    p.set_defaults(func=cmd_dev)

    add_operation_commands(sub)
    # `pgrun dashboard` (docs/dashboard.md): its own module; the web stack loads only when it runs
    from pgrun.dashboard.cli import add_dashboard_command

    add_dashboard_command(sub, _database_url, _URL_HELP)
    return parser


#: How long a command waits for the database to answer a connection (libpq's
#: PGCONNECT_TIMEOUT, unless the environment or the URL says otherwise).
CONNECT_TIMEOUT_SECONDS = "5"


def _where(args: argparse.Namespace) -> str:
    """The database a command tried to reach, without its password."""
    url = getattr(args, "database_url", None) or os.environ.get("DATABASE_URL", "")
    try:
        params = conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        return "(DATABASE_URL is not a connection string)"
    host = params.get("host") or os.environ.get("PGHOST") or "localhost"
    port = params.get("port") or os.environ.get("PGPORT") or "5432"
    dbname = params.get("dbname") or os.environ.get("PGDATABASE") or params.get("user") or ""
    return f"{host}:{port}/{dbname}"


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    os.environ.setdefault("PGCONNECT_TIMEOUT", CONNECT_TIMEOUT_SECONDS)
    try:
        result: int = args.func(args)
    except (psycopg.OperationalError, PoolTimeout) as exc:
        # The database is unreachable or went away: one line, no traceback, no password.
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        where = _where(args)
        print(f"pgrun {args.command_name}: cannot reach the database at {where}: {reason}", file=sys.stderr)
        return 2
    return result


if __name__ == "__main__":
    sys.exit(main())
