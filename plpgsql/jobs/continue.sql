-- continue_job: a resumable job finished one step and moves on to the next.
--
-- The same job goes back to 'queued' at next_step, with its state persisted, to run again
-- at now + delay (now when delay is NULL). The step's attempt budget starts afresh
-- (attempt := 0, so the next step has all of max_attempts), while total_attempts keeps
-- counting claims over the job's life. The attempt that ran the step ends with outcome
-- 'continued' and one 'continued' event is written. The next claim returns the new step
-- and state. state NULL keeps the current state (pass '{}' or 'null' to clear it). The lease
-- is cleared; worker_id stays (the worker that ran the step, until the next claim).
--
-- A pending cancel request wins: the job ends 'cancelled' (attempt outcome 'cancelled',
-- event 'cancelled'), with next_step and state still stored, so a later requeue_job
-- resumes at the step after the one that finished.
--
-- The lease is checked like every lifecycle write: same token, status running,
-- lease_expires_at > pgrun.now(); otherwise job.lease_lost and nothing is written.
--
-- The next step's queue is notified as a new job's is (the queue, or the queue and the due
-- time when delayed: jobs/_insert.sql), so idle workers start it without waiting for a poll.
--
-- Locks: the job row (FOR UPDATE). The finished attempt is recorded on the 'continued' (or
-- 'cancelled') event; a job cancelled here that belongs to a workflow run has its step
-- settled by pgrun._workflow_finish_steps.
--
-- The next step's retry rules: max_attempts (1..1000, as enqueue_job takes it) gives that
-- step its own attempt budget instead of the job's max_attempts, and retry_delay (the
-- time-argument rule) its own delay between failed attempts instead of the job type's
-- backoff. NULL (the default) means the job's own settings. They are stored on the job
-- (step_max_attempts, step_retry_delay) for the step being queued and replaced by the next
-- continue_job, so a later continue without them gives the job's settings back; requeue_job
-- keeps them (it resumes the same step). fail_job(s) and the reaper read them: a
-- retry_delay passed to fail_job(s) wins over the step's, which wins over the backoff (and,
-- in the reaper, over its call-wide retry_delay); claim_jobs returns the step's budget as
-- max_attempts. A pending cancel still stores them with next_step.
--
-- Limits: state is at most the job type's max_result_bytes of jsonb (NULL: 1 MiB; the same
-- cap as a result, pgrun._job_result_cap), else job.state_too_large, and nested at most 100
-- levels (pgrun._json_depth_ok: no client could decode a deeper one), else
-- job.invalid_state; in both cases nothing is written, and as for a result the lease is
-- checked first (a state both too large and too deep is job.state_too_large). delay follows
-- the time-argument rule (0 s..100 years, pgrun._check_time).
--
-- Errors: job.lease_lost (RQ004); job.invalid_argument (NULL job_id or lease_token),
-- job.invalid_step (NULL, blank or over 256 characters), job.invalid_delay (delay or
-- retry_delay outside 0 s..100 years), job.invalid_max_attempts (outside 1..1000),
-- job.state_too_large, job.invalid_state (RQ003). Every argument is checked before
-- anything is read or written.

CREATE OR REPLACE FUNCTION pgrun.continue_job(
    job_id uuid,
    lease_token uuid,
    next_step text,
    state jsonb DEFAULT NULL,
    delay interval DEFAULT NULL,
    max_attempts integer DEFAULT NULL,
    retry_delay interval DEFAULT NULL
)
RETURNS TABLE (outcome text, run_at timestamptz)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_now timestamptz := pgrun.now();
    v_status text;
    v_run_at timestamptz;
    v_queue text;
    v_workflow_run_id uuid;
    v_state_bytes integer;
    v_state_ok boolean;
    v_job_type text;
    v_cap integer;
BEGIN
    IF continue_job.job_id IS NULL OR continue_job.lease_token IS NULL THEN
        PERFORM pgrun._raise(
            'job.invalid_argument',
            'job_id and lease_token must not be NULL',
            'Pass the job_id and lease_token claim_jobs returned.'
        );
    END IF;
    IF continue_job.next_step IS NULL OR length(continue_job.next_step) > 256 OR btrim(continue_job.next_step) = '' THEN
        PERFORM pgrun._raise(
            'job.invalid_step',
            format('next_step %s is NULL, blank or longer than 256 characters', pgrun._shown(continue_job.next_step)),
            'Name the step the job continues with; to finish the job call complete_job.'
        );
    END IF;
    PERFORM pgrun._check_time('job.invalid_delay', 'delay', continue_job.delay);
    IF continue_job.max_attempts NOT BETWEEN 1 AND 1000 THEN
        PERFORM pgrun._raise(
            'job.invalid_max_attempts',
            format('max_attempts %s is outside 1..1000', continue_job.max_attempts),
            'max_attempts is the next step''s attempt budget, the first try included; '
                'NULL gives it the job''s max_attempts.'
        );
    END IF;
    PERFORM pgrun._check_time('job.invalid_delay', 'retry_delay', continue_job.retry_delay);

    -- The state cap (the type's max_result_bytes, else 1 MiB), checked only for a state
    -- larger than the smallest cap a type may set, and the nesting rule; both only while
    -- the lease is owned (a lost lease is reported as such below).
    v_state_bytes := pg_column_size(continue_job.state);
    v_state_ok := pgrun._json_depth_ok(continue_job.state);
    IF v_state_bytes > 1024 OR NOT v_state_ok THEN
        SELECT j.job_type, pgrun._job_result_cap(j.job_type) INTO v_job_type, v_cap
        FROM pgrun.jobs AS j
        WHERE j.id = continue_job.job_id
          AND j.lease_token = continue_job.lease_token
          AND j.lease_expires_at > v_now;
        IF v_state_bytes > v_cap THEN
            PERFORM pgrun._raise(
                'job.state_too_large',
                format(
                    'state is %s bytes of jsonb; the limit for job type %s is %s',
                    v_state_bytes, v_job_type, v_cap
                ),
                'Keep large data elsewhere and store a reference in the state, or raise the '
                    'type''s max_result_bytes (upsert_job_definition, at most 16 MiB).'
            );
        END IF;
        IF v_job_type IS NOT NULL AND NOT v_state_ok THEN
            PERFORM pgrun._raise(
                'job.invalid_state',
                'state is nested more than 100 levels deep (arrays and objects)',
                'Flatten the state: pgrun stores JSON nested at most 100 levels.'
            );
        END IF;
    END IF;

    WITH owned AS MATERIALIZED (
        SELECT
            j.id, j.worker_id, j.step, j.lease_token, j.started_at,
            j.cancel_requested_at IS NOT NULL AS cancel_requested
        FROM pgrun.jobs AS j
        WHERE j.id = continue_job.job_id
          AND j.lease_token = continue_job.lease_token
          AND j.lease_expires_at > v_now
        FOR UPDATE OF j
    ),

    continued AS (
        UPDATE pgrun.jobs AS j
        SET status = CASE WHEN o.cancel_requested THEN 'cancelled' ELSE 'queued' END,
            step = continue_job.next_step,
            state = coalesce(continue_job.state, j.state),
            run_at = CASE
                WHEN o.cancel_requested THEN j.run_at
                ELSE v_now + coalesce(continue_job.delay, interval '0')
            END,
            attempt = CASE WHEN o.cancel_requested THEN j.attempt ELSE 0 END,
            step_max_attempts = continue_job.max_attempts,
            step_retry_delay = continue_job.retry_delay,
            lease_token = NULL,
            lease_expires_at = NULL,
            finished_at = CASE WHEN o.cancel_requested THEN v_now END,
            updated_at = v_now
        FROM owned AS o
        WHERE j.id = o.id
        RETURNING
            j.id, j.status, j.queue, j.run_at, j.total_attempts, j.cancel_reason, j.workflow_run_id,
            o.worker_id, o.step, o.lease_token, o.started_at
    ),

    events AS (
        INSERT INTO pgrun.job_events (
            job_id, event, from_status, to_status, attempt, worker_id, detail, created_at,
            outcome, step, lease_token, started_at
        )
        SELECT
            c.id,
            CASE WHEN c.status = 'queued' THEN 'continued' ELSE 'cancelled' END,
            'running',
            c.status,
            c.total_attempts,
            c.worker_id,
            CASE
                WHEN c.status = 'queued'
                    THEN jsonb_build_object('from_step', c.step, 'step', continue_job.next_step, 'run_at', c.run_at)
                ELSE jsonb_build_object('reason', c.cancel_reason, 'step', continue_job.next_step)
            END,
            v_now,
            CASE WHEN c.status = 'queued' THEN 'continued' ELSE 'cancelled' END,
            c.step,
            c.lease_token,
            c.started_at
        FROM continued AS c
    )

    SELECT c.status, c.queue, c.run_at, c.workflow_run_id INTO v_status, v_queue, v_run_at, v_workflow_run_id
    FROM continued AS c;

    IF v_status IS NULL THEN
        PERFORM pgrun._lease_raise_lost(continue_job.job_id, continue_job.lease_token);
    END IF;
    -- The next step is queued: its queue's idle workers are told when it comes due (as for a
    -- new job), rather than find it at their poll.
    IF v_status = 'queued' THEN
        PERFORM pgrun._enqueue_notify(pgrun._enqueue_notify_payload(v_queue, v_run_at, v_now));
    END IF;
    -- A pending cancel ended the job: settle its workflow step, if any.
    IF v_status = 'cancelled' AND v_workflow_run_id IS NOT NULL THEN
        PERFORM pgrun._workflow_finish_steps(ARRAY[continue_job.job_id]);
    END IF;
    RETURN QUERY SELECT
        CASE WHEN v_status = 'queued' THEN 'continued' ELSE 'cancelled' END,
        CASE WHEN v_status = 'queued' THEN v_run_at END;
END;
$$;

COMMENT ON FUNCTION pgrun.continue_job(uuid, uuid, text, jsonb, interval, integer, interval) IS
'Finish the current step of a running job and queue the same job at next_step (1..256 characters): state '
'is stored (NULL keeps the current state), it runs again at now + delay (NULL = now), and its attempt '
'budget starts afresh (attempt = 0; total_attempts keeps counting). The attempt ends with outcome '
'continued and one continued event is written; the next claim returns the new step and state. A pending '
'cancel request makes the job cancelled instead (step and state still stored). Returns outcome (continued '
'or cancelled) and run_at of the next step; the next step''s queue is notified as a new job''s is. '
'max_attempts (1..1000) and retry_delay give the next step its own attempt budget and delay between '
'failed attempts (NULL = the job''s max_attempts and its type''s backoff; a retry_delay passed to fail_job '
'still wins); they hold for that step only, a later continue without them restores the job''s settings. '
'state is at most the type''s max_result_bytes of jsonb (default 1 MiB), nested at most 100 levels; delay '
'and retry_delay 0 s..100 years. Errors: job.lease_lost (RQ004; nothing is written), job.invalid_argument, '
'job.invalid_step, job.invalid_delay, job.invalid_max_attempts, job.state_too_large, job.invalid_state (RQ003).';
