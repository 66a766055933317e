"""requeue_job refuses a workflow step's job (job.in_workflow_run, RQ001): the Client raises a
ConflictError whose describe() names the job, the step and the run, and the CLI prints the code,
the detail and the hint and exits 1. No Python code knows the new code: it maps by SQLSTATE."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from pgrun.client import Client
from pgrun.errors import ConflictError
from pgrun.workflow import Workflow


def test_requeue_of_a_cancelled_step_job_is_a_conflict_in_client_and_cli(db: str) -> None:
    wf = Workflow("requeue-step")
    wf.job("extract", "etl.extract")
    wf.job("load", "etl.load", depends_on=["extract"])
    with Client.connect(db) as client:
        run_id = client.enqueue_workflow(wf).run_id
        client.cancel_workflow_run(run_id, reason="operator")
        (job,) = client.list_jobs(workflow_run_id=run_id)
        assert job.status == "cancelled"

        with pytest.raises(ConflictError) as refused:
            client.requeue_job(job.id)
        error = refused.value
        assert error.code == "job.in_workflow_run"
        assert str(error) == "The request conflicts with the current state. (job.in_workflow_run)"
        assert error.describe() == (
            f"job.in_workflow_run: job {job.id} (cancelled) is the job of step 'extract' of workflow run "
            f"{run_id} (cancelled); a workflow step's job is not requeued"
        )
        assert error.hint is not None and "Enqueue a new workflow run" in error.hint

        cli = subprocess.run(
            [sys.executable, "-m", "pgrun", "requeue", str(job.id)],
            env={**os.environ, "DATABASE_URL": db},
            capture_output=True,
            text=True,
            check=False,
        )
        assert cli.returncode == 1, cli.stdout
        lines = cli.stderr.splitlines()
        assert lines[0] == f"pgrun requeue: {error.describe()}", cli.stderr
        assert lines[1] == f"hint: {error.hint}", cli.stderr
        assert "Traceback" not in cli.stderr

        assert client.get_job(job.id)["status"] == "cancelled", "nothing was requeued"
        run = client.get_workflow_run(run_id)
        assert run["status"] == "cancelled"
        assert {s["key"]: s["status"] for s in run["steps"]} == {"extract": "cancelled", "load": "cancelled"}
