"""`pgrun dashboard`: the subcommand's arguments and what it runs.

Registered by pgrun.cli in one call (``add_dashboard_command``); Starlette and uvicorn are
imported only when the command runs, so the rest of the CLI works without the extra.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable

TOKEN_ENV = "PGRUN_DASHBOARD_TOKEN"
MISSING = (
    "pgrun dashboard needs the dashboard extra (Starlette, Jinja2, uvicorn): pip install 'pgrun[dashboard]'"
)


def add_dashboard_command(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
    database_url: Callable[[argparse.Namespace], str],
    url_help: str,
) -> None:
    p = sub.add_parser(
        "dashboard",
        help="serve the web dashboard for DATABASE_URL (docs/dashboard.md)",
        description="Serve the web dashboard (overview, jobs, workflow runs, schedules, actions) for "
        "DATABASE_URL. What it may do follows the database role it connects as (docs/security.md). "
        "It binds 127.0.0.1 unless told otherwise; give it a token before binding anything else.",
    )
    p.add_argument("--database-url", help=url_help)
    p.add_argument("--host", default="127.0.0.1", help="the address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8080, help="the port to bind (default 8080)")
    p.add_argument(
        "--token",
        help=f"require this token (Bearer header or the login form); default ${TOKEN_ENV}. "
        "Prefer the environment variable: a command line is visible to every user (ps)",
    )
    p.add_argument("--log-level", default="info", help="uvicorn's log level (default info)")
    p.set_defaults(func=lambda args: run(args, database_url(args)))


def run(args: argparse.Namespace, dsn: str) -> int:
    try:
        import uvicorn

        from pgrun.dashboard.app import create_app
    except ImportError:
        print(f"pgrun: {MISSING}", file=sys.stderr)
        return 2
    token = args.token or os.environ.get(TOKEN_ENV) or None
    if token is None and args.host not in ("127.0.0.1", "localhost", "::1"):
        print(
            f"pgrun dashboard: warning: binding {args.host} without a token: anyone who reaches this "
            f"port acts as the database role. Set {TOKEN_ENV} (docs/dashboard.md).",
            file=sys.stderr,
        )
    _warn_schema(dsn)
    app = create_app(dsn, token=token)
    print(f"pgrun dashboard: http://{args.host}:{args.port}/", file=sys.stderr, flush=True)
    uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level, proxy_headers=False)
    return 0


def _warn_schema(dsn: str) -> None:
    """Say at start when the database's pgrun schema and this code differ (pages would fail
    with a missing function); the pages themselves say so too. An unreachable database
    raises (the CLI prints one line and exits 2); a role that may not read the migration
    history is only told nothing."""
    import psycopg

    from pgrun.migrate import MigrationError, check_schema

    try:
        problems = check_schema(dsn)
    except (psycopg.errors.InsufficientPrivilege, MigrationError):
        return
    for problem in problems:
        print(f"pgrun dashboard: warning: {problem}", file=sys.stderr)
