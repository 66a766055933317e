"""Migration 0019 on an existing install: from then on a job writes no 'enqueued' event when
it is created and no 'claimed' event when it is claimed; the rows written before stay as
they are and every reader takes them as before (get_job_history shows the stored 'enqueued'
row instead of deriving one). A job claimed before the upgrade and finished after it ends
like any other. The table's description says the new rule.

The old schema is the commit before 0019 (extracted with pgrun.testing.extract_schema); the
new one is the committed HEAD, so a half-edited working tree does not take part."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg
import pytest

from job_records import history_events, stored_events
from pgrun import migrate
from schema_versions import schemas_around

MIGRATION = "sql/0019_job_events_fewer_rows.sql"


@pytest.fixture
def schemas(tmp_path: Path) -> tuple[Path, Path]:
    return schemas_around(MIGRATION, tmp_path)


def _enqueue(conn: psycopg.Connection[Any]) -> Any:
    row = conn.execute("SELECT job_id FROM pgrun.enqueue_job('upgrade.job')").fetchone()
    assert row is not None
    return row[0]


def _claim(conn: psycopg.Connection[Any], worker: str) -> tuple[Any, Any]:
    row = conn.execute(
        "SELECT job_id, lease_token FROM pgrun.claim_jobs(%s, 60, 1, NULL, ARRAY['upgrade.job'])", (worker,)
    ).fetchone()
    assert row is not None
    return row[0], row[1]


def _description(conn: psycopg.Connection[Any]) -> str:
    row = conn.execute("SELECT obj_description('pgrun.job_events'::regclass, 'pg_class')").fetchone()
    assert row is not None
    return str(row[0])


def test_0019_new_jobs_write_fewer_events_and_old_rows_read_as_before(
    empty_db: str, schemas: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    old, new = schemas
    monkeypatch.setenv("PGRUN_SCHEMA_DIR", str(old))
    migrate.migrate(empty_db)
    with psycopg.connect(empty_db, autocommit=True) as conn:
        assert "(enqueued, claimed," in _description(conn)
        finished = _enqueue(conn)
        job, token = _claim(conn, "w-old")
        assert job == finished
        conn.execute("SELECT pgrun.complete_job(%s, %s)", (job, token))
        running = _enqueue(conn)
        job, running_token = _claim(conn, "w-old")
        assert job == running
        assert stored_events(conn, finished) == ["enqueued", "claimed", "succeeded"]
        assert stored_events(conn, running) == ["enqueued", "claimed"]

    monkeypatch.setenv("PGRUN_SCHEMA_DIR", str(new))
    applied = migrate.migrate(empty_db)
    assert "0019_job_events_fewer_rows" in applied and "plpgsql" in applied
    assert migrate.check_schema(empty_db) == []
    with psycopg.connect(empty_db, autocommit=True) as conn:
        description = _description(conn)
        assert description.startswith("Append-only audit: one row per job transition that the job row")
        assert "Creation, claims and success write none" in description  # success: 0023

        # the old rows stay, and the history shows them as stored: nothing derived, nothing twice
        assert stored_events(conn, finished) == ["enqueued", "claimed", "succeeded"]
        as_stored = [("enqueued", False), ("claimed", False), ("succeeded", False)]
        assert history_events(conn, finished) == as_stored

        # the claim made before the upgrade finishes after it like any other (since 0023 the
        # success is recorded on the job row, not as an event)
        conn.execute("SELECT pgrun.complete_job(%s, %s)", (running, running_token))
        assert stored_events(conn, running) == ["enqueued", "claimed"]
        attempts = conn.execute(
            "SELECT attempt, worker_id, outcome FROM pgrun.job_attempts WHERE job_id = %s", (running,)
        ).fetchall()
        assert attempts == [(1, "w-old", "succeeded")]

        # a job made after the upgrade: no enqueued, no claimed row; the history derives the first
        fresh = _enqueue(conn)
        assert stored_events(conn, fresh) == []
        job, token = _claim(conn, "w-new")
        assert job == fresh and stored_events(conn, fresh) == []
        conn.execute("SELECT pgrun.complete_job(%s, %s)", (job, token))
        assert stored_events(conn, fresh) == []
        assert history_events(conn, fresh) == [("enqueued", True), ("succeeded", True)]
        attempts = conn.execute(
            "SELECT attempt, worker_id, outcome FROM pgrun.job_attempts WHERE job_id = %s", (fresh,)
        ).fetchall()
        assert attempts == [(1, "w-new", "succeeded")]
