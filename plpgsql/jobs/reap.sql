-- reap_expired_leases: recover running jobs whose worker stopped renewing its lease.
--
-- A running job with lease_expires_at <= pgrun.now() has lost its worker (crash, network
-- partition, a stop without a final write). Up to max_jobs of them, longest expired
-- first, are taken and their attempt ends with outcome 'lease_expired' (error code
-- 'lease_expired'). pgrun._lease_retry_decision (the same rule as fail_job) decides the rest:
--   * attempts left -> 'queued' again after the step's retry delay (continue_job's
--     retry_delay) when it has one, else retry_delay when given, else the backoff, event
--     'lease_expired'. The step's delay wins over this call's: the reaper's retry_delay is
--     one setting for every job, the step's was chosen for that step;
--   * attempt >= max_attempts (the step's, continue_job's max_attempts, when set) -> 'dead',
--     a job_dead_letters row with reason 'lease_expired', event 'dead';
--   * a cancel was requested -> 'cancelled', event 'cancelled' (the worker never came
--     back to honour it).
-- One statement with data-modifying CTEs. The worker that held the lease finds out at its
-- next write (job.lease_lost), since the lease token is gone; worker_id stays and names it.
-- The retried jobs' queues are notified as an enqueue's are (pgrun._enqueue_notify_jobs), so
-- idle workers start them when they come due, not at their poll.
--
-- Locks: the chosen job rows in id order, FOR UPDATE SKIP LOCKED (a job a worker or
-- another reaper is writing right now is left for the next pass; the reaper never waits),
-- and each one's event records the attempt (outcome 'lease_expired'). Candidates come from
-- jobs_lease_idx in expiry order, so the cost follows the number of expired leases, not the
-- size of the table.
--
-- The attempt's message ('the lease of worker ... expired at ...') is stored once, on its
-- event; the job points at that attempt (error_attempt) unless it ends cancelled.
--
-- Errors: job.invalid_max_jobs (outside 1..10000), job.invalid_delay (retry_delay outside
-- 0 s..100 years, the time-argument rule of pgrun._check_time) (RQ003).

CREATE OR REPLACE FUNCTION pgrun.reap_expired_leases(
    max_jobs integer DEFAULT 1000,
    retry_delay interval DEFAULT NULL
)
RETURNS TABLE (job_id uuid, outcome text, run_at timestamptz)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
-- Plan stability: candidates come from the partial index in its order, every other join
-- is a lookup by key, whatever the statistics say; the plan is built once per session.
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
    v_workflow_finished uuid[];
    v_retry_queues text[];
    v_retry_run_ats timestamptz[];
    v_stale uuid[];
    v_candidates uuid[];
BEGIN
    IF reap_expired_leases.max_jobs IS NULL OR reap_expired_leases.max_jobs NOT BETWEEN 1 AND 10000 THEN
        PERFORM pgrun._raise(
            'job.invalid_max_jobs',
            format(
                'max_jobs %s is outside 1..10000', coalesce(reap_expired_leases.max_jobs::text, 'NULL')
            ),
            'Reap in bounded batches and call again while a batch comes back full.'
        );
    END IF;
    PERFORM pgrun._check_time('job.invalid_delay', 'retry_delay', reap_expired_leases.retry_delay);

    -- The candidates: the first max_jobs expired leases in expiry order (jobs_lease_idx), read
    -- once for the hook and the reap.
    v_candidates := ARRAY(
        SELECT x.id
        FROM pgrun.jobs AS x
        WHERE x.status = 'running' AND x.lease_expires_at <= v_now
        ORDER BY x.lease_expires_at
        LIMIT reap_expired_leases.max_jobs
    );
    IF cardinality(v_candidates) = 0 THEN
        RETURN;
    END IF;

    -- Jobs of schedules that forbid stale re-entry die instead of retrying (plpgsql/schedules/_reap.sql).
    v_stale := pgrun._schedule_forbid_reentry(v_now, v_candidates);

    WITH expired AS MATERIALIZED (
        SELECT
            j.id, j.job_type, j.queue, j.attempt, j.total_attempts,
            coalesce(j.step_max_attempts, j.max_attempts) AS max_attempts,
            j.backoff_base_seconds, j.backoff_max_seconds, j.backoff_jitter,
            j.step, j.worker_id, j.lease_token, j.started_at, j.lease_expires_at,
            j.cancel_requested_at, j.cancel_reason,
            -- the step's delay (continue_job), else this call's, else the backoff
            coalesce(j.step_retry_delay, reap_expired_leases.retry_delay) AS retry_delay
        FROM pgrun.jobs AS j
        -- Each candidate by primary key; still expired, spelt without the status
        -- (jobs_lease_check: running = a lease expiry), which would let the planner walk
        -- jobs_lease_idx again and match each row against the candidates (quadratic: 124,750
        -- pairs for 500 expired leases).
        WHERE j.id = ANY (v_candidates)
          AND j.lease_expires_at <= v_now
        ORDER BY j.id
        FOR UPDATE OF j SKIP LOCKED
    ),

    decided AS MATERIALIZED (
        SELECT
            e.*,
            CASE
                WHEN e.cancel_requested_at IS NOT NULL THEN 'cancelled'
                WHEN d.retry_at IS NOT NULL THEN 'queued'
                ELSE 'dead'
            END AS new_status,
            d.retry_at,
            d.dead_reason,
            format('the lease of worker %s expired at %s', e.worker_id, e.lease_expires_at) AS message
        FROM expired AS e
        CROSS JOIN LATERAL pgrun._lease_retry_decision(
            -- a job its schedule forbids to re-enter has used up its budget for this decision
            e.attempt, CASE WHEN e.id = ANY (v_stale) THEN e.attempt ELSE e.max_attempts END, true,
            e.backoff_base_seconds, e.backoff_max_seconds,
            e.backoff_jitter, e.retry_delay, v_now, 'lease_expired'
        ) AS d
    ),

    reaped AS (
        UPDATE pgrun.jobs AS j
        SET status = d.new_status,
            run_at = CASE WHEN d.new_status = 'queued' THEN d.retry_at ELSE j.run_at END,
            error_code = CASE WHEN d.new_status = 'cancelled' THEN j.error_code ELSE 'lease_expired' END,
            error_attempt = CASE WHEN d.new_status = 'cancelled' THEN j.error_attempt ELSE d.total_attempts END,
            lease_token = NULL,
            lease_expires_at = NULL,
            finished_at = CASE WHEN d.new_status = 'queued' THEN NULL ELSE v_now END,
            updated_at = v_now
        FROM decided AS d
        WHERE j.id = d.id
        RETURNING j.id, j.queue, d.new_status, d.retry_at, j.workflow_run_id
    ),

    events AS (
        INSERT INTO pgrun.job_events (
            job_id, event, from_status, to_status, attempt, worker_id, detail, created_at,
            outcome, step, lease_token, started_at, error_code, error_message
        )
        SELECT
            d.id,
            CASE d.new_status WHEN 'queued' THEN 'lease_expired' ELSE d.new_status END,
            'running',
            d.new_status,
            d.total_attempts,
            d.worker_id,
            CASE d.new_status
                WHEN 'queued' THEN jsonb_build_object('lease_expires_at', d.lease_expires_at, 'run_at', d.retry_at)
                WHEN 'dead' THEN jsonb_build_object('lease_expires_at', d.lease_expires_at, 'reason', d.dead_reason)
                ELSE jsonb_build_object('lease_expires_at', d.lease_expires_at, 'reason', d.cancel_reason)
            END,
            v_now,
            'lease_expired',
            d.step,
            d.lease_token,
            d.started_at,
            'lease_expired',
            d.message
        FROM decided AS d
    ),

    letters AS (
        INSERT INTO pgrun.job_dead_letters (
            job_id, job_type, queue, attempt, error_code, reason, died_at
        )
        SELECT d.id, d.job_type, d.queue, d.total_attempts, 'lease_expired', d.dead_reason, v_now
        FROM decided AS d
        WHERE d.new_status = 'dead'
    )

    SELECT
        coalesce(array_agg(r.id ORDER BY r.id), '{}'),
        coalesce(array_agg(
            CASE r.new_status WHEN 'queued' THEN 'lease_expired' ELSE r.new_status END ORDER BY r.id
        ), '{}'),
        coalesce(array_agg(CASE WHEN r.new_status = 'queued' THEN r.retry_at END ORDER BY r.id), '{}'),
        coalesce(array_agg(r.id ORDER BY r.id) FILTER (
            WHERE r.new_status IN ('dead', 'cancelled') AND r.workflow_run_id IS NOT NULL
        ), '{}'),
        array_agg(r.queue) FILTER (WHERE r.new_status = 'queued'),
        array_agg(r.retry_at) FILTER (WHERE r.new_status = 'queued')
    INTO v_ids, v_outcomes, v_run_ats, v_workflow_finished, v_retry_queues, v_retry_run_ats
    FROM reaped AS r;

    -- The retried jobs are queued again: their queues' idle workers are told when they come
    -- due (as for new jobs), rather than find them at their poll.
    IF v_retry_queues IS NOT NULL THEN
        PERFORM pgrun._enqueue_notify_jobs(v_retry_queues, v_retry_run_ats, v_now);
    END IF;

    -- Workflow steps of exactly the jobs this call ended (dead or cancelled).
    IF cardinality(v_workflow_finished) > 0 THEN
        PERFORM pgrun._workflow_finish_steps(v_workflow_finished);
    END IF;

    RETURN QUERY
    SELECT u.id, u.outcome, u.run_at
    FROM unnest(v_ids, v_outcomes, v_run_ats) AS u (id, outcome, run_at)
    ORDER BY u.id;
END;
$$;

COMMENT ON FUNCTION pgrun.reap_expired_leases(integer, interval) IS
'Recover up to max_jobs (1..10000) running jobs whose lease expired, longest expired first, in one '
'statement; jobs being written right now are skipped (SKIP LOCKED) and left for the next call. Each '
'attempt ends with outcome lease_expired. With attempts left the job is queued again after the retry '
'delay continue_job gave its step, else retry_delay when given, else its backoff (event lease_expired); '
'with none left (max_attempts: the step''s when continue_job set one) it is dead with a job_dead_letters '
'row, reason lease_expired (event dead); a job with a pending cancel request ends cancelled. Returns one '
'row per reaped job: outcome lease_expired (retried), dead or cancelled, and run_at for a retry. Call '
'again while it returns max_jobs rows. retry_delay: 0 s..100 years. The retries'' queues are notified as '
'an enqueue''s are. '
'Errors: job.invalid_max_jobs, job.invalid_delay (RQ003).';
