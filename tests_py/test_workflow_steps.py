"""Workflow.job's organization_id, delay and run_at: the spec the builder writes, and a delayed
step against a real database, on the real clock: its job starts no earlier than its delay after
its dependency finished (pgTAP pins the exact times with the test clock:
tests_sql/workflows/release/test_step_delay.sql)."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from uuid import UUID

import psycopg

from pgrun.client import Client
from pgrun.workflow import Workflow

ORG = UUID("22222222-2222-2222-2222-222222222222")
DELAY = 2.0


def test_the_builder_writes_the_placement_keys() -> None:
    wf = Workflow("placed")
    wf.job("plain", "t.plain")
    wf.job("org", "t.org", organization_id=ORG)
    wf.job("seconds", "t.s", delay=1.5, depends_on=["plain"])
    wf.job("span", "t.span", delay=timedelta(minutes=2))
    wf.job("at", "t.at", run_at=datetime(2030, 1, 1, 1, 0, tzinfo=UTC))
    steps = {step["key"]: step for step in wf.spec()["steps"]}
    assert steps["plain"] == {"key": "plain", "job_type": "t.plain"}, "nothing added when left out"
    assert steps["org"]["organization_id"] == "22222222-2222-2222-2222-222222222222"
    assert steps["seconds"]["delay"] == 1.5
    assert steps["span"]["delay"] == 120.0
    assert steps["at"]["run_at"] == "2030-01-01T01:00:00+00:00"


def test_a_delayed_step_starts_no_earlier_than_its_delay_after_its_dependency(db: str) -> None:
    wf = Workflow("delayed")
    wf.job("first", "wfs.first")
    wf.job("later", "wfs.later", depends_on=["first"], delay=DELAY)
    wf.job("elsewhere", "wfs.elsewhere", organization_id=ORG, run_at=datetime.now(UTC) - timedelta(hours=1))
    with Client.connect(db) as client, psycopg.connect(db, autocommit=True) as conn:
        run = client.enqueue_workflow(wf)
        assert run.created

        (first,) = client.claim_jobs("w", job_types=["wfs.first"])
        assert client.complete_job(first.job_id, first.lease_token) == "succeeded"
        row = conn.execute("SELECT finished_at FROM pgrun.jobs WHERE id = %s", (first.job_id,)).fetchone()
        assert row is not None
        finished_at = row[0]

        document = client.get_workflow_run(run.run_id)
        steps = {step["key"]: step for step in document["steps"]}
        assert steps["later"]["status"] == "released" and steps["later"]["delay"] == DELAY
        assert steps["elsewhere"]["organization_id"] == str(ORG)
        later_job = steps["later"]["job_id"]

        # polled with a generous deadline; the claim itself says when the server let it start
        started = None
        deadline = time.monotonic() + 30
        while started is None and time.monotonic() < deadline:
            claimed = client.claim_jobs("w", job_types=["wfs.later"])
            if claimed:
                assert str(claimed[0].job_id) == str(later_job)
                row = conn.execute("SELECT started_at FROM pgrun.jobs WHERE id = %s", (later_job,)).fetchone()
                assert row is not None
                started = row[0]
            else:
                time.sleep(0.1)
        assert started is not None, "the delayed step's job never became claimable"
        assert started >= finished_at + timedelta(seconds=DELAY)
        assert started < finished_at + timedelta(seconds=DELAY + 25)

        # a run_at in the past: the job was ready at its release, in its own organization
        row = conn.execute(
            "SELECT run_at = created_at, organization_id FROM pgrun.jobs WHERE id = %s",
            (steps["elsewhere"]["job_id"],),
        ).fetchone()
        assert row == (True, ORG)
