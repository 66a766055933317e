"""Continue's max_attempts and retry_delay (issue 13 item 13): the next step's own attempt
budget and retry delay travel from the handler through the worker to continue_job, and the
SQL that decides retry or dead reads them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from pgrun.app import App, Continue, JobContext, Retry
from pgrun.client import Client
from worker_support import fast_config, run_worker_until


def test_a_step_continued_with_max_attempts_1_dies_on_its_first_failure(db: str) -> None:
    app = App()
    budgets: list[tuple[str | None, int, int]] = []

    @app.job("t.fragile")
    async def fragile(ctx: JobContext) -> Any:
        budgets.append((ctx.step, ctx.attempt, ctx.max_attempts))
        if ctx.step is None:
            return Continue("fragile", {"n": 1}, max_attempts=1)
        raise ValueError("the fragile step broke")

    with Client.connect(db) as client:
        job_id = client.enqueue_job("t.fragile", max_attempts=5).job_id
        run_worker_until(app, fast_config(db), lambda c: c.get_job(job_id)["status"] == "dead")
        job = client.get_job(job_id)
    assert budgets == [(None, 1, 5), ("fragile", 1, 1)], "the handler sees the step's budget"
    assert (job["step"], job["max_attempts"], job["step_max_attempts"]) == ("fragile", 5, 1)
    assert [a["outcome"] for a in job["attempts"]] == ["continued", "crashed"]
    assert job["total_attempts"] == 2 and job["dead_letters"][0]["reason"] == "attempts_exhausted"


def test_a_step_continued_with_retry_delay_waits_it_between_failures(db: str) -> None:
    app = App()

    @app.job("t.slow")
    async def slow(ctx: JobContext) -> Any:
        if ctx.step is None:
            return Continue("poll", retry_delay=timedelta(hours=1))
        raise Retry()  # no delay of its own: the step's applies

    with Client.connect(db) as client:
        job_id = client.enqueue_job("t.slow", max_attempts=5).job_id

        def retried(c: Client) -> bool:
            return len(c.get_job(job_id)["attempts"]) == 2 and c.get_job(job_id)["status"] == "queued"

        run_worker_until(app, fast_config(db), retried)
        job = client.get_job(job_id)
    now = datetime.now(UTC)
    run_at = datetime.fromisoformat(job["run_at"]) if isinstance(job["run_at"], str) else job["run_at"]
    # an hour away, not the type's 2 s backoff (generous margins on either side)
    assert now + timedelta(minutes=50) < run_at < now + timedelta(minutes=70)
    assert [a["outcome"] for a in job["attempts"]] == ["continued", "failed"]


def test_bad_overrides_fail_the_job_as_continue_invalid(db: str) -> None:
    app = App()

    @app.job("t.bad")
    async def bad(ctx: JobContext) -> Any:
        if ctx.step is not None:
            return {"reached": ctx.step}
        kind = ctx.payload["kind"]
        if kind == "zero":
            return Continue("next", max_attempts=0)
        if kind == "huge":
            return Continue("next", max_attempts=2**40)
        if kind == "text":
            return Continue("next", max_attempts="3")  # type: ignore[arg-type]
        if kind == "negative_delay":
            return Continue("next", retry_delay=-1)
        if kind == "nan_delay":
            return Continue("next", retry_delay=float("nan"))
        return Continue("next", max_attempts=1000, retry_delay=0)

    kinds = ("zero", "huge", "text", "negative_delay", "nan_delay", "good")
    with Client.connect(db) as client:
        ids = {k: client.enqueue_job("t.bad", {"kind": k}, max_attempts=3).job_id for k in kinds}
        run_worker_until(
            app,
            fast_config(db),
            lambda c: all(c.get_job(i)["status"] in ("succeeded", "dead") for i in ids.values()),
        )
        jobs = {k: client.get_job(job_id) for k, job_id in ids.items()}
    assert jobs["good"]["status"] == "succeeded" and jobs["good"]["result"] == {"reached": "next"}
    for kind in kinds[:-1]:
        job = jobs[kind]
        assert (job["status"], job["error_code"], job["total_attempts"]) == ("dead", "continue_invalid", 1), (
            kind
        )
        assert job["step_max_attempts"] is None and job["step_retry_delay"] is None, kind
    assert "job.invalid_max_attempts" in jobs["zero"]["error_message"]
    assert "job.invalid_delay" in jobs["negative_delay"]["error_message"]


def test_the_client_passes_the_overrides(db: str) -> None:
    with Client.connect(db) as client:
        job_id = client.enqueue_job("t.client", max_attempts=5).job_id
        (claimed,) = client.claim_jobs("w", job_types=["t.client"])
        outcome = client.continue_job(
            job_id, claimed.lease_token, "next", max_attempts=2, retry_delay=timedelta(minutes=5)
        )
        assert outcome.outcome == "continued"
        (again,) = client.claim_jobs("w", job_types=["t.client"])
        assert (again.step, again.max_attempts) == ("next", 2)
        retry = client.fail_job(job_id, again.lease_token, error_code="boom")
        assert retry.outcome == "retry_scheduled" and retry.run_at is not None
        job = client.get_job(job_id)
    stored = job["updated_at"]
    stored = datetime.fromisoformat(stored) if isinstance(stored, str) else stored
    assert retry.run_at - stored == timedelta(minutes=5)
