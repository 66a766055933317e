"""count_jobs through both clients, and the one name per id (job_id, run_id) on the typed
rows of list_jobs / list_workflow_runs and in get_job / get_workflow_run, with ``id`` kept as
the alias older code reads (docs/architecture.md, "Conventions")."""

from __future__ import annotations

import pytest

from client_calls import Invoke, run_with_async_client, run_with_client
from pgrun import display
from pgrun.errors import InvalidInputError
from pgrun.results import JobCount, JobSummary, WorkflowRunSummary

STATUSES = ["queued", "running", "succeeded", "dead", "cancelled"]


async def scenario(call: Invoke) -> None:
    jobs = [await call("enqueue_job", "t.count", {"n": n}, queue="q") for n in range(3)]
    await call("enqueue_job", "t.other", {}, queue="elsewhere")
    claimed = await call("claim_jobs", "w1", max_jobs=1, lease_seconds=60, job_types=["t.count"])
    assert await call("complete_job", claimed[0].job_id, claimed[0].lease_token) == "succeeded"

    counts = await call("count_jobs")
    assert all(isinstance(c, JobCount) for c in counts)
    assert [(c.status, c.jobs) for c in counts] == [
        ("queued", 3),
        ("running", 0),
        ("succeeded", 1),
        ("dead", 0),
        ("cancelled", 0),
    ]
    assert [(c.status, c.jobs) for c in await call("count_jobs", job_type="t.count")] == [
        ("queued", 2),
        ("running", 0),
        ("succeeded", 1),
        ("dead", 0),
        ("cancelled", 0),
    ]
    assert [(c.status, c.jobs) for c in await call("count_jobs", status="queued", queue="q")] == [
        ("queued", 2)
    ]
    assert [c.jobs for c in await call("count_jobs", status="succeeded", organization_id=None)] == [1]
    with pytest.raises(InvalidInputError) as caught:
        await call("count_jobs", status="done")
    assert caught.value.code == "job.invalid_status"

    listed = await call("list_jobs", job_type="t.count")
    assert all(isinstance(j, JobSummary) for j in listed)
    assert [j.job_id for j in listed] == [j.job_id for j in jobs]
    assert all(j.id == j.job_id for j in listed)
    document = await call("get_job", jobs[0].job_id)
    assert document["job_id"] == document["id"] == str(jobs[0].job_id)

    run = await call("enqueue_workflow", {"steps": [{"key": "gate", "kind": "external"}]})
    appended = await call(
        "append_workflow_steps", run.run_id, [{"key": "b", "job_type": "t.b"}], mutation_key="m"
    )
    runs = await call("list_workflow_runs")
    assert all(isinstance(r, WorkflowRunSummary) for r in runs)
    assert [r.run_id for r in runs] == [run.run_id] and runs[0].id == run.run_id
    document = await call("get_workflow_run", run.run_id)
    assert document["run_id"] == document["id"] == str(run.run_id)
    assert [m["mutation_id"] for m in document["mutations"]] == [str(appended.mutation_id)]

    # what the CLI prints from them
    assert str(jobs[0].job_id) in display.jobs_table(listed)
    assert str(run.run_id) in display.runs_table(runs)
    assert display.run_report(document).startswith(f"run {run.run_id} ")


def test_client(db: str) -> None:
    run_with_client(db, scenario)


def test_async_client(db: str) -> None:
    run_with_async_client(db, scenario)


def test_the_run_report_reads_older_documents() -> None:
    """A document of a server migrated before run_id was added has only id."""
    old = {"id": "r-1", "name": "n", "status": "running", "steps": [], "dependencies": []}
    assert display.run_report(old).startswith("run r-1 ")
