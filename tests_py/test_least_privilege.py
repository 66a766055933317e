"""pgrun's own processes under least-privilege roles (docs/security.md), not the owner: a
`pgrun worker` as a worker role (its handlers, definitions, declared schedule, reaper and
scheduler), the CLI as producer, reader and admin, and `make demo`'s program."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from uuid import UUID

import psycopg

from pgrun.client import Client
from pgrun.testing import LoginRole, scratch_database

HERE = Path(__file__).resolve().parent


def pgrun(dsn: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pgrun", *args, "--database-url", dsn],
        capture_output=True,
        text=True,
        check=False,
    )


def wait_for(check: object, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():  # type: ignore[operator]
            return
        time.sleep(0.1)
    raise AssertionError(f"not true within {timeout} s: {check}")


def test_a_worker_role_runs_the_loops_and_each_role_uses_the_cli_for_what_it_may(
    db: str, roles: dict[str, LoginRole]
) -> None:
    producer, worker, reader, admin = (roles[k].dsn(db) for k in ("producer", "worker", "reader", "admin"))
    env = {
        **os.environ,
        "DATABASE_URL": worker,
        "JOBS_POLL_INTERVAL_MS": "100",
        "JOBS_SCHEDULE_POLL_INTERVAL_SECONDS": "1",
        "JOBS_REAPER_INTERVAL_SECONDS": "1",
        "JOBS_WORKER_ID": "least-privilege",
    }
    env.pop("PGRUN_SCHEMA_DIR", None)
    process = subprocess.Popen(
        [sys.executable, "-m", "pgrun", "worker", "role_app:app"],
        cwd=HERE,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        # The worker role declares its job types at start-up; the job below takes the definition.
        with psycopg.connect(db, autocommit=True) as conn:
            wait_for(
                lambda: (
                    conn.execute(
                        "SELECT count(*) FROM pgrun.audit_log WHERE action = 'job_definition.upserted'"
                    ).fetchone()
                    == (2,)
                )
            )
        # The producer enqueues through the CLI; the worker role runs it.
        enqueued = pgrun(producer, "enqueue", "role.echo", "--payload", '{"n": 7}')
        assert enqueued.returncode == 0, enqueued.stderr
        job_id = UUID(enqueued.stdout.split()[0])
        with Client.connect(reader) as client:
            wait_for(lambda: client.get_job(job_id)["status"] == "succeeded")
            job = client.get_job(job_id)
            assert job["result"] == {"echo": {"n": 7}}
            assert job["progress"] == {"seen": True}
            assert job["max_attempts"] == 4, "the worker role declared the type's definition"
            # The scheduler (inside the worker) declared role.tick and fired it.
            wait_for(lambda: bool(client.list_jobs(job_type="role.tick", status="succeeded")))

        # The reader reads and may not steer; the producer may.
        status = pgrun(reader, "status")
        assert status.returncode == 0 and "role.echo" in status.stdout, status.stderr
        refused = pgrun(reader, "cancel", str(job_id))
        assert refused.returncode == 1
        assert "access.denied: permission denied for function cancel_job" in refused.stderr
        assert "Traceback" not in refused.stderr
        requeue = pgrun(producer, "requeue", str(job_id))
        assert requeue.returncode == 1 and "job.not_requeueable" in requeue.stderr, requeue.stderr
        # Retention is an admin's.
        assert "permission denied for function purge_finished_jobs" in pgrun(producer, "purge").stderr
        purged = pgrun(admin, "purge", "--older-than", "0")
        assert purged.returncode == 0 and purged.stdout.startswith("purged "), purged.stderr
    finally:
        process.send_signal(signal.SIGTERM)
        output, _ = process.communicate(timeout=30)
    assert process.returncode == 0, output
    # The worker's reaper could not purge (JOBS_RETENTION_HOURS defaults to 7 days) and said so.
    assert "retention purge skipped from now on: this role may not purge" in output

    with psycopg.connect(db) as conn:
        actors = dict(
            conn.execute(
                "SELECT action, string_agg(DISTINCT actor, ',') FROM pgrun.audit_log GROUP BY action"
            ).fetchall()
        )
    assert actors["job_definition.upserted"] == roles["worker"].name
    assert actors["schedule.upserted"] == roles["worker"].name
    assert actors["jobs.purged"] == roles["admin"].name


def test_the_demo_runs_as_a_producer_and_a_worker_role(admin_dsn: str) -> None:
    with scratch_database(admin_dsn) as dsn:
        env = {**os.environ, "DATABASE_URL": dsn}
        env.pop("PGRUN_SCHEMA_DIR", None)
        demo = subprocess.run(
            [sys.executable, "-m", "pgrun.demo"],
            env=env,
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )
        assert demo.returncode == 0, demo.stdout + demo.stderr
        assert "status: succeeded" in demo.stdout
        with psycopg.connect(dsn) as conn:
            actors = dict(
                conn.execute(
                    "SELECT action, string_agg(DISTINCT actor, ',') FROM pgrun.audit_log GROUP BY action"
                )
            )
            left = conn.execute("SELECT count(*) FROM pg_roles WHERE rolname LIKE 'pgrun_demo_%'").fetchone()
    # The gate was approved by the producer role, the definitions and schedule declared by the
    # worker role: neither was the owner.
    assert actors["workflow_step.completed"] == "pgrun_demo_producer"
    assert actors["job_definition.upserted"] == "pgrun_demo_worker"
    assert actors["schedule.upserted"] == "pgrun_demo_worker"
    assert left == (0,), "the demo drops its login roles"
