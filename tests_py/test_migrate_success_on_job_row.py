"""Migrations 0023 and 0024 on an existing install: from then on a job that succeeds writes no
'succeeded' event and keeps its lease token on the job row, which records the attempt. Jobs
that succeeded before keep their stored row and every reader shows it once (job_attempts,
get_job_history, get_job); a job claimed before the upgrade and completed after it is
recorded the new way; the relaxed jobs_lease_check is validated over the stored rows (0024);
the holder of a succeeded attempt's token still learns why a late write was refused, old
or new.

The old schema is the commit before 0023 (extracted with pgrun.testing.extract_schema); the
new one is the committed HEAD, so a half-edited working tree does not take part."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg
import pytest

from job_records import history_events, stored_events
from pgrun import migrate
from schema_versions import schemas_around

MIGRATION = "sql/0023_success_on_job_row.sql"


@pytest.fixture
def schemas(tmp_path: Path) -> tuple[Path, Path]:
    old, new = schemas_around(MIGRATION, tmp_path)
    assert not (old / "sql/0024_validate_lease_check.sql").exists()
    return old, new


def _enqueue_and_claim(conn: psycopg.Connection[Any], worker: str) -> tuple[Any, Any]:
    conn.execute("SELECT pgrun.enqueue_job('upgrade.job')")
    row = conn.execute(
        "SELECT job_id, lease_token FROM pgrun.claim_jobs(%s, 60, 1, NULL, ARRAY['upgrade.job'])", (worker,)
    ).fetchone()
    assert row is not None
    return row[0], row[1]


def _attempts(conn: psycopg.Connection[Any], job_id: Any) -> list[tuple[Any, ...]]:
    return conn.execute(
        "SELECT attempt, worker_id, lease_token, outcome FROM pgrun.job_attempts"
        " WHERE job_id = %s ORDER BY attempt",
        (job_id,),
    ).fetchall()


def _lease_check(conn: psycopg.Connection[Any]) -> tuple[str, bool]:
    row = conn.execute(
        "SELECT pg_get_constraintdef(oid), convalidated FROM pg_constraint "
        "WHERE conrelid = 'pgrun.jobs'::regclass AND conname = 'jobs_lease_check'"
    ).fetchone()
    assert row is not None
    return row[0], row[1]


def _late_completion(conn: psycopg.Connection[Any], job_id: Any, token: Any) -> str:
    row = conn.execute(
        "SELECT lost_reason FROM pgrun.complete_jobs(ARRAY[%s]::uuid[], ARRAY[%s]::uuid[])", (job_id, token)
    ).fetchone()
    assert row is not None
    return str(row[0])


def test_0023_0024_success_on_the_job_row_and_old_rows_read_once(
    empty_db: str, schemas: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    old, new = schemas
    monkeypatch.setenv("PGRUN_SCHEMA_DIR", str(old))
    migrate.migrate(empty_db)
    with psycopg.connect(empty_db, autocommit=True) as conn:
        done, done_token = _enqueue_and_claim(conn, "w-old")
        conn.execute("SELECT pgrun.complete_job(%s, %s)", (done, done_token))
        running, running_token = _enqueue_and_claim(conn, "w-old")
        assert stored_events(conn, done) == ["succeeded"]
        before_rows = conn.execute("SELECT j::text FROM pgrun.jobs AS j ORDER BY j.id").fetchall()
        assert "(status = 'running'::text) = (lease_token IS NOT NULL)" in _lease_check(conn)[0]

    monkeypatch.setenv("PGRUN_SCHEMA_DIR", str(new))
    applied = migrate.migrate(empty_db)
    assert [a for a in applied if a != "plpgsql"][:2] == [
        "0023_success_on_job_row",
        "0024_validate_lease_check",
    ]
    assert migrate.check_schema(empty_db) == []
    with psycopg.connect(empty_db, autocommit=True) as conn:
        definition, valid = _lease_check(conn)
        assert valid, "0024 validated the relaxed rule over the stored rows"
        assert "(status = 'running'::text) = (lease_expires_at IS NOT NULL)" in definition
        assert conn.execute("SELECT j::text FROM pgrun.jobs AS j ORDER BY j.id").fetchall() == before_rows

        # the job that succeeded before: its stored row is the record, shown once
        assert stored_events(conn, done) == ["succeeded"]
        assert history_events(conn, done) == [("enqueued", True), ("succeeded", False)]
        assert _attempts(conn, done) == [(1, "w-old", done_token, "succeeded")]
        job = conn.execute("SELECT pgrun.get_job(%s)", (done,)).fetchone()
        assert job is not None and [a["outcome"] for a in job[0]["attempts"]] == ["succeeded"]
        assert _late_completion(conn, done, done_token) == "not_running"

        # the claim made before the upgrade completes the new way: no event, the token kept
        assert conn.execute("SELECT pgrun.complete_job(%s, %s)", (running, running_token)).fetchone() == (
            "succeeded",
        )
        assert stored_events(conn, running) == []
        assert conn.execute(
            "SELECT lease_token, lease_expires_at FROM pgrun.jobs WHERE id = %s", (running,)
        ).fetchone() == (
            running_token,
            None,
        )
        assert history_events(conn, running) == [("enqueued", True), ("succeeded", True)]
        assert _attempts(conn, running) == [(1, "w-old", running_token, "succeeded")]
        assert _late_completion(conn, running, running_token) == "not_running"

        # the rule still holds on writes: no expiry outside running, no token on a dead job
        with pytest.raises(psycopg.errors.CheckViolation, match="jobs_lease_check"):
            conn.execute("UPDATE pgrun.jobs SET lease_expires_at = now() WHERE id = %s", (running,))
        fresh, fresh_token = _enqueue_and_claim(conn, "w-new")
        conn.execute("SELECT * FROM pgrun.fail_job(%s, %s, retryable => false)", (fresh, fresh_token))
        with pytest.raises(psycopg.errors.CheckViolation, match="jobs_lease_check"):
            conn.execute("UPDATE pgrun.jobs SET lease_token = %s WHERE id = %s", (fresh_token, fresh))
