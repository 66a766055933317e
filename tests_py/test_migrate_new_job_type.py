"""Migration 0017 on an existing install: the row type pgrun._new_job is created, the tree's
shared insert is re-created to take an array of it (the fourteen-array signature is gone),
and jobs made through each door before and after the upgrade are alike. Later
re-applications of the tree (which drop every function nothing but functions depends on)
keep the type.

The old schema is the commit before 0017 (extracted with pgrun.testing.extract_schema); the
new one is the committed HEAD, so a half-edited working tree does not take part."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.types.json import Jsonb

from pgrun import migrate
from schema_versions import schemas_around

MIGRATION = "sql/0017_new_job_type.sql"

# What a door decides and the insert resolves, without the ids, times and the door's tag.
JOB_COLUMNS = (
    "job_type, queue, priority, max_attempts, timeout_seconds, payload - 'tag', status,"
    " organization_id IS NULL, enqueue_request IS NOT NULL, schedule_id IS NOT NULL, workflow_step_key"
)


@pytest.fixture
def schemas(tmp_path: Path) -> tuple[Path, Path]:
    return schemas_around(MIGRATION, tmp_path)


def _insert_signatures(conn: psycopg.Connection[Any]) -> list[str]:
    rows = conn.execute(
        "SELECT p.oid::regprocedure::text FROM pg_proc AS p"
        " WHERE p.pronamespace = 'pgrun'::regnamespace AND p.proname = '_enqueue_insert_jobs'"
    ).fetchall()
    return [r[0] for r in rows]


def _make_jobs(conn: psycopg.Connection[Any], tag: str) -> list[tuple[Any, ...]]:
    """One job through each door (enqueue_job with a key, enqueue_jobs, a workflow step, a
    schedule), and the jobs this call made, as JOB_COLUMNS."""
    seen = conn.execute("SELECT coalesce(array_agg(id), '{}') FROM pgrun.jobs").fetchone()
    assert seen is not None
    conn.execute(
        "SELECT * FROM pgrun.enqueue_job('report.build', %s, idempotency_key => %s)",
        (Jsonb({"door": "single", "tag": tag}), f"single-{tag}"),
    )
    bulk = [{"job_type": "report.build", "payload": {"door": "bulk", "tag": tag}, "max_attempts": 3}]
    conn.execute("SELECT * FROM pgrun.enqueue_jobs(%s)", (Jsonb(bulk),))
    step = {"key": "a", "job_type": "report.build", "payload": {"door": "step", "tag": tag}}
    conn.execute("SELECT * FROM pgrun.enqueue_workflow(%s)", (Jsonb({"name": f"wf-{tag}", "steps": [step]}),))
    conn.execute(
        "SELECT pgrun.upsert_schedule(%s, '0 3 * * *', 'report.build', %s)",
        (f"nightly-{tag}", Jsonb({"door": "schedule"})),
    )
    conn.execute("SELECT * FROM pgrun.run_schedule_now(%s)", (f"nightly-{tag}",))
    return conn.execute(
        f"SELECT {JOB_COLUMNS} FROM pgrun.jobs WHERE id <> ALL (%s) ORDER BY payload ->> 'door'",
        (seen[0],),
    ).fetchall()


def test_0017_creates_the_row_type_and_the_doors_insert_as_before(
    empty_db: str, schemas: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    old, new = schemas
    monkeypatch.setenv("PGRUN_SCHEMA_DIR", str(old))
    migrate.migrate(empty_db)
    with psycopg.connect(empty_db, autocommit=True) as conn:
        assert conn.execute("SELECT to_regtype('pgrun._new_job')").fetchone() == (None,)
        (signature,) = _insert_signatures(conn)
        assert signature.count("[]") == 14, signature
        conn.execute("SELECT pgrun.upsert_job_definition('report.build', queue => 'reports', priority => 7)")
        before = _make_jobs(conn, "before")

    monkeypatch.setenv("PGRUN_SCHEMA_DIR", str(new))
    applied = migrate.migrate(empty_db)
    assert "0017_new_job_type" in applied and "plpgsql" in applied
    with psycopg.connect(empty_db, autocommit=True) as conn:
        assert _insert_signatures(conn) == ["pgrun._enqueue_insert_jobs(pgrun._new_job[])"]
        comment = conn.execute("SELECT obj_description('pgrun._new_job'::regtype, 'pg_type')").fetchone()
        assert comment is not None and comment[0].startswith("Private:")
        # the tree is re-applied whenever it changes: pretend it did, and the type survives
        conn.execute("DELETE FROM pgrun.schema_migrations WHERE kind = 'repeatable'")
    assert migrate.migrate(empty_db) == ["plpgsql"]
    assert migrate.check_schema(empty_db) == []
    with psycopg.connect(empty_db, autocommit=True) as conn:
        after = _make_jobs(conn, "after")

    # each door made its job, resolved against the definition, the same before and after
    assert [j[5]["door"] for j in after] == ["bulk", "schedule", "single", "step"], after
    assert all(j[1] == "reports" and j[2] == 7 for j in after), after
    assert after == before
