-- fail_jobs / fail_job: a handler failed; retry the job later or let it die.
--
-- For each job whose lease is still owned (same token, status running, lease_expires_at >
-- pgrun.now()) the attempt ends and pgrun._lease_retry_decision (plpgsql/jobs/_lease.sql, the one
-- rule the reaper uses too) decides:
--   * retryable and attempt < max_attempts -> back to 'queued' at run_at = now + delay:
--     retry_delay when given, else the step's retry delay (continue_job's retry_delay),
--     else exponential backoff with jitter from the job's policy,
--       d = least(backoff_max_seconds, backoff_base_seconds * 2^(attempt - 1))
--       d * (1 - backoff_jitter) <= delay <= d * (1 + backoff_jitter)
--     event 'retry_scheduled'.
--   * not retryable -> 'dead' at once, dead letter reason 'non_retryable', event 'dead'.
--   * attempt >= max_attempts -> 'dead', dead letter reason 'attempts_exhausted', event 'dead'.
--   * a cancel was requested -> 'cancelled' (no retry), event 'cancelled'.
-- max_attempts is the step's budget when continue_job set one (step_max_attempts), else the
-- job's; both overrides are read from the row already locked, no other lookup.
-- The attempt's outcome is 'timed_out' when error_code = 'timeout', 'crashed' when
-- error_code = 'crashed', 'cancelled' for a cancel request, else 'failed'. The message is
-- stored once, on the event that ends the attempt (job_attempts reads it); the job keeps
-- the error code and error_attempt, the attempt it came from, and a dead letter names its
-- attempt (get_job and list_jobs read the message through them). A message over 4000
-- characters or a code over 128 is truncated (ends in " [truncated]"), never rejected,
-- so a failure report always lands. retryable NULL counts as true. The lease is cleared;
-- worker_id stays (the worker that ran the attempt, until the next claim).
--
-- fail_jobs is the batch form, one statement: a lost lease is REPORTED in its row
-- (outcome 'lease_lost' with lost_reason), not raised, and nothing is written for it; the
-- rest of the batch is committed. fail_job is the one-job form and raises job.lease_lost.
--
-- The retried jobs' queues are notified as an enqueue's are (pgrun._enqueue_notify_jobs,
-- jobs/_insert.sql: once per queue, with the earliest due time of its retries when delayed),
-- so idle workers start a retry when it comes due, not at their poll.
--
-- Locks: the batch's owned job rows, in id order (FOR UPDATE).
--
-- Workflows: a job that died or was cancelled here and belongs to a workflow run has its
-- step settled by pgrun._workflow_finish_steps in the same transaction; the hook is
-- called only when the batch holds such a job.
--
-- Errors: job.lease_lost (RQ004, fail_job only); job.invalid_argument (NULL job_id or
-- lease_token), job.invalid_batch, job.invalid_delay (a retry_delay outside 0 s..100 years,
-- the time-argument rule of pgrun._check_time) (RQ003).

CREATE OR REPLACE FUNCTION pgrun.fail_jobs(
    job_ids uuid[],
    lease_tokens uuid[],
    error_codes text[] DEFAULT NULL,
    messages text[] DEFAULT NULL,
    retryable boolean[] DEFAULT NULL,
    retry_delays interval[] DEFAULT NULL
)
RETURNS TABLE (job_id uuid, outcome text, run_at timestamptz, lost_reason text)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
-- Plan stability: every join here is a lookup by primary key, whatever the batch size and
-- however stale the statistics; never a scan of all running jobs. The plan is built once
-- per session. Measurements: docs/lease-machine.md.
SET enable_seqscan = off
SET enable_bitmapscan = off
SET enable_hashjoin = off
SET enable_mergejoin = off
SET jit = off
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    v_now timestamptz := pgrun.now();
    v_ids uuid[];
    v_outcomes text[];
    v_run_ats timestamptz[];
    v_lost_reasons text[];
    v_workflow_jobs uuid[];
    v_retry_queues text[];
    v_retry_run_ats timestamptz[];
BEGIN
    PERFORM pgrun._lease_check_batch(
        fail_jobs.job_ids,
        fail_jobs.lease_tokens,
        ARRAY[
            cardinality(fail_jobs.error_codes), cardinality(fail_jobs.messages),
            cardinality(fail_jobs.retryable), cardinality(fail_jobs.retry_delays)
        ]
    );
    -- the time-argument rule, element by element (no element when retry_delays is NULL)
    PERFORM pgrun._check_time('job.invalid_delay', 'retry_delay', d.delay)
    FROM unnest(fail_jobs.retry_delays) AS d (delay)
    WHERE d.delay IS NOT NULL;

    WITH input AS (
        SELECT
            i.id, i.token, i.ord,
            pgrun._clip(i.error_code, 128) AS error_code,
            pgrun._clip(i.message, 4000) AS message,
            coalesce(i.retryable, true) AS retryable,
            i.retry_delay
        FROM unnest(
            fail_jobs.job_ids, fail_jobs.lease_tokens, fail_jobs.error_codes, fail_jobs.messages,
            fail_jobs.retryable, fail_jobs.retry_delays
        ) WITH ORDINALITY AS i (id, token, error_code, message, retryable, retry_delay, ord)
    ),

    owned AS MATERIALIZED (
        SELECT
            j.id, j.job_type, j.queue, j.attempt, j.total_attempts,
            coalesce(j.step_max_attempts, j.max_attempts) AS max_attempts,
            j.backoff_base_seconds, j.backoff_max_seconds, j.backoff_jitter,
            j.step, j.worker_id, j.lease_token, j.started_at, j.cancel_requested_at, j.cancel_reason,
            i.error_code, i.message, i.retryable,
            -- the caller's delay, else the step's (continue_job), else the backoff
            coalesce(i.retry_delay, j.step_retry_delay) AS retry_delay,
            i.ord
        FROM input AS i
        JOIN pgrun.jobs AS j ON j.id = i.id
        WHERE j.lease_token = i.token
          AND j.lease_expires_at > v_now
        ORDER BY j.id
        FOR UPDATE OF j
    ),

    decided AS MATERIALIZED (
        SELECT
            o.*,
            CASE
                WHEN o.cancel_requested_at IS NOT NULL THEN 'cancelled'
                WHEN d.retry_at IS NOT NULL THEN 'queued'
                ELSE 'dead'
            END AS new_status,
            d.retry_at,
            d.dead_reason
        FROM owned AS o
        CROSS JOIN LATERAL pgrun._lease_retry_decision(
            o.attempt, o.max_attempts, o.retryable, o.backoff_base_seconds, o.backoff_max_seconds,
            o.backoff_jitter, o.retry_delay, v_now, 'attempts_exhausted'
        ) AS d
    ),

    failed AS (
        UPDATE pgrun.jobs AS j
        SET status = d.new_status,
            run_at = CASE WHEN d.new_status = 'queued' THEN d.retry_at ELSE j.run_at END,
            error_code = d.error_code,
            error_attempt = d.total_attempts,
            lease_token = NULL,
            lease_expires_at = NULL,
            finished_at = CASE WHEN d.new_status = 'queued' THEN NULL ELSE v_now END,
            updated_at = v_now
        FROM decided AS d
        WHERE j.id = d.id
        RETURNING j.id, j.queue, d.new_status, d.retry_at, j.workflow_run_id, d.ord
    ),

    events AS (
        INSERT INTO pgrun.job_events (
            job_id, event, from_status, to_status, attempt, worker_id, detail, created_at,
            outcome, step, lease_token, started_at, error_code, error_message
        )
        SELECT
            d.id,
            CASE d.new_status WHEN 'queued' THEN 'retry_scheduled' ELSE d.new_status END,
            'running',
            d.new_status,
            d.total_attempts,
            d.worker_id,
            CASE d.new_status
                WHEN 'queued' THEN jsonb_build_object('error_code', d.error_code, 'run_at', d.retry_at)
                WHEN 'dead' THEN jsonb_build_object('error_code', d.error_code, 'reason', d.dead_reason)
                ELSE jsonb_build_object('error_code', d.error_code, 'reason', d.cancel_reason)
            END,
            v_now,
            CASE
                WHEN d.new_status = 'cancelled' THEN 'cancelled'
                WHEN d.error_code = 'timeout' THEN 'timed_out'
                WHEN d.error_code = 'crashed' THEN 'crashed'
                ELSE 'failed'
            END,
            d.step,
            d.lease_token,
            d.started_at,
            d.error_code,
            d.message
        FROM decided AS d
    ),

    letters AS (
        INSERT INTO pgrun.job_dead_letters (
            job_id, job_type, queue, attempt, error_code, reason, died_at
        )
        SELECT d.id, d.job_type, d.queue, d.total_attempts, d.error_code, d.dead_reason, v_now
        FROM decided AS d
        WHERE d.new_status = 'dead'
    )

    -- No CTE-to-CTE join (their row estimates are guesses, and a nested loop over two
    -- CTEs is quadratic): handled rows come from the UPDATE, lost ones via a hashed NOT IN.
    SELECT
        array_agg(u.id ORDER BY u.ord),
        array_agg(u.outcome ORDER BY u.ord),
        array_agg(u.run_at ORDER BY u.ord),
        array_agg(u.lost_reason ORDER BY u.ord),
        array_agg(u.id ORDER BY u.ord) FILTER (WHERE u.workflow_run_id IS NOT NULL AND u.finished),
        array_agg(u.queue) FILTER (WHERE u.outcome = 'retry_scheduled'),
        array_agg(u.run_at) FILTER (WHERE u.outcome = 'retry_scheduled')
    INTO v_ids, v_outcomes, v_run_ats, v_lost_reasons, v_workflow_jobs, v_retry_queues, v_retry_run_ats
    FROM (
        SELECT
            f.id,
            f.queue,
            CASE f.new_status WHEN 'queued' THEN 'retry_scheduled' ELSE f.new_status END AS outcome,
            CASE WHEN f.new_status = 'queued' THEN f.retry_at END AS run_at,
            NULL::text AS lost_reason,
            f.workflow_run_id,
            f.new_status <> 'queued' AS finished,
            f.ord
        FROM failed AS f
        UNION ALL
        SELECT i.id, NULL, 'lease_lost', NULL, pgrun._lease_lost_reason(i.id, i.token), NULL, FALSE, i.ord
        FROM input AS i
        WHERE i.id NOT IN (SELECT f.id FROM failed AS f)
    ) AS u;

    -- The retried jobs are queued again: their queues' idle workers are told when they come
    -- due (as for new jobs), rather than find them at their poll.
    IF v_retry_queues IS NOT NULL THEN
        PERFORM pgrun._enqueue_notify_jobs(v_retry_queues, v_retry_run_ats, v_now);
    END IF;

    -- Workflow steps of the jobs that just died or were cancelled: settle them, release dependents.
    IF v_workflow_jobs IS NOT NULL THEN
        PERFORM pgrun._workflow_finish_steps(v_workflow_jobs);
    END IF;

    RETURN QUERY
    SELECT r.id, r.outcome, r.run_at, r.lost_reason
    FROM unnest(v_ids, v_outcomes, v_run_ats, v_lost_reasons)
        WITH ORDINALITY AS r (id, outcome, run_at, lost_reason, ord)
    ORDER BY r.ord;
END;
$$;

COMMENT ON FUNCTION pgrun.fail_jobs(uuid[], uuid[], text[], text[], boolean[], interval[]) IS
'Fail a batch of running jobs in one statement: parallel arrays job_ids, lease_tokens and optional '
'error_codes, messages, retryable (NULL = true) and retry_delays (NULL = the retry_delay continue_job '
'gave the step, else the job''s backoff). Each job '
'whose lease is still owned is retried (queued again at now + delay; backoff '
'd = least(backoff_max_seconds, backoff_base_seconds * 2^(attempt-1)), jittered within '
'd * (1 +/- backoff_jitter)), or dies (not retryable, or attempt >= max_attempts: status dead plus a '
'job_dead_letters row; max_attempts is the step''s when continue_job set one), or ends cancelled when a '
'cancel was requested. Attempt outcome: timed_out for '
'error code timeout, crashed for crashed, else failed. Messages over 4000 characters and codes over 128 '
'are truncated, never rejected. Returns one row per input job in input order: outcome retry_scheduled, '
'dead, cancelled or lease_lost (with lost_reason; nothing written for that job), and run_at for a retry. '
'retry_delays: 0 s..100 years each. The retries'' queues are notified as an enqueue''s are. '
'Errors: job.invalid_batch, job.invalid_delay (RQ003).';

CREATE OR REPLACE FUNCTION pgrun.fail_job(
    job_id uuid,
    lease_token uuid,
    error_code text DEFAULT NULL,
    message text DEFAULT NULL,
    retryable boolean DEFAULT TRUE,
    retry_delay interval DEFAULT NULL
)
RETURNS TABLE (outcome text, run_at timestamptz)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_outcome text;
    v_run_at timestamptz;
    v_lost_reason text;
BEGIN
    IF fail_job.job_id IS NULL OR fail_job.lease_token IS NULL THEN
        PERFORM pgrun._raise(
            'job.invalid_argument',
            'job_id and lease_token must not be NULL',
            'Pass the job_id and lease_token claim_jobs returned.'
        );
    END IF;

    SELECT f.outcome, f.run_at, f.lost_reason INTO v_outcome, v_run_at, v_lost_reason
    FROM pgrun.fail_jobs(
        ARRAY[fail_job.job_id], ARRAY[fail_job.lease_token], ARRAY[fail_job.error_code],
        ARRAY[fail_job.message], ARRAY[fail_job.retryable], ARRAY[fail_job.retry_delay]
    ) AS f;

    IF v_outcome = 'lease_lost' THEN
        PERFORM pgrun._lease_raise_lost(fail_job.job_id, fail_job.lease_token, v_lost_reason);
    END IF;
    RETURN QUERY SELECT v_outcome, v_run_at;
END;
$$;

COMMENT ON FUNCTION pgrun.fail_job(uuid, uuid, text, text, boolean, interval) IS
'Fail one running job under its lease. retryable (default true; NULL = true) and attempts left: it is '
'queued again at now + retry_delay, or, without retry_delay, after the step''s retry_delay (set by '
'continue_job), else the job''s exponential backoff '
'd = least(backoff_max_seconds, backoff_base_seconds * 2^(attempt-1)) jittered within '
'd * (1 +/- backoff_jitter). Not retryable, or attempt >= max_attempts (the step''s when continue_job '
'set one): it is dead at once, with a '
'job_dead_letters row (reason non_retryable or attempts_exhausted). A pending cancel request makes it '
'cancelled instead. The attempt ends timed_out (error_code timeout), crashed (error_code crashed) or '
'failed. A message over 4000 characters (code over 128) is truncated, never rejected. retry_delay: '
'0 s..100 years. Returns outcome '
'(retry_scheduled, dead or cancelled) and run_at of the retry. '
'Errors: job.lease_lost (RQ004; nothing is written), job.invalid_argument, job.invalid_delay (RQ003).';
