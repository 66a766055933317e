"""Migrations 0021 and 0022 on an existing install with jobs in every state: the CHECK
constraints of jobs and job_events take their compact forms (0021, NOT VALID), the stored rows
are then validated (0022), nothing is lost, the rules still hold on writes, and the lifecycle
goes on.

The old schema is the commit before 0021 (extracted with pgrun.testing.extract_schema); the
new one is the committed HEAD. What each compact form means is pinned row for row by
tests_sql/jobs/schema/test_hot_checks.sql."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg
import pytest

from pgrun import migrate
from pgrun.client import Client
from schema_versions import schemas_around

MIGRATION = "sql/0021_compact_hot_checks.sql"

CHANGED = {
    "jobs_status_check",
    "jobs_finished_check",
    "jobs_priority_check",
    "jobs_idempotency_check",
    "jobs_step_max_attempts_check",
    "jobs_step_retry_delay_check",
    "job_events_event_check",
    "job_events_attempt_check",
}
# Re-created by a later migration that HEAD applies too: 0023 (a succeeded job keeps its token).
CHANGED_LATER = {"jobs_lease_check"}


@pytest.fixture
def schemas(tmp_path: Path) -> tuple[Path, Path]:
    old, new = schemas_around(MIGRATION, tmp_path)
    assert not (old / "sql/0022_validate_hot_checks.sql").exists()
    return old, new


def _checks(conn: psycopg.Connection[Any]) -> dict[str, tuple[str, bool]]:
    rows = conn.execute(
        "SELECT conname::text, pg_get_constraintdef(oid), convalidated FROM pg_constraint "
        "WHERE contype = 'c' AND conrelid IN ('pgrun.jobs'::regclass, 'pgrun.job_events'::regclass)"
    ).fetchall()
    return {name: (definition, valid) for name, definition, valid in rows}


def _state(conn: psycopg.Connection[Any]) -> list[Any]:
    """Every job's and event's row, as text, in a stable order."""
    jobs = conn.execute("SELECT j::text FROM pgrun.jobs AS j ORDER BY j.id").fetchall()
    events = conn.execute("SELECT e::text FROM pgrun.job_events AS e ORDER BY e.job_id, e.id").fetchall()
    return jobs + events


def test_0021_0022_compact_the_checks_and_keep_every_row(
    empty_db: str, schemas: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    old, new = schemas
    monkeypatch.setenv("PGRUN_SCHEMA_DIR", str(old))
    migrate.migrate(empty_db)
    with Client.connect(empty_db, max_size=1) as client:
        for n in range(6):
            client.enqueue_job("report.build", {"n": n})
        client.enqueue_job("report.build", {"n": 6}, idempotency_key="nightly-6")
        claimed = client.claim_jobs("worker-1", max_jobs=5)
        assert len(claimed) == 5
        client.complete_job(claimed[0].job_id, claimed[0].lease_token, {"ok": True})
        client.fail_job(claimed[1].job_id, claimed[1].lease_token, error_code="boom", retryable=False)
        client.fail_job(claimed[2].job_id, claimed[2].lease_token, error_code="flaky", retry_delay=0)
        assert client.cancel_job(claimed[3].job_id, reason="operator") == "cancel_requested"
    with psycopg.connect(empty_db, autocommit=True) as conn:
        before = _checks(conn)
        state = _state(conn)
        statuses = dict(conn.execute("SELECT status, count(*) FROM pgrun.jobs GROUP BY status").fetchall())
    assert statuses == {"queued": 3, "running": 2, "succeeded": 1, "dead": 1}
    assert all(valid for _, valid in before.values())

    monkeypatch.setenv("PGRUN_SCHEMA_DIR", str(new))
    applied = migrate.migrate(empty_db)
    assert [a for a in applied if a != "plpgsql"][:2] == [
        "0021_compact_hot_checks",
        "0022_validate_hot_checks",
    ]
    with psycopg.connect(empty_db, autocommit=True) as conn:
        after = _checks(conn)
        assert after.keys() == before.keys()
        assert {name for name in after if after[name][0] != before[name][0]} - CHANGED_LATER == CHANGED
        # the compact forms: no IN list of separate constants, no BETWEEN
        assert not any(" IN (" in d or "BETWEEN" in d for d, _ in after.values()), after
        assert all(valid for _, valid in after.values()), after
        assert _state(conn) == state
        with pytest.raises(psycopg.errors.CheckViolation, match="jobs_priority_check"):
            conn.execute("UPDATE pgrun.jobs SET priority = 32768")
        with pytest.raises(psycopg.errors.CheckViolation, match="job_events_event_check"):
            conn.execute("UPDATE pgrun.job_events SET event = 'finished'")
    assert migrate.check_schema(empty_db) == []

    # the lifecycle goes on over the upgraded tables
    with Client.connect(empty_db, max_size=1) as client:
        rest = client.claim_jobs("worker-2", max_jobs=10)
        assert len(rest) == 3
        for job in rest:
            assert client.complete_job(job.job_id, job.lease_token) == "succeeded"
        running = client.claim_jobs("worker-2", max_jobs=10)
        assert running == []
