"""The database clock cannot be moved from a session (docs/security.md): an install's
pgrun.now() ignores pgrun.fake_now, also when a hostile worker sets it through its
connection string, so no session can reap another worker's healthy lease, claim a delayed
job early, or complete on a lease that has really expired."""

from __future__ import annotations

import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from pgrun import migrate
from pgrun.errors import LeaseLostError, translate
from pgrun.testing import LoginRole, install_test_clock

FUTURE = "2100-01-01 00:00:00+00"


def _in_the_future(dsn: str) -> str:
    return make_conninfo(dsn, options=f"-c pgrun.fake_now={FUTURE.replace(' ', 'T')}")


def _enqueue(conn: psycopg.Connection[tuple[object, ...]], job_type: str, delay: str | None = None) -> object:
    row = conn.execute(
        "SELECT job_id FROM pgrun.enqueue_job(job_type => %s, delay => %s::interval)", (job_type, delay)
    ).fetchone()
    assert row is not None
    return row[0]


def test_a_worker_in_the_future_cannot_reap_a_healthy_lease(db: str, roles: dict[str, LoginRole]) -> None:
    with psycopg.connect(db, autocommit=True) as owner:
        job_id = _enqueue(owner, "clock.healthy")
        claimed = owner.execute(
            "SELECT job_id, lease_token FROM pgrun.claim_jobs('honest', 300, 1, NULL, ARRAY['clock.healthy'])"
        ).fetchone()
        assert claimed is not None and claimed[0] == job_id
    with psycopg.connect(_in_the_future(roles["worker"].dsn(db)), autocommit=True) as hostile:
        assert hostile.execute("SHOW pgrun.fake_now").fetchone() == (FUTURE.replace(" ", "T"),)
        assert hostile.execute("SELECT pgrun.now() < '2099-01-01'").fetchone() == (True,)
        reaped = hostile.execute("SELECT job_id FROM pgrun.reap_expired_leases()").fetchall()
        assert reaped == []
        # Claiming under the future clock does not take the delayed job either.
        _enqueue_as_owner(db, "clock.delayed", "1 day")
        assert hostile.execute("SELECT * FROM pgrun.claim_jobs('hostile', 30, 10)").fetchall() == []
    with psycopg.connect(db, autocommit=True) as owner:
        row = owner.execute("SELECT status, lease_token FROM pgrun.jobs WHERE id = %s", (job_id,)).fetchone()
        assert row == ("running", claimed[1])
        # The honest worker still completes its job.
        assert owner.execute("SELECT pgrun.complete_job(%s, %s)", claimed).fetchone() is not None


def _enqueue_as_owner(db: str, job_type: str, delay: str) -> object:
    with psycopg.connect(db, autocommit=True) as owner:
        return _enqueue(owner, job_type, delay)


def test_a_worker_in_the_past_cannot_complete_on_an_expired_lease(
    db: str, roles: dict[str, LoginRole]
) -> None:
    with psycopg.connect(roles["worker"].dsn(db), autocommit=True) as worker:
        _enqueue_as_owner(db, "clock.expired", "0 seconds")
        job_id, token = worker.execute(
            "SELECT job_id, lease_token FROM pgrun.claim_jobs('w', 1, 1, NULL, ARRAY['clock.expired'])"
        ).fetchone()  # type: ignore[misc]
        # Let the one-second lease really expire (the database clock, polled).
        worker.execute("SELECT pg_sleep(1.2)")
        worker.execute("SELECT set_config('pgrun.fake_now', (now() - interval '1 hour')::text, false)")
        with pytest.raises(psycopg.Error) as raised:
            worker.execute("SELECT pgrun.complete_job(%s, %s)", (job_id, token))
        assert isinstance(translate(raised.value), LeaseLostError)
    with psycopg.connect(db) as owner:
        status = owner.execute("SELECT status FROM pgrun.jobs WHERE id = %s", (job_id,)).fetchone()
        assert status == ("running",)


def test_check_schema_reports_the_test_clock(db: str) -> None:
    assert migrate.check_schema(db) == []
    install_test_clock(db)
    problems = migrate.check_schema(db)
    assert len(problems) == 1 and "pgrun.fake_now" in problems[0], problems
