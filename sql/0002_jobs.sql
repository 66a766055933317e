-- 0002 jobs: the queue, its per-type settings, and its append-only history.
--
-- Hot path: claiming reads only the partial index over queued rows, the reaper only
-- the partial index over running rows, so finished history costs the hot path
-- nothing until purge_finished_jobs removes it. The history tables (attempts, events,
-- logs) carry no foreign keys: a per-row FK check on every append is the largest
-- avoidable cost on the claim/complete path, and purge_finished_jobs deletes a job's
-- history together with the job.

-- Defaults per job type; enqueue_job copies them onto each job it creates.
CREATE TABLE pgrun.job_definitions (
    job_type text PRIMARY KEY,
    queue text NOT NULL DEFAULT 'default',
    priority integer NOT NULL DEFAULT 100,
    max_attempts integer NOT NULL DEFAULT 20,
    timeout_seconds integer,
    backoff_base_seconds double precision NOT NULL DEFAULT 2,
    backoff_max_seconds double precision NOT NULL DEFAULT 3600,
    backoff_jitter double precision NOT NULL DEFAULT 0.2,
    created_at timestamptz NOT NULL DEFAULT pgrun.now(),
    updated_at timestamptz NOT NULL DEFAULT pgrun.now(),
    CONSTRAINT job_definitions_job_type_check CHECK (
        job_type ~ '^[a-z][a-z0-9_]*([.:-][a-z0-9_]+)*$' AND length(job_type) <= 128
    ),
    CONSTRAINT job_definitions_queue_check CHECK (
        queue ~ '^[a-z][a-z0-9_.:-]*$' AND length(queue) <= 64
    ),
    CONSTRAINT job_definitions_priority_check CHECK (priority BETWEEN 0 AND 32767),
    CONSTRAINT job_definitions_max_attempts_check CHECK (max_attempts BETWEEN 1 AND 1000),
    CONSTRAINT job_definitions_timeout_check CHECK (timeout_seconds > 0),
    CONSTRAINT job_definitions_backoff_check CHECK (
        backoff_base_seconds >= 0
        AND backoff_max_seconds >= backoff_base_seconds
        AND backoff_jitter >= 0 AND backoff_jitter < 1
    )
);

COMMENT ON TABLE pgrun.job_definitions IS
'Per job type defaults (queue, priority, attempts, timeout, backoff); upsert_job_definition writes them.';

-- Operator switches per job type, separate from definitions so deploys never undo them.
CREATE TABLE pgrun.job_runtime_configs (
    job_type text PRIMARY KEY,
    paused boolean NOT NULL DEFAULT FALSE,
    max_concurrency integer,
    updated_at timestamptz NOT NULL DEFAULT pgrun.now(),
    CONSTRAINT job_runtime_configs_max_concurrency_check CHECK (max_concurrency > 0)
);

COMMENT ON TABLE pgrun.job_runtime_configs IS
'Operator overrides per job type: paused types are not claimed; max_concurrency caps running jobs.';

CREATE TABLE pgrun.jobs (
    id uuid PRIMARY KEY DEFAULT pgrun.uuidv7(),
    job_type text NOT NULL,
    queue text NOT NULL,
    priority integer NOT NULL,
    status text NOT NULL DEFAULT 'queued',
    payload jsonb NOT NULL DEFAULT '{}',
    run_at timestamptz NOT NULL,
    -- attempts used in the current step's budget (reset by continue_job), and in all
    attempt integer NOT NULL DEFAULT 0,
    total_attempts integer NOT NULL DEFAULT 0,
    max_attempts integer NOT NULL,
    timeout_seconds integer,
    backoff_base_seconds double precision NOT NULL,
    backoff_max_seconds double precision NOT NULL,
    backoff_jitter double precision NOT NULL,
    -- the lease: set by claim_jobs, checked by every lifecycle write
    worker_id text,
    lease_token uuid,
    lease_expires_at timestamptz,
    heartbeat_at timestamptz,
    cancel_requested_at timestamptz,
    cancel_reason text,
    -- resumable steps (continue_job) and what the handler reports
    step text,
    state jsonb,
    progress jsonb,
    result jsonb,
    error_code text,
    error_message text,
    -- idempotency: the key is unique per (job_type, organization_id); the snapshot is
    -- the canonical original request a keyed retry is compared with
    organization_id uuid,
    idempotency_key text,
    enqueue_request jsonb,
    -- set when a workflow step or a schedule made the job
    workflow_run_id uuid,
    workflow_step_key text,
    schedule_id uuid,
    created_at timestamptz NOT NULL DEFAULT pgrun.now(),
    updated_at timestamptz NOT NULL DEFAULT pgrun.now(),
    -- the latest claim (job_attempts keeps each one); finished_at: entering a terminal status
    started_at timestamptz,
    finished_at timestamptz,
    CONSTRAINT jobs_status_check CHECK (
        -- queued: enqueue_job/enqueue_jobs, a retry after fail_job or the reaper,
        --         continue_job, requeue_job
        -- running: claim_jobs
        -- succeeded: complete_job
        -- dead: fail_job/reaper with no attempts left or a non-retryable error
        -- cancelled: cancel_job on a queued job, or the worker's next write after a cancel request
        status IN ('queued', 'running', 'succeeded', 'dead', 'cancelled')
    ),
    CONSTRAINT jobs_lease_check CHECK (
        (status = 'running') = (lease_token IS NOT NULL)
        AND (lease_token IS NULL) = (lease_expires_at IS NULL)
        AND (lease_token IS NULL) = (worker_id IS NULL)
    ),
    CONSTRAINT jobs_finished_check CHECK (
        (status IN ('succeeded', 'dead', 'cancelled')) = (finished_at IS NOT NULL)
    ),
    CONSTRAINT jobs_result_check CHECK (result IS NULL OR status = 'succeeded'),
    CONSTRAINT jobs_payload_check CHECK (jsonb_typeof(payload) = 'object'),
    CONSTRAINT jobs_priority_check CHECK (priority BETWEEN 0 AND 32767),
    CONSTRAINT jobs_attempts_check CHECK (
        attempt >= 0 AND total_attempts >= attempt AND max_attempts >= 1
    ),
    CONSTRAINT jobs_idempotency_check CHECK (
        (idempotency_key IS NULL) = (enqueue_request IS NULL)
        AND length(idempotency_key) BETWEEN 1 AND 256
    )
) WITH (fillfactor = 80);

COMMENT ON TABLE pgrun.jobs IS
'The queue: one row per job, from enqueue to a terminal status; purge_finished_jobs removes old finished rows.';

-- What enqueue_job returns, one row: the job, whether this call created it (false for a
-- keyed retry), and its status and run_at now.
CREATE TYPE pgrun.enqueue_job_result AS (
    job_id uuid,
    created boolean,
    status text,
    run_at timestamptz
);

-- Claim: only ready rows are indexed; order is priority, then run_at, then id.
CREATE INDEX jobs_claim_idx ON pgrun.jobs (priority, run_at, id)
WHERE status = 'queued';

-- Reaper: only running rows are indexed.
CREATE INDEX jobs_lease_idx ON pgrun.jobs (lease_expires_at)
WHERE status = 'running';

-- Concurrency caps count a capped type's running jobs through jobs_lease_idx (a walk
-- over running jobs only, paid only when some type is capped); a partial index of its own
-- cost one more index insert on every claim (docs/performance.md, "Job hot path").

-- Retention purge and listing of finished work.
CREATE INDEX jobs_finished_idx ON pgrun.jobs (finished_at)
WHERE finished_at IS NOT NULL;

CREATE UNIQUE INDEX jobs_idempotency_idx ON pgrun.jobs (
    job_type,
    coalesce(organization_id, '00000000-0000-0000-0000-000000000000'::uuid),
    idempotency_key
)
WHERE idempotency_key IS NOT NULL;

CREATE INDEX jobs_workflow_idx ON pgrun.jobs (workflow_run_id)
WHERE workflow_run_id IS NOT NULL;

CREATE INDEX jobs_schedule_idx ON pgrun.jobs (schedule_id)
WHERE schedule_id IS NOT NULL;

CREATE INDEX jobs_organization_idx ON pgrun.jobs (organization_id, id)
WHERE organization_id IS NOT NULL;

-- One row per FINISHED attempt, written once when the attempt ends (complete, fail,
-- continue, the reaper, the write after a cancel request) from the jobs row, which holds
-- the running attempt (worker_id, lease_token, started_at, step, total_attempts) until
-- then. Writing it once instead of inserting at claim and updating at the end saves a
-- heap insert and an index insert per job (docs/performance.md, "Job hot path"). Read
-- attempts through the job_attempts view below, which adds the running one.
CREATE TABLE pgrun.job_attempts_finished (
    job_id uuid NOT NULL,
    attempt integer NOT NULL,
    step text,
    worker_id text NOT NULL,
    lease_token uuid NOT NULL,
    started_at timestamptz NOT NULL,
    finished_at timestamptz NOT NULL,
    outcome text NOT NULL,
    error_code text,
    error_message text,
    PRIMARY KEY (job_id, attempt),
    CONSTRAINT job_attempts_outcome_check CHECK (
        -- succeeded: complete_job; failed: fail_job; timed_out: fail_job with error
        -- code 'timeout'; crashed: fail_job with error code 'crashed'; lease_expired:
        -- the reaper; cancelled: the write after a cancel request; continued: continue_job
        outcome IN (
            'succeeded', 'failed', 'timed_out', 'crashed', 'lease_expired', 'cancelled', 'continued'
        )
    )
);

COMMENT ON TABLE pgrun.job_attempts_finished IS
'One row per finished attempt of a job, written when the attempt ends; read job_attempts, which adds '
'the running attempt.';

-- Every claim of a job: the finished attempts plus, for a running job, its current attempt
-- (outcome and finished_at NULL), derived from the jobs row. A lookup by job_id is a
-- primary-key probe of each side.
CREATE VIEW pgrun.job_attempts AS
SELECT
    f.job_id,
    f.attempt,
    f.step,
    f.worker_id,
    f.lease_token,
    f.started_at,
    f.finished_at,
    f.outcome,
    f.error_code,
    f.error_message
FROM pgrun.job_attempts_finished AS f
UNION ALL
SELECT
    j.id AS job_id,
    j.total_attempts AS attempt,
    j.step,
    j.worker_id,
    j.lease_token,
    j.started_at,
    NULL::timestamptz AS finished_at,
    NULL::text AS outcome,
    NULL::text AS error_code,
    NULL::text AS error_message
FROM pgrun.jobs AS j
WHERE j.status = 'running';

COMMENT ON VIEW pgrun.job_attempts IS
'One row per claim of a job: which worker, when, how it ended (outcome NULL while it runs). attempt '
'counts claims over the job''s life.';

-- Every transition of every job, append-only.
-- The primary key (job_id, id) is also the index every reader uses (a job's events in
-- order); a key on id alone would be a second index insert per transition that nothing
-- reads.
CREATE TABLE pgrun.job_events (
    id bigint GENERATED ALWAYS AS IDENTITY,
    job_id uuid NOT NULL,
    event text NOT NULL,
    from_status text,
    to_status text NOT NULL,
    attempt integer NOT NULL,
    worker_id text,
    detail jsonb,
    created_at timestamptz NOT NULL DEFAULT pgrun.now(),
    CONSTRAINT job_events_event_check CHECK (
        -- enqueued: enqueue_job/enqueue_jobs; claimed: claim_jobs; succeeded: complete_job(s);
        -- retry_scheduled: fail_job(s) with attempts left; dead: fail_job(s) or the reaper
        -- with none left, or a non-retryable failure; continued: continue_job;
        -- cancel_requested: cancel_job on a running job (status stays running);
        -- cancelled: cancel_job on a queued job, or the next write/reap after a request;
        -- requeued: requeue_job; lease_expired: the reaper queued the job for a retry.
        -- attempt is the job's total_attempts then, i.e. the job_attempts row it concerns.
        event IN (
            'enqueued', 'claimed', 'succeeded', 'retry_scheduled', 'dead', 'continued',
            'cancel_requested', 'cancelled', 'requeued', 'lease_expired'
        )
    ),
    PRIMARY KEY (job_id, id)
);

COMMENT ON TABLE pgrun.job_events IS
'Append-only audit: exactly one row per job transition (enqueued, claimed, succeeded, ...).';

-- Why a job died, and whether it was brought back.
CREATE TABLE pgrun.job_dead_letters (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_id uuid NOT NULL,
    job_type text NOT NULL,
    queue text NOT NULL,
    attempt integer NOT NULL,
    error_code text,
    error_message text,
    reason text NOT NULL,
    died_at timestamptz NOT NULL DEFAULT pgrun.now(),
    requeued_at timestamptz,
    CONSTRAINT job_dead_letters_reason_check CHECK (
        -- attempts_exhausted: a retryable failure with no attempts left
        -- non_retryable: the handler said the failure is permanent
        -- lease_expired: the reaper found the last attempt's lease expired
        reason IN ('attempts_exhausted', 'non_retryable', 'lease_expired')
    )
);

CREATE INDEX job_dead_letters_job_idx ON pgrun.job_dead_letters (job_id);

COMMENT ON TABLE pgrun.job_dead_letters IS
'One row each time a job dies: the error and the reason; requeue_job stamps requeued_at.';

CREATE TABLE pgrun.job_logs (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_id uuid NOT NULL,
    attempt integer NOT NULL,
    level text NOT NULL DEFAULT 'info',
    message text NOT NULL,
    fields jsonb,
    created_at timestamptz NOT NULL DEFAULT pgrun.now(),
    CONSTRAINT job_logs_level_check CHECK (level IN ('debug', 'info', 'warning', 'error'))
);

CREATE INDEX job_logs_job_idx ON pgrun.job_logs (job_id, id);

COMMENT ON TABLE pgrun.job_logs IS 'Log lines a handler wrote during an attempt (append_job_log).';

-- What is waiting and what is running, per queue and job type. Reads only the queued
-- and running rows (the two partial indexes), so it stays cheap however much finished
-- history the table holds.
CREATE VIEW pgrun.queue_depth AS
SELECT
    j.queue,
    j.job_type,
    count(*) FILTER (WHERE j.status = 'queued' AND j.run_at <= pgrun.now()) AS ready,
    count(*) FILTER (WHERE j.status = 'queued' AND j.run_at > pgrun.now()) AS delayed,
    count(*) FILTER (WHERE j.status = 'running') AS running,
    pgrun.now() - min(j.run_at) FILTER (
        WHERE j.status = 'queued' AND j.run_at <= pgrun.now()
    ) AS oldest_ready_age,
    coalesce(bool_or(c.paused), FALSE) AS paused,
    max(c.max_concurrency) AS max_concurrency
FROM pgrun.jobs AS j
LEFT JOIN pgrun.job_runtime_configs AS c ON j.job_type = c.job_type
WHERE j.status IN ('queued', 'running')
GROUP BY j.queue, j.job_type;

COMMENT ON VIEW pgrun.queue_depth IS
'Per queue and job type with queued or running jobs: ready (queued, run_at reached), delayed (queued, '
'run_at in the future), running, oldest_ready_age (how long the oldest ready job has waited past its '
'run_at; NULL when none is ready), and the type''s runtime switches (paused, max_concurrency). '
'Times use pgrun.now().';

-- Health per job type and queue. Counts cover every row still in jobs; the rates and
-- percentiles cover a sliding window of the last 5 minutes (window_start): succeeded
-- per minute, start latency (started_at - run_at of jobs started in the window) and
-- duration (finished_at - started_at of jobs finished in the window), plus attempts
-- that ended crashed or lease_expired in the window. A full scan of jobs: meant for
-- dashboards and alerts polled every few seconds, not for the hot path.
CREATE VIEW pgrun.job_metrics AS
WITH w AS (
    SELECT pgrun.now() - interval '5 minutes' AS window_start
),

per_type AS (
    SELECT
        j.job_type,
        j.queue,
        count(*) FILTER (WHERE j.status = 'queued') AS queued,
        count(*) FILTER (WHERE j.status = 'running') AS running,
        count(*) FILTER (WHERE j.status = 'succeeded') AS succeeded,
        count(*) FILTER (WHERE j.status = 'dead') AS dead,
        count(*) FILTER (WHERE j.status = 'cancelled') AS cancelled,
        round(
            count(*) FILTER (
                WHERE j.status = 'succeeded' AND j.finished_at >= w.window_start
            ) / 5.0,
            2
        ) AS succeeded_per_minute,
        percentile_cont(0.5) WITHIN GROUP (
            ORDER BY greatest(extract(EPOCH FROM j.started_at - j.run_at), 0)
        ) FILTER (
            WHERE j.started_at >= w.window_start AND j.status <> 'queued'
        ) AS latency_p50_seconds,
        percentile_cont(0.95) WITHIN GROUP (
            ORDER BY greatest(extract(EPOCH FROM j.started_at - j.run_at), 0)
        ) FILTER (
            WHERE j.started_at >= w.window_start AND j.status <> 'queued'
        ) AS latency_p95_seconds,
        percentile_cont(0.5) WITHIN GROUP (
            ORDER BY extract(EPOCH FROM j.finished_at - j.started_at)
        ) FILTER (
            WHERE j.finished_at >= w.window_start AND j.started_at IS NOT NULL
        ) AS duration_p50_seconds,
        percentile_cont(0.95) WITHIN GROUP (
            ORDER BY extract(EPOCH FROM j.finished_at - j.started_at)
        ) FILTER (
            WHERE j.finished_at >= w.window_start AND j.started_at IS NOT NULL
        ) AS duration_p95_seconds
    FROM pgrun.jobs AS j
    CROSS JOIN w
    GROUP BY j.job_type, j.queue
),

crashes AS (
    SELECT
        j.job_type,
        j.queue,
        count(*) FILTER (WHERE a.outcome = 'crashed') AS crashed,
        count(*) FILTER (WHERE a.outcome = 'lease_expired') AS lease_expired
    FROM pgrun.job_attempts_finished AS a
    INNER JOIN pgrun.jobs AS j ON a.job_id = j.id
    CROSS JOIN w
    WHERE a.outcome IN ('crashed', 'lease_expired') AND a.finished_at >= w.window_start
    GROUP BY j.job_type, j.queue
)

SELECT
    p.job_type,
    p.queue,
    p.queued,
    p.running,
    p.succeeded,
    p.dead,
    p.cancelled,
    w.window_start,
    p.succeeded_per_minute,
    p.latency_p50_seconds,
    p.latency_p95_seconds,
    p.duration_p50_seconds,
    p.duration_p95_seconds,
    coalesce(c.crashed, 0) AS crashed,
    coalesce(c.lease_expired, 0) AS lease_expired
FROM per_type AS p
CROSS JOIN w
LEFT JOIN crashes AS c ON p.job_type = c.job_type AND p.queue = c.queue;

COMMENT ON VIEW pgrun.job_metrics IS
'Per job type and queue: counts by status (queued, running, succeeded, dead, cancelled) over all rows '
'still in jobs; and over the last 5 minutes (from window_start, by pgrun.now()): succeeded_per_minute, '
'start latency p50/p95 in seconds (started_at - run_at of jobs started in the window), duration p50/p95 '
'in seconds (finished_at - started_at of jobs finished in the window), and attempts that ended crashed '
'or lease_expired. Scans the whole jobs table: poll it, do not join it into hot paths.';
