"""Migration 0010 on a database with history: every error message is stored once (on the
event that ended its attempt), and get_job / list_jobs return what they returned before.

The old schema is the commit before 0010 (extracted with pgrun.testing.extract_schema); the
new one is the committed HEAD, so a half-edited working tree does not take part."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg
import pytest

from pgrun import migrate
from pgrun.testing import install_test_clock
from schema_versions import schemas_around


@pytest.fixture
def schemas(tmp_path: Path) -> tuple[Path, Path]:
    return schemas_around("sql/0010_limits.sql", tmp_path)


def _history(conn: psycopg.Connection[Any]) -> dict[str, Any]:
    """Failures written by the functions before 0010, one job per way an error is kept."""

    def at(ts: str) -> None:
        conn.execute("SELECT set_config('pgrun.fake_now', %s, false)", (ts,))

    def enqueue(name: str, max_attempts: int) -> Any:
        row = conn.execute(
            "SELECT job_id FROM pgrun.enqueue_job(%s, max_attempts => %s)", (f"mig.{name}", max_attempts)
        ).fetchone()
        assert row is not None
        return row[0]

    def claim(name: str) -> Any:
        row = conn.execute(
            "SELECT lease_token FROM pgrun.claim_jobs('w', 30, 1, NULL, %s)", ([f"mig.{name}"],)
        ).fetchone()
        assert row is not None, name
        return row[0]

    def fail(job: Any, token: Any, code: str, message: str, retryable: bool = True) -> None:
        conn.execute(
            "SELECT * FROM pgrun.fail_job(%s, %s, %s, %s, %s, '0 seconds')",
            (job, token, code, message, retryable),
        )

    at("2030-01-01 00:00:00+00")
    jobs = {
        "recovered": enqueue("recovered", 3),
        "dead": enqueue("dead", 2),
        "reaped": enqueue("reaped", 1),
        "reap_cancel": enqueue("reap_cancel", 3),
    }
    # failed once, then succeeded: the job keeps the first attempt's error
    fail(jobs["recovered"], claim("recovered"), "flaky", "first try")
    conn.execute("SELECT pgrun.complete_job(%s, %s, '1')", (jobs["recovered"], claim("recovered")))
    # two failures, the second final: a dead letter
    fail(jobs["dead"], claim("dead"), "e1", "m1")
    fail(jobs["dead"], claim("dead"), "e2", "m2 " + "x" * 5000, retryable=False)
    # the reaper: a dead letter with its own message
    claim("reaped")
    # a failure, then a cancel request the worker never honoured: the reaper cancels, and the
    # job keeps the earlier error while the last attempt's event holds the reaper's message
    fail(jobs["reap_cancel"], claim("reap_cancel"), "x", "earlier")
    claim("reap_cancel")
    conn.execute("SELECT pgrun.cancel_job(%s, 'stop')", (jobs["reap_cancel"],))
    at("2030-01-01 01:00:00+00")
    conn.execute("SELECT * FROM pgrun.reap_expired_leases()")
    return jobs


def _snapshot(conn: psycopg.Connection[Any], jobs: dict[str, Any]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for name, job in jobs.items():
        row = conn.execute("SELECT pgrun.get_job(%s)", (job,)).fetchone()
        assert row is not None
        doc = row[0]
        listed = conn.execute(
            "SELECT error_code, error_message FROM pgrun.list_jobs(job_type => %s)", (f"mig.{name}",)
        ).fetchall()
        seen[name] = {
            "status": doc["status"],
            "error": (doc["error_code"], doc["error_message"]),
            "listed": listed,
            "attempts": [(a["attempt"], a["error_code"], a["error_message"]) for a in doc["attempts"]],
            "dead_letters": [
                (d["attempt"], d["error_code"], d["error_message"]) for d in doc["dead_letters"]
            ],
        }
    return seen


def test_0010_keeps_every_error_message_once(
    empty_db: str, schemas: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    old, new = schemas
    monkeypatch.setenv("PGRUN_SCHEMA_DIR", str(old))
    migrate.migrate(empty_db)
    install_test_clock(empty_db)
    with psycopg.connect(empty_db, autocommit=True) as conn:
        jobs = _history(conn)
        before = _snapshot(conn, jobs)
    assert before["recovered"]["error"] == ("flaky", "first try")
    assert before["reap_cancel"]["status"] == "cancelled"
    assert before["reap_cancel"]["error"] == ("x", "earlier")
    assert before["reaped"]["dead_letters"][0][1] == "lease_expired"

    monkeypatch.setenv("PGRUN_SCHEMA_DIR", str(new))
    assert "0010_limits" in migrate.migrate(empty_db)
    with psycopg.connect(empty_db, autocommit=True) as conn:
        assert _snapshot(conn, jobs) == before
        copies = conn.execute(
            "SELECT count(*) FROM information_schema.columns WHERE table_schema = 'pgrun' "
            "AND table_name IN ('jobs', 'job_dead_letters') AND column_name = 'error_message'"
        ).fetchone()
        assert copies == (0,)
        attempts = conn.execute(
            "SELECT error_attempt FROM pgrun.jobs WHERE id = %s", (jobs["reap_cancel"],)
        ).fetchone()
        assert attempts == (1,), "the cancelled job points at the attempt its error came from"


def test_0010_refuses_a_copy_no_event_holds(
    empty_db: str, schemas: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    old, new = schemas
    monkeypatch.setenv("PGRUN_SCHEMA_DIR", str(old))
    migrate.migrate(empty_db)
    install_test_clock(empty_db)
    with psycopg.connect(empty_db, autocommit=True) as conn:
        jobs = _history(conn)
        conn.execute("UPDATE pgrun.jobs SET error_message = 'edited by hand' WHERE id = %s", (jobs["dead"],))

    monkeypatch.setenv("PGRUN_SCHEMA_DIR", str(new))
    with pytest.raises(migrate.MigrationError, match="error message no attempt event holds"):
        migrate.migrate(empty_db)
    with psycopg.connect(empty_db) as conn:
        kept = conn.execute("SELECT error_message FROM pgrun.jobs WHERE id = %s", (jobs["dead"],)).fetchone()
        assert kept == ("edited by hand",), "nothing was changed"
