"""Migration 0015 on an existing install: the job-type CHECK constraints move onto
pgrun._valid_job_type, the function moves from the plpgsql/ tree into the migration, and later
re-applications of the tree (which drop every function nothing but functions depends on)
keep it.

The old schema is the commit before 0015 (extracted with pgrun.testing.extract_schema); the
new one is the committed HEAD, so a half-edited working tree does not take part."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg
import pytest

from pgrun import migrate
from schema_versions import schemas_around

MIGRATION = "sql/0015_one_job_type_check.sql"


@pytest.fixture
def schemas(tmp_path: Path) -> tuple[Path, Path]:
    return schemas_around(MIGRATION, tmp_path)


def _checks(conn: psycopg.Connection[Any]) -> dict[str, str]:
    rows = conn.execute(
        "SELECT conname::text, pg_get_constraintdef(oid) FROM pg_constraint "
        "WHERE conname IN ('job_definitions_job_type_check', 'job_schedules_job_type_check')"
    ).fetchall()
    return {name: definition for name, definition in rows}


def _rejects(conn: psycopg.Connection[Any], sql: str) -> bool:
    try:
        with conn.transaction():
            conn.execute(sql)
    except psycopg.errors.CheckViolation:
        return True
    return False


def test_0015_binds_both_checks_to_the_function_and_the_tree_keeps_it(
    empty_db: str, schemas: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    old, new = schemas
    monkeypatch.setenv("PGRUN_SCHEMA_DIR", str(old))
    migrate.migrate(empty_db)
    with psycopg.connect(empty_db, autocommit=True) as conn:
        conn.execute("SELECT pgrun.upsert_job_definition('report.build', queue => 'reports')")
        conn.execute("SELECT pgrun.upsert_schedule('nightly', '0 3 * * *', 'report.build')")
        before = _checks(conn)
        assert all("~" in d and "_valid_job_type" not in d for d in before.values()), before

    monkeypatch.setenv("PGRUN_SCHEMA_DIR", str(new))
    applied = migrate.migrate(empty_db)
    assert "0015_one_job_type_check" in applied and "plpgsql" in applied
    with psycopg.connect(empty_db, autocommit=True) as conn:
        after = _checks(conn)
        assert after == {
            "job_definitions_job_type_check": "CHECK (pgrun._valid_job_type(job_type))",
            "job_schedules_job_type_check": "CHECK (pgrun._valid_job_type(job_type))",
        }
        # rows made before the upgrade are still there and still valid
        assert conn.execute("SELECT count(*) FROM pgrun.job_definitions").fetchone() == (1,)
        assert conn.execute("SELECT count(*) FROM pgrun.job_schedules").fetchone() == (1,)
        assert _rejects(conn, "INSERT INTO pgrun.job_definitions (job_type) VALUES ('Bad.type')")
        assert _rejects(conn, "UPDATE pgrun.job_schedules SET job_type = repeat('a', 129)")

        # the tree is re-applied whenever it changes: pretend it did, and the function survives
        conn.execute("DELETE FROM pgrun.schema_migrations WHERE kind = 'repeatable'")
    assert migrate.migrate(empty_db) == ["plpgsql"]
    with psycopg.connect(empty_db, autocommit=True) as conn:
        comment = conn.execute(
            "SELECT obj_description('pgrun._valid_job_type(text)'::regprocedure, 'pg_proc')"
        ).fetchone()
        assert comment is not None and "sql/0015" in comment[0]
        assert _rejects(conn, "INSERT INTO pgrun.job_definitions (job_type) VALUES ('Bad.type')")
        with pytest.raises(psycopg.Error, match=r"job\.invalid_type"):
            conn.execute("SELECT pgrun.upsert_job_definition('Bad.type')")
        assert migrate.check_schema(empty_db) == []
