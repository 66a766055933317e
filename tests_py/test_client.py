"""Every Client and AsyncClient method against a real database, through one scenario.

The two classes share their call builders but each has its own typed signatures; running the
same scenario through both proves every method reaches its SQL function and maps its result.
"""

from __future__ import annotations

from datetime import datetime

import pytest

from client_calls import Invoke, run_with_async_client, run_with_client
from pgrun.client import Continuation, Failure, LogLine
from pgrun.errors import LeaseLostError, NotFoundError


async def scenario(call: Invoke) -> None:
    definition = await call("upsert_job_definition", "t.work", max_attempts=2)
    assert (definition.job_type, definition.max_attempts) == ("t.work", 2)
    assert (await call("set_job_runtime_config", "t.work", paused=True)).paused is True
    assert (await call("set_job_runtime_config", "t.work", paused=False)).paused is False

    first = await call("enqueue_job", "t.work", {"n": 1})
    assert first.created and first.status == "queued"
    batch = await call("enqueue_jobs", [{"job_type": "t.work", "payload": {"n": n}} for n in (2, 3)])
    assert [item.ordinality for item in batch] == [1, 2]
    depth = {(d.queue, d.job_type): d for d in await call("queue_depth")}
    assert (depth["default", "t.work"].ready, depth["default", "t.work"].running) == (3, 0)

    claimed = await call("claim_jobs", "w1", max_jobs=3, lease_seconds=60)
    assert [job.payload["n"] for job in claimed] == [1, 2, 3]
    one, two, three = claimed
    beats = await call("heartbeat_jobs", "w1", [(j.job_id, j.lease_token) for j in claimed], lease_seconds=60)
    assert all(b.renewed and not b.cancel_requested for b in beats)
    assert await call("report_progress", one.job_id, one.lease_token, {"done": 1}) is False
    assert isinstance(
        await call("append_job_log", one.job_id, one.lease_token, "hello", fields={"k": 1}), int
    )
    logged = await call(
        "append_job_logs",
        [
            LogLine(one.job_id, one.lease_token, "first"),
            LogLine(two.job_id, two.lease_token, "second", level="warning", fields={"k": 2}),
            LogLine(one.job_id, one.lease_token, "loud", level="shout"),
        ],
    )
    assert [(o.job_id, o.outcome) for o in logged] == [
        (one.job_id, "logged"),
        (two.job_id, "logged"),
        (one.job_id, "invalid"),
    ]
    assert all(isinstance(o.log_id, int) for o in logged[:2]) and logged[2].log_id is None
    no_wait = await call("append_job_logs", [LogLine(one.job_id, one.lease_token, "third")], durable=False)
    assert [o.outcome for o in no_wait] == ["logged"]

    assert await call("complete_job", one.job_id, one.lease_token, {"ok": True}) == "succeeded"
    with pytest.raises(LeaseLostError):
        await call("complete_job", one.job_id, one.lease_token)
    failed = await call("fail_job", two.job_id, two.lease_token, error_code="boom", retry_delay=0)
    assert failed.outcome == "retry_scheduled"
    continued = await call("continue_job", three.job_id, three.lease_token, "next", state={"s": 1})
    assert continued.outcome == "continued"

    # capped, a claim with max_held 1 takes one job of the type; one without it, the rest
    assert (await call("set_job_runtime_config", "t.work", max_concurrency=10)).max_concurrency == 10
    held = await call("claim_jobs", "w2", max_jobs=5, lease_seconds=60, max_held=1)
    assert len(held) == 1
    held += await call("claim_jobs", "w2", max_jobs=5, lease_seconds=60)
    await call("set_job_runtime_config", "t.work", clear_max_concurrency=True)
    again = {job.job_id: job for job in held}
    assert set(again) == {two.job_id, three.job_id}
    assert again[three.job_id].step == "next" and again[three.job_id].state == {"s": 1}
    token = again[three.job_id].lease_token
    # succeeded_rows=False: only what did not succeed comes back (one was completed above)
    done = await call(
        "complete_jobs",
        [(three.job_id, token, {"r": 3}), (one.job_id, one.lease_token, None)],
        succeeded_rows=False,
    )
    assert [(o.job_id, o.outcome, o.lost_reason) for o in done] == [(one.job_id, "lease_lost", "not_running")]
    assert (await call("get_job", three.job_id))["status"] == "succeeded"
    # by default every job has its row, in order
    done = await call("complete_jobs", [(one.job_id, one.lease_token, None), (three.job_id, token, None)])
    assert [(o.job_id, o.outcome) for o in done] == [(one.job_id, "lease_lost"), (three.job_id, "lease_lost")]
    stepped = await call(
        "continue_jobs",
        [
            Continuation(two.job_id, again[two.job_id].lease_token, "later", {"s": 2}, max_attempts=2),
            Continuation(three.job_id, token, "never"),
        ],
    )
    assert [(o.job_id, o.outcome, o.lost_reason) for o in stepped] == [
        (two.job_id, "continued", None),
        (three.job_id, "lease_lost", "not_running"),
    ]
    assert stepped[0].run_at is not None and stepped[1].run_at is None
    second = await call("get_job", two.job_id)
    assert (second["status"], second["step"], second["state"]) == ("queued", "later", {"s": 2})
    (held_two,) = await call("claim_jobs", "w3", max_jobs=1, lease_seconds=60)
    dead = await call("fail_jobs", [Failure(two.job_id, held_two.lease_token, retryable=False)])
    assert [o.outcome for o in dead] == ["dead"]

    assert isinstance(await call("requeue_job", two.job_id), datetime)
    assert await call("cancel_job", two.job_id, reason="no longer needed") == "cancelled"
    assert await call("reap_expired_leases") == []
    assert (await call("get_job", first.job_id))["status"] == "succeeded"
    with pytest.raises(NotFoundError):
        await call("get_job", first.job_id, organization_id="00000000-0000-0000-0000-00000000000a")
    listed = await call("list_jobs", job_type="t.work")
    assert sorted(j.status for j in listed) == ["cancelled", "succeeded", "succeeded"]
    counts = {c.status: c.jobs for c in await call("count_jobs", job_type="t.work")}
    assert counts == {"queued": 0, "running": 0, "succeeded": 2, "dead": 0, "cancelled": 1}
    metrics = {m.job_type: m for m in await call("job_metrics")}
    assert metrics["t.work"].succeeded == 2
    assert await call("purge_finished_jobs", 0) == 3
    assert await call("next_run_at") is None  # nothing delayed
    later = await call("enqueue_job", "t.later", {}, delay=60)
    assert await call("next_run_at") == later.run_at
    assert await call("next_run_at", job_types=["t.later"], queues=["default"]) == later.run_at
    assert await call("next_run_at", queues=["elsewhere"]) is None

    run = await call("enqueue_workflow", {"steps": [{"key": "gate", "kind": "external"}]})
    assert run.created and run.status == "running"
    appended = await call(
        "append_workflow_steps",
        run.run_id,
        [{"key": "after", "job_type": "t.after", "depends_on": ["gate"]}],
        mutation_key="m1",
    )
    assert appended.step_keys == ["after"]
    gate = await call("complete_external_step", run.run_id, "gate", output={"ok": 1})
    assert (gate.step_status, gate.run_status) == ("succeeded", "running")
    document = await call("get_workflow_run", run.run_id)
    assert document["status"] == "running"
    assert [r.id for r in await call("list_workflow_runs")] == [run.run_id]
    assert (await call("cancel_workflow_run", run.run_id, reason="test")).status == "cancelled"


def test_every_client_method(db: str) -> None:
    run_with_client(db, scenario)


def test_every_async_client_method(db: str) -> None:
    run_with_async_client(db, scenario)
