"""plpgsql_check over every PL/pgSQL function in schema pgrun.

sqlfluff cannot see inside $$ bodies; plpgsql_check can: it resolves every table,
column and function reference, checks types, and warns about dead code and unused
variables. Runs in a scratch database on the server DATABASE_URL points at.
"""

from __future__ import annotations

import os
import sys

import psycopg

from pgrun import migrate
from pgrun.testing import scratch_database

QUERY = """
SELECT p.oid::regprocedure::text AS function, c.level, c.message, c.lineno, c.statement, c.hint
FROM pg_proc AS p
JOIN pg_namespace AS n ON n.oid = p.pronamespace
JOIN pg_language AS l ON l.oid = p.prolang
CROSS JOIN LATERAL plpgsql_check_function_tb(
    p.oid,
    fatal_errors => false,
    extra_warnings => true,
    performance_warnings => false,
    security_warnings => true
) AS c
WHERE n.nspname IN ('pgrun', 'pgrun_test')
  AND l.lanname = 'plpgsql'
  AND p.prorettype <> 'trigger'::regtype
ORDER BY 1, c.lineno
"""

TRIGGERS = """
SELECT t.tgrelid::regclass::text, p.oid::regprocedure::text, c.level, c.message, c.lineno
FROM pg_trigger AS t
JOIN pg_proc AS p ON p.oid = t.tgfoid
JOIN pg_namespace AS n ON n.oid = p.pronamespace
CROSS JOIN LATERAL plpgsql_check_function_tb(p.oid, t.tgrelid, fatal_errors => false) AS c
WHERE n.nspname = 'pgrun' AND NOT t.tgisinternal
"""


def main() -> int:
    admin = os.environ.get("DATABASE_URL")
    if not admin:
        print("plpgsql_lint: DATABASE_URL is not set (use `make lint`)", file=sys.stderr)
        return 2
    with scratch_database(admin, prefix="pgrun_lint") as dsn:
        migrate.migrate(dsn)
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS plpgsql_check WITH SCHEMA public")
            count = conn.execute(
                "SELECT count(*) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
                "JOIN pg_language l ON l.oid = p.prolang "
                "WHERE n.nspname = 'pgrun' AND l.lanname = 'plpgsql'"
            ).fetchone()
            rows = conn.execute(QUERY).fetchall()
            rows += [(f"{r[1]} on {r[0]}", r[2], r[3], r[4], None, None) for r in conn.execute(TRIGGERS)]
    for function, level, message, lineno, statement, hint in rows:
        where = f" line {lineno}" if lineno else ""
        what = f" ({statement})" if statement else ""
        extra = f" hint: {hint}" if hint else ""
        print(f"{function}{where}: {level}: {message}{what}{extra}")
    checked = count[0] if count else 0
    print(f"plpgsql_check: {checked} functions checked, {len(rows)} findings")
    return 1 if rows else 0


if __name__ == "__main__":
    sys.exit(main())
