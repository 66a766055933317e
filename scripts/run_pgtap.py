"""Run the pgTAP suite: a fresh migrated database, the fixtures, the test clock, then pg_prove.

Fails when pg_prove fails and also when it ran zero tests (pg_prove itself exits 0
then). Needs DATABASE_URL (a server where we may create databases): `make pgtap`
provides one. Arguments narrow the run: `make pgtap T=tests_sql/jobs/claim`.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import psycopg
from psycopg.conninfo import conninfo_to_dict

from pgrun import migrate
from pgrun.testing import install_test_clock, scratch_database

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests_sql"
FIXTURES = TESTS / "fixtures"


def main() -> int:
    admin = os.environ.get("DATABASE_URL")
    if not admin:
        print("run_pgtap: DATABASE_URL is not set (use `make pgtap`)", file=sys.stderr)
        return 2
    # Optional arguments narrow the run to some files or folders: run_pgtap.py tests_sql/jobs
    targets = [Path(a).resolve() for a in sys.argv[1:]] or [TESTS]
    files = sorted(
        {
            p
            for target in targets
            for p in ([target] if target.is_file() else target.rglob("test_*.sql"))
            if FIXTURES not in p.parents
        }
    )
    if not files:
        print("run_pgtap: no tests_sql/**/test_*.sql files found", file=sys.stderr)
        return 1
    with scratch_database(admin, prefix="pgrun_tap") as dsn:
        migrate.migrate(dsn)
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS pgtap WITH SCHEMA public")
            # Row locks as the lock tests see them (tests_sql/workflows/lock).
            conn.execute("CREATE EXTENSION IF NOT EXISTS pgrowlocks WITH SCHEMA public")
        for fixture in sorted(FIXTURES.glob("*.sql")):
            subprocess.run(["psql", dsn, "-q", "-v", "ON_ERROR_STOP=1", "-f", str(fixture)], check=True)
        # After the fixtures, which keep the install's own clock for the tests that need it.
        install_test_clock(dsn)
        # pg_prove takes libpq settings as PG* variables, not as a connection string.
        params = conninfo_to_dict(dsn)
        env = {**os.environ}
        for key, var in (
            ("host", "PGHOST"),
            ("port", "PGPORT"),
            ("user", "PGUSER"),
            ("password", "PGPASSWORD"),
            ("dbname", "PGDATABASE"),
        ):
            if params.get(key):
                env[var] = str(params[key])
        args = ["pg_prove", "--ext", ".sql"]
        args += [str(f.relative_to(ROOT)) for f in files]
        proc = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
        sys.stdout.write(proc.stdout)
        sys.stderr.write(proc.stderr)
    match = re.search(r"Files=(\d+), Tests=(\d+)", proc.stdout)
    if proc.returncode != 0:
        return proc.returncode
    if not match or int(match.group(2)) == 0:
        print("run_pgtap: pg_prove ran zero tests", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
