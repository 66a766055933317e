"""The `pgrun` command line."""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from types import FrameType

from pgrun import migrate as migrations
from pgrun.server import EmbeddedServer, ServerError


def _database_url(args: argparse.Namespace) -> str:
    url: str | None = args.database_url or os.environ.get("DATABASE_URL")
    if not url:
        raise SystemExit(
            "pgrun: DATABASE_URL is not set. Point it at a PostgreSQL 14+ database, "
            "or run `pgrun dev` (or `make dev`) for a local one."
        )
    return url


def cmd_migrate(args: argparse.Namespace) -> int:
    log: list[str] = []
    try:
        applied = migrations.migrate(_database_url(args), log)
    except migrations.MigrationError as exc:
        print(f"pgrun migrate: {exc}", file=sys.stderr)
        return 1
    for line in log:
        print(line)
    print("schema is up to date" if not applied else f"applied {len(applied)} migration(s)")
    return 0


def cmd_check_schema(args: argparse.Namespace) -> int:
    try:
        problems = migrations.check_schema(_database_url(args))
    except migrations.MigrationError as exc:
        print(f"pgrun check-schema: {exc}", file=sys.stderr)
        return 1
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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pgrun", description="pgrun: jobs and workflows in PostgreSQL")
    sub = parser.add_subparsers(dest="command_name", required=True)

    p = sub.add_parser("migrate", help="apply the schema to DATABASE_URL")
    p.add_argument("--database-url", help="defaults to $DATABASE_URL")
    p.set_defaults(func=cmd_migrate)

    p = sub.add_parser("check-schema", help="read-only: does the database match this code?")
    p.add_argument("--database-url", help="defaults to $DATABASE_URL")
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
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    result: int = args.func(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
