"""Enqueue inside a transaction the caller owns: the job (or run) commits or rolls back with
the caller's own writes, on the caller's psycopg connection (sync or async).

    with psycopg.connect(DATABASE_URL) as conn:          # one transaction
        conn.execute("INSERT INTO orders (id, total) VALUES (%s, %s)", (order_id, total))
        tx.enqueue_job(conn, "order.confirm", {"order_id": order_id})
    # committed together; a rollback (or an exception in the block) leaves neither

The job is visible to workers, and their NOTIFY wake-up is sent, only when the caller
commits. The functions never commit, roll back or change the connection's settings. A refusal
raises the ``pgrun.errors`` exception as the ``Client`` does, and, as any error inside a
transaction, leaves that transaction aborted: roll back (or use a savepoint,
``conn.transaction()``) before going on. Keyed enqueue needs READ COMMITTED, the default.
The options are ``Client.enqueue_job``'s (queue, priority, run_at, delay, max_attempts,
timeout_seconds, idempotency_key, organization_id).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg

from pgrun.client import (
    Call,
    WorkflowLike,
    _enqueue_job,
    _enqueue_jobs,
    _enqueue_workflow,
    _run_on,
    _run_on_async,
)
from pgrun.results import EnqueuedBatchItem, EnqueuedJob, EnqueuedRun, JsonObject

_NO_OPTIONS: dict[str, Any] = dict(
    queue=None,
    priority=None,
    run_at=None,
    delay=None,
    max_attempts=None,
    timeout_seconds=None,
    idempotency_key=None,
    organization_id=None,
)


def _job(job_type: str, payload: JsonObject | None, options: dict[str, Any]) -> Call[EnqueuedJob]:
    unknown = set(options) - set(_NO_OPTIONS)
    if unknown:
        raise TypeError(f"enqueue_job() got unexpected option(s): {', '.join(sorted(unknown))}")
    return _enqueue_job(job_type, payload, **{**_NO_OPTIONS, **options})


def enqueue_job(
    conn: psycopg.Connection[Any], job_type: str, payload: JsonObject | None = None, **options: Any
) -> EnqueuedJob:
    """pgrun.enqueue_job in the caller's transaction on ``conn``."""
    return _run_on(conn, _job(job_type, payload, options))


def enqueue_jobs(conn: psycopg.Connection[Any], jobs: Sequence[JsonObject]) -> list[EnqueuedBatchItem]:
    """pgrun.enqueue_jobs in the caller's transaction on ``conn``."""
    return _run_on(conn, _enqueue_jobs(jobs))


def enqueue_workflow(conn: psycopg.Connection[Any], spec: JsonObject | WorkflowLike) -> EnqueuedRun:
    """pgrun.enqueue_workflow in the caller's transaction on ``conn``."""
    return _run_on(conn, _enqueue_workflow(spec))


async def enqueue_job_async(
    conn: psycopg.AsyncConnection[Any], job_type: str, payload: JsonObject | None = None, **options: Any
) -> EnqueuedJob:
    """enqueue_job on an ``AsyncConnection``."""
    return await _run_on_async(conn, _job(job_type, payload, options))


async def enqueue_jobs_async(
    conn: psycopg.AsyncConnection[Any], jobs: Sequence[JsonObject]
) -> list[EnqueuedBatchItem]:
    """enqueue_jobs on an ``AsyncConnection``."""
    return await _run_on_async(conn, _enqueue_jobs(jobs))


async def enqueue_workflow_async(
    conn: psycopg.AsyncConnection[Any], spec: JsonObject | WorkflowLike
) -> EnqueuedRun:
    """enqueue_workflow on an ``AsyncConnection``."""
    return await _run_on_async(conn, _enqueue_workflow(spec))
