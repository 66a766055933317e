"""Typed results of the pgrun SQL functions: one dataclass per row shape.

Field names and order are the functions' output columns (docs/sql-api.md), so rows are
built with psycopg's ``class_row``. JSON columns arrive as Python values (``Json``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any
from uuid import UUID

#: A JSON value as psycopg decodes jsonb.
Json = Any
#: A JSON object (get_job, get_workflow_run).
JsonObject = dict[str, Any]
#: A duration: seconds, or a timedelta.
Seconds = float | timedelta


class JsonText(str):
    """A JSON value already written as JSON text, sent as it is where the client takes a JSON
    value (a result, log fields, a Continue's state) instead of being dumped again. The worker
    checks every result, state and log line's fields by dumping them (what jsonb refuses fails
    the job, or drops the line) and passes that text on."""

    __slots__ = ()


@dataclass(frozen=True)
class UndecodableJson:
    """A stored JSON value Python cannot decode (nested deeper than its json module goes):
    the client returns this in its place instead of failing the whole call. pgrun's functions
    refuse values nested that deep (docs/errors.md, "Limits"), so only rows written before that
    rule, or around the functions, hold one; the worker fails a job whose payload, state or
    progress arrives as one with ``payload_invalid``, not retried."""

    reason: str
    size: int


@dataclass(frozen=True)
class EnqueuedJob:
    job_id: UUID
    created: bool
    status: str
    run_at: datetime


@dataclass(frozen=True)
class EnqueuedBatchItem:
    ordinality: int
    job_id: UUID
    created: bool


@dataclass(frozen=True)
class ClaimedJob:
    """What claim_jobs hands a worker: the handler's input and the lease to write under."""

    job_id: UUID
    job_type: str
    queue: str
    priority: int
    payload: JsonObject
    attempt: int
    max_attempts: int
    lease_token: UUID
    lease_expires_at: datetime
    timeout_seconds: int | None
    step: str | None
    state: Json
    progress: Json
    organization_id: UUID | None
    workflow_run_id: UUID | None
    workflow_step_key: str | None
    #: When the job became due (its run_at) and when this claim took it, both on the
    #: database's clock: ``started_at - run_at`` is how long it waited while ready.
    run_at: datetime
    started_at: datetime


@dataclass(frozen=True)
class Heartbeat:
    job_id: UUID
    renewed: bool
    lease_expires_at: datetime | None
    cancel_requested: bool


@dataclass(frozen=True)
class BatchOutcome:
    """One row of complete_jobs / fail_jobs. ``outcome`` lease_lost carries ``lost_reason``."""

    job_id: UUID
    outcome: str
    run_at: datetime | None
    lost_reason: str | None


@dataclass(frozen=True)
class LogOutcome:
    """One row of append_job_logs, per line in order: ``outcome`` logged (``log_id`` set),
    counted (the attempt holds its 1000 lines), lease_lost or invalid (a level or fields
    append_job_log refuses)."""

    job_id: UUID
    log_id: int | None
    outcome: str


@dataclass(frozen=True)
class Outcome:
    """fail_job / continue_job: what became of the job, and when it runs next."""

    outcome: str
    run_at: datetime | None


@dataclass(frozen=True)
class ReapedJob:
    job_id: UUID
    outcome: str
    run_at: datetime | None


@dataclass(frozen=True)
class JobSummary:
    """One row of list_jobs (no payload/state/progress/result: get_job has those).

    ``job_id`` is the job's id, the name every other result and argument uses; ``id`` holds
    the same value under the row's older name, kept for existing code."""

    id: UUID
    job_type: str
    queue: str
    priority: int
    status: str
    run_at: datetime
    attempt: int
    total_attempts: int
    max_attempts: int
    timeout_seconds: int | None
    worker_id: str | None
    lease_expires_at: datetime | None
    heartbeat_at: datetime | None
    cancel_requested_at: datetime | None
    cancel_reason: str | None
    step: str | None
    error_code: str | None
    error_message: str | None
    organization_id: UUID | None
    idempotency_key: str | None
    workflow_run_id: UUID | None
    workflow_step_key: str | None
    schedule_id: UUID | None
    created_at: datetime
    updated_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    job_id: UUID


@dataclass(frozen=True)
class JobDefinition:
    job_type: str
    queue: str
    priority: int
    max_attempts: int
    timeout_seconds: int | None
    backoff_base_seconds: float
    backoff_max_seconds: float
    backoff_jitter: float
    created_at: datetime
    updated_at: datetime
    # the largest result or continue state, in bytes of jsonb; None = the built-in 1 MiB
    max_result_bytes: int | None


@dataclass(frozen=True)
class RuntimeConfig:
    job_type: str
    paused: bool
    max_concurrency: int | None
    updated_at: datetime


@dataclass(frozen=True)
class QueueDepth:
    queue: str
    job_type: str
    ready: int
    delayed: int
    running: int
    oldest_ready_age: timedelta | None
    paused: bool | None
    max_concurrency: int | None


@dataclass(frozen=True)
class JobCount:
    """One row of count_jobs: how many of the jobs the caller may see are in ``status``."""

    status: str
    jobs: int


@dataclass(frozen=True)
class JobMetrics:
    job_type: str
    queue: str
    queued: int
    running: int
    succeeded: int
    dead: int
    cancelled: int
    window_start: datetime
    succeeded_per_minute: Decimal | None
    latency_p50_seconds: float | None
    latency_p95_seconds: float | None
    duration_p50_seconds: float | None
    duration_p95_seconds: float | None
    crashed: int
    lease_expired: int


@dataclass(frozen=True)
class EnqueuedRun:
    run_id: UUID
    created: bool
    status: str


@dataclass(frozen=True)
class ExternalStepResult:
    step_status: str
    run_status: str
    changed: bool


@dataclass(frozen=True)
class AppendResult:
    mutation_id: UUID
    created: bool
    step_keys: list[str]
    run_status: str


@dataclass(frozen=True)
class CancelRunResult:
    status: str
    changed: bool
    cancelled_steps: int
    cancelled_jobs: int
    cancel_requested_jobs: int


@dataclass(frozen=True)
class WorkflowRunSummary:
    """One row of list_workflow_runs (get_workflow_run has the steps).

    ``run_id`` is the run's id, the name every other result and argument uses; ``id`` holds
    the same value under the row's older name, kept for existing code."""

    id: UUID
    name: str | None
    status: str
    organization_id: UUID | None
    idempotency_key: str | None
    metadata: Json
    open_step_count: int
    cancel_reason: str | None
    created_at: datetime
    updated_at: datetime
    finished_at: datetime | None
    run_id: UUID


# -- schedules ----------------------------------------------------------------------------


@dataclass(frozen=True)
class UpsertedSchedule:
    """upsert_schedule: the schedule's id, whether this call made it or changed it, and when
    it is due (a new or changed schedule: now, so the next scheduler pass plans it)."""

    schedule_id: UUID
    created: bool
    changed: bool
    next_run_at: datetime


@dataclass(frozen=True)
class ClaimedSchedule:
    """One row of claim_due_schedules: what a scheduler needs to plan the schedule without
    reading its own clock (``db_now`` is the database's), and the claim to fire it under."""

    schedule_id: UUID
    claim_token: UUID
    name: str
    organization_id: UUID | None
    cron: str
    timezone: str
    catch_up: str
    backfill_limit: int
    misfire_grace_seconds: int
    planned_until: datetime
    last_plan_at: datetime | None
    next_run_at: datetime
    db_now: datetime
    #: The ticks each plan time makes (one per scope; 1 unscoped).
    scope_count: int


@dataclass(frozen=True)
class FiredTick:
    """One row of fire_schedule / run_schedule_now: the job of one (scope, plan time);
    ``created`` is false when an earlier call (of any scheduler) fired it."""

    plan_time: datetime
    scope: str
    job_id: UUID
    created: bool


@dataclass(frozen=True)
class PausedSchedule:
    """pause_schedule; ``changed`` is false when it was already paused."""

    schedule_id: UUID
    paused_at: datetime
    changed: bool


@dataclass(frozen=True)
class ResumedSchedule:
    """resume_schedule; ``changed`` is false when it was not paused."""

    schedule_id: UUID
    next_run_at: datetime
    changed: bool


@dataclass(frozen=True)
class DeletedSchedule:
    """delete_schedule: the schedule's id and how many of its ticks went with it (its jobs stay)."""

    schedule_id: UUID
    ticks_deleted: int


@dataclass(frozen=True)
class ScheduleSummary:
    """One row of list_schedules: the declaration and its planning state.

    ``paused_reason`` is set when the scheduler paused a schedule it could not plan;
    ``claimed_by`` names the scheduler holding a claim on it, if any."""

    schedule_id: UUID
    name: str
    organization_id: UUID | None
    cron: str
    timezone: str
    job_type: str
    queue: str | None
    priority: int | None
    catch_up: str
    backfill_limit: int
    scope_kind: str
    #: The scopes (empty for scope_kind none).
    scopes: list[str]
    forbid_stale_reentry: bool
    enabled: bool
    paused_at: datetime | None
    paused_reason: str | None
    next_run_at: datetime
    last_plan_at: datetime | None
    last_fired_at: datetime | None
    planned_until: datetime
    claimed_by: str | None
    created_at: datetime
    updated_at: datetime
