"""The operations commands against a real database: enqueue, status, jobs, job, cancel, requeue, runs, run."""

from __future__ import annotations

import json
import subprocess
import sys

from pgrun.client import Client
from pgrun.workflow import Workflow


def pgrun(dsn: str, *args: str) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "pgrun", *args, "--database-url", dsn],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_operations_commands(db: str) -> None:
    out = pgrun(db, "enqueue", "mail.send", "--payload", '{"to": "a@b"}', "--priority", "5")
    job_id, status = out.split()
    assert status == "queued"
    assert "mail.send" in pgrun(db, "status")
    assert job_id in pgrun(db, "jobs", "--status", "queued")
    assert json.loads(pgrun(db, "job", job_id))["payload"] == {"to": "a@b"}
    assert pgrun(db, "cancel", job_id).strip() == f"job {job_id}: cancelled"
    assert pgrun(db, "requeue", job_id).startswith(f"job {job_id}: queued for")

    wf = Workflow("cli-run")
    wf.job("a", "mail.send")
    wf.external("gate", depends_on=["a"])
    with Client.connect(db) as client:
        run_id = str(client.enqueue_workflow(wf).run_id)
    assert run_id in pgrun(db, "runs")
    report = pgrun(db, "run", run_id)
    assert "status: running" in report and "gate" in report and "blocked" in report
    assert "cancelled" in pgrun(db, "cancel", "--run", run_id)


def test_a_refused_call_prints_the_code_and_hint(db: str) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pgrun",
            "requeue",
            "00000000-0000-7000-8000-000000000001",
            "--database-url",
            db,
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 1
    assert "job.not_found" in result.stderr
