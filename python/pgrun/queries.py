"""Every SQL statement the Python driver sends, in one place.

Each statement calls one public ``pgrun`` function (docs/sql-api.md) with named arguments
and explicit casts, so a reader can match a line here to the function's signature. Nothing
here decides anything about a job or a run: the functions do. Parameters are psycopg's
named placeholders; the client fills every one of them (``None`` means SQL NULL, which the
functions treat as "use the default").
"""

from __future__ import annotations

from typing import Final

# -- jobs: enqueue ---------------------------------------------------------------------

ENQUEUE_JOB: Final = """
SELECT * FROM pgrun.enqueue_job(
    job_type => %(job_type)s::text,
    payload => %(payload)s::jsonb,
    queue => %(queue)s::text,
    priority => %(priority)s::integer,
    run_at => %(run_at)s::timestamptz,
    delay => %(delay)s::interval,
    max_attempts => %(max_attempts)s::integer,
    timeout_seconds => %(timeout_seconds)s::integer,
    idempotency_key => %(idempotency_key)s::text,
    organization_id => %(organization_id)s::uuid)
"""

ENQUEUE_JOBS: Final = "SELECT * FROM pgrun.enqueue_jobs(jobs => %(jobs)s::jsonb)"

# -- jobs: the worker's lease machine ----------------------------------------------------

_CLAIM_JOBS_ARGUMENTS: Final = """
    worker_id => %(worker_id)s::text,
    lease_seconds => %(lease_seconds)s::integer,
    max_jobs => %(max_jobs)s::integer,
    queues => %(queues)s::text[],
    job_types => %(job_types)s::text[]"""

CLAIM_JOBS: Final = f"SELECT * FROM pgrun.claim_jobs({_CLAIM_JOBS_ARGUMENTS})"

#: With max_held, claim_jobs' newest argument: a claim without it leaves it out, so that it
#: also runs on a schema migrated before max_held existed.
CLAIM_JOBS_MAX_HELD: Final = (
    f"SELECT * FROM pgrun.claim_jobs({_CLAIM_JOBS_ARGUMENTS},\n    max_held => %(max_held)s::integer)"
)

NEXT_RUN_AT: Final = """
SELECT pgrun.next_run_at(queues => %(queues)s::text[], job_types => %(job_types)s::text[])
"""

HEARTBEAT_JOBS: Final = """
SELECT * FROM pgrun.heartbeat_jobs(
    worker_id => %(worker_id)s::text,
    lease_seconds => %(lease_seconds)s::integer,
    job_ids => %(job_ids)s::uuid[],
    lease_tokens => %(lease_tokens)s::uuid[])
"""

COMPLETE_JOB: Final = """
SELECT pgrun.complete_job(
    job_id => %(job_id)s::uuid,
    lease_token => %(lease_token)s::uuid,
    result => %(result)s::jsonb)
"""


def _jsonb_elements(name: str) -> str:
    """A batch's JSON values sent as one JSON array (element i = item i's value; a jsonb[]
    parameter would be dumped and escaped element by element), unpacked into the jsonb[] the
    function takes. A JSON null element (Python's None) is SQL NULL: no value; a batch whose
    values are all None sends NULL for the array, and the call takes none."""
    return (
        f"CASE WHEN %({name})s::jsonb IS NOT NULL THEN ARRAY(\n"
        f"        SELECT nullif(e.v, 'null') FROM jsonb_array_elements(%({name})s::jsonb)"
        " WITH ORDINALITY AS e (v, n)\n"
        "        ORDER BY e.n) END"
    )


# results travel as one JSON array (_jsonb_elements): None is no result, SQL NULL, as
# complete_job stores it.
# succeeded_rows false: only the jobs that did not succeed come back (a worker's batch of
# no-op jobs otherwise reads back a row per job that says what it already knows).
COMPLETE_JOBS: Final = f"""
SELECT c.job_id, c.outcome, NULL::timestamptz AS run_at, c.lost_reason FROM pgrun.complete_jobs(
    job_ids => %(job_ids)s::uuid[],
    lease_tokens => %(lease_tokens)s::uuid[],
    results => {_jsonb_elements("results")}) AS c
WHERE %(succeeded_rows)s::boolean OR c.outcome <> 'succeeded'
"""

RELEASE_JOBS: Final = """
SELECT job_id, outcome, NULL::timestamptz AS run_at, lost_reason FROM pgrun.release_jobs(
    job_ids => %(job_ids)s::uuid[],
    lease_tokens => %(lease_tokens)s::uuid[])
"""

FAIL_JOB: Final = """
SELECT * FROM pgrun.fail_job(
    job_id => %(job_id)s::uuid,
    lease_token => %(lease_token)s::uuid,
    error_code => %(error_code)s::text,
    message => %(message)s::text,
    retryable => %(retryable)s::boolean,
    retry_delay => %(retry_delay)s::interval)
"""

FAIL_JOBS: Final = """
SELECT * FROM pgrun.fail_jobs(
    job_ids => %(job_ids)s::uuid[],
    lease_tokens => %(lease_tokens)s::uuid[],
    error_codes => %(error_codes)s::text[],
    messages => %(messages)s::text[],
    retryable => %(retryable)s::boolean[],
    retry_delays => %(retry_delays)s::interval[])
"""

CONTINUE_JOB: Final = """
SELECT * FROM pgrun.continue_job(
    job_id => %(job_id)s::uuid,
    lease_token => %(lease_token)s::uuid,
    next_step => %(next_step)s::text,
    state => %(state)s::jsonb,
    delay => %(delay)s::interval,
    max_attempts => %(max_attempts)s::integer,
    retry_delay => %(retry_delay)s::interval)
"""

# The states go as one JSON array (_jsonb_elements; None is no state: keep the job's).
CONTINUE_JOBS: Final = f"""
SELECT c.job_id, c.outcome, c.run_at, c.lost_reason FROM pgrun.continue_jobs(
    job_ids => %(job_ids)s::uuid[],
    lease_tokens => %(lease_tokens)s::uuid[],
    next_steps => %(next_steps)s::text[],
    states => {_jsonb_elements("states")},
    delays => %(delays)s::interval[],
    max_attempts => %(max_attempts)s::integer[],
    retry_delays => %(retry_delays)s::interval[]) AS c
"""

REPORT_PROGRESS: Final = """
SELECT pgrun.report_progress(
    job_id => %(job_id)s::uuid,
    lease_token => %(lease_token)s::uuid,
    progress => %(progress)s::jsonb)
"""

APPEND_JOB_LOG: Final = """
SELECT pgrun.append_job_log(
    job_id => %(job_id)s::uuid,
    lease_token => %(lease_token)s::uuid,
    message => %(message)s::text,
    level => %(level)s::text,
    fields => %(fields)s::jsonb)
"""

_APPEND_JOB_LOGS_CALL: Final = f"""pgrun.append_job_logs(
    job_ids => %(job_ids)s::uuid[],
    lease_tokens => %(lease_tokens)s::uuid[],
    messages => %(messages)s::text[],
    levels => %(levels)s::text[],
    fields => {_jsonb_elements("fields")})"""

# The lines' fields go as one JSON array (_jsonb_elements: a jsonb[] parameter cost ~3 us a
# line in the client, against ~0.1); with logged_rows false only
# the lines not logged come back (a worker counts the rest).
_APPEND_JOB_LOGS_ROWS: Final = "WHERE %(logged_rows)s::boolean OR l.outcome <> 'logged'"

APPEND_JOB_LOGS: Final = (
    f"SELECT l.job_id, l.log_id, l.outcome FROM {_APPEND_JOB_LOGS_CALL} AS l\n{_APPEND_JOB_LOGS_ROWS}"
)

# The same, its transaction committed without waiting for the WAL flush: set_config local to
# the transaction (nothing outlives it, whatever pooler is between). The lines are durable once
# a later durable commit of the server is (the WAL is flushed in order), such as the outcomes
# the worker writes right after them.
APPEND_JOB_LOGS_NO_WAIT: Final = (
    f"SELECT l.job_id, l.log_id, l.outcome FROM {_APPEND_JOB_LOGS_CALL} AS l\n"
    "CROSS JOIN (SELECT pg_catalog.set_config('synchronous_commit', 'off', true)) AS no_wait\n"
    f"{_APPEND_JOB_LOGS_ROWS}"
)

# -- jobs: operators ------------------------------------------------------------------

CANCEL_JOB: Final = """
SELECT pgrun.cancel_job(
    job_id => %(job_id)s::uuid,
    reason => %(reason)s::text,
    organization_id => %(organization_id)s::uuid)
"""

REQUEUE_JOB: Final = """
SELECT pgrun.requeue_job(
    job_id => %(job_id)s::uuid,
    organization_id => %(organization_id)s::uuid,
    run_at => %(run_at)s::timestamptz)
"""

REAP_EXPIRED_LEASES: Final = """
SELECT * FROM pgrun.reap_expired_leases(
    max_jobs => %(max_jobs)s::integer,
    retry_delay => %(retry_delay)s::interval)
"""

PURGE_FINISHED_JOBS: Final = """
SELECT pgrun.purge_finished_jobs(
    older_than => %(older_than)s::interval,
    max_jobs => %(max_jobs)s::integer,
    organization_id => %(organization_id)s::uuid)
"""

GET_JOB: Final = """
SELECT pgrun.get_job(job_id => %(job_id)s::uuid, organization_id => %(organization_id)s::uuid)
"""

LIST_JOBS: Final = """
SELECT * FROM pgrun.list_jobs(
    status => %(status)s::text,
    job_type => %(job_type)s::text,
    queue => %(queue)s::text,
    organization_id => %(organization_id)s::uuid,
    workflow_run_id => %(workflow_run_id)s::uuid,
    after_id => %(after_id)s::uuid,
    max_rows => %(max_rows)s::integer)
"""

UPSERT_JOB_DEFINITION: Final = """
SELECT * FROM pgrun.upsert_job_definition(
    job_type => %(job_type)s::text,
    queue => %(queue)s::text,
    priority => %(priority)s::integer,
    max_attempts => %(max_attempts)s::integer,
    timeout_seconds => %(timeout_seconds)s::integer,
    backoff_base_seconds => %(backoff_base_seconds)s::double precision,
    backoff_max_seconds => %(backoff_max_seconds)s::double precision,
    backoff_jitter => %(backoff_jitter)s::double precision,
    max_result_bytes => %(max_result_bytes)s::integer)
"""

SET_JOB_RUNTIME_CONFIG: Final = """
SELECT * FROM pgrun.set_job_runtime_config(
    job_type => %(job_type)s::text,
    paused => %(paused)s::boolean,
    max_concurrency => %(max_concurrency)s::integer,
    clear_max_concurrency => %(clear_max_concurrency)s::boolean)
"""

QUEUE_DEPTH: Final = "SELECT * FROM pgrun.queue_depth(organization_id => %(organization_id)s::uuid)"

JOB_METRICS: Final = "SELECT * FROM pgrun.job_metrics(organization_id => %(organization_id)s::uuid)"

COUNT_JOBS: Final = """
SELECT * FROM pgrun.count_jobs(
    status => %(status)s::text,
    job_type => %(job_type)s::text,
    queue => %(queue)s::text,
    organization_id => %(organization_id)s::uuid,
    workflow_run_id => %(workflow_run_id)s::uuid)
"""

# -- workflows ------------------------------------------------------------------------

ENQUEUE_WORKFLOW: Final = "SELECT * FROM pgrun.enqueue_workflow(spec => %(spec)s::jsonb)"

COMPLETE_EXTERNAL_STEP: Final = """
SELECT * FROM pgrun.complete_external_step(
    run_id => %(run_id)s::uuid,
    step_key => %(step_key)s::text,
    succeeded => %(succeeded)s::boolean,
    output => %(output)s::jsonb,
    organization_id => %(organization_id)s::uuid)
"""

APPEND_WORKFLOW_STEPS: Final = """
SELECT * FROM pgrun.append_workflow_steps(
    run_id => %(run_id)s::uuid,
    mutation_key => %(mutation_key)s::text,
    steps => %(steps)s::jsonb,
    organization_id => %(organization_id)s::uuid)
"""

CANCEL_WORKFLOW_RUN: Final = """
SELECT * FROM pgrun.cancel_workflow_run(
    run_id => %(run_id)s::uuid,
    reason => %(reason)s::text,
    organization_id => %(organization_id)s::uuid)
"""

GET_WORKFLOW_RUN: Final = """
SELECT pgrun.get_workflow_run(run_id => %(run_id)s::uuid, organization_id => %(organization_id)s::uuid)
"""

LIST_WORKFLOW_RUNS: Final = """
SELECT * FROM pgrun.list_workflow_runs(
    status => %(status)s::text,
    organization_id => %(organization_id)s::uuid,
    after_id => %(after_id)s::uuid,
    max_rows => %(max_rows)s::integer)
"""

# -- the worker's wake-up channel -------------------------------------------------------

NOTIFY_CHANNEL: Final = "pgrun_jobs"
LISTEN: Final = "LISTEN pgrun_jobs"

# -- schedules (the Client's schedule methods; the scheduler loop calls them) ---------------

UPSERT_SCHEDULE: Final = """
SELECT * FROM pgrun.upsert_schedule(
    name => %(name)s::text,
    cron => %(cron)s::text,
    job_type => %(job_type)s::text,
    payload => %(payload)s::jsonb,
    timezone => %(timezone)s::text,
    queue => %(queue)s::text,
    priority => %(priority)s::integer,
    catch_up => %(catch_up)s::text,
    backfill_limit => %(backfill_limit)s::integer,
    enabled => %(enabled)s::boolean,
    organization_id => %(organization_id)s::uuid,
    max_attempts => %(max_attempts)s::integer,
    timeout_seconds => %(timeout_seconds)s::integer,
    misfire_grace_seconds => %(misfire_grace_seconds)s::integer,
    scope_kind => %(scope_kind)s::text,
    scopes => %(scopes)s::text[],
    forbid_stale_reentry => %(forbid_stale_reentry)s::boolean)
"""

CLAIM_DUE_SCHEDULES: Final = """
SELECT * FROM pgrun.claim_due_schedules(
    scheduler_id => %(scheduler_id)s::text,
    max_schedules => %(max_schedules)s::integer,
    lease_seconds => %(lease_seconds)s::integer)
"""

FIRE_SCHEDULE: Final = """
SELECT * FROM pgrun.fire_schedule(
    schedule_id => %(schedule_id)s::uuid,
    plan_times => %(plan_times)s::timestamptz[],
    next_run_at => %(next_run_at)s::timestamptz,
    claim_token => %(claim_token)s::uuid,
    planned_until => %(planned_until)s::timestamptz,
    scheduler_id => %(scheduler_id)s::text,
    keep_claim => %(keep_claim)s::boolean)
"""

PAUSE_UNPLANNABLE_SCHEDULE: Final = """
SELECT pgrun.pause_unplannable_schedule(
    schedule_id => %(schedule_id)s::uuid,
    claim_token => %(claim_token)s::uuid,
    reason => %(reason)s::text) AS paused_at
"""

LIST_SCHEDULES: Final = """
SELECT * FROM pgrun.list_schedules(
    organization_id => %(organization_id)s::uuid,
    after_id => %(after_id)s::uuid,
    max_rows => %(max_rows)s::integer)
"""

PAUSE_SCHEDULE: Final = """
SELECT * FROM pgrun.pause_schedule(name => %(name)s::text, organization_id => %(organization_id)s::uuid)
"""

RESUME_SCHEDULE: Final = """
SELECT * FROM pgrun.resume_schedule(name => %(name)s::text, organization_id => %(organization_id)s::uuid)
"""

DELETE_SCHEDULE: Final = """
SELECT * FROM pgrun.delete_schedule(name => %(name)s::text, organization_id => %(organization_id)s::uuid)
"""

RUN_SCHEDULE_NOW: Final = """
SELECT * FROM pgrun.run_schedule_now(name => %(name)s::text, organization_id => %(organization_id)s::uuid)
"""
