-- continue_jobs / continue_job: a resumable job finished one step and moves on to the next.
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
-- The finished attempt is recorded on the 'continued' (or 'cancelled') event; a job cancelled
-- here that belongs to a workflow run has its step settled by pgrun._workflow_finish_steps.
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
-- continue_jobs is the batch form, one statement, as complete_jobs is: parallel arrays, one
-- row per job in input order. A lost lease is REPORTED (outcome 'lease_lost', lost_reason),
-- and so is a state the rules refuse while the lease is owned ('state_too_large',
-- 'state_invalid'; the job keeps running under its lease, so the worker can fail it):
-- nothing is written for that job, the rest of the batch is. A bad argument (a step, a
-- delay, a max_attempts) refuses the whole batch before anything is read, as continue_job
-- refuses its call, naming the element. The next steps' queues are notified as an enqueue
-- notifies them (pgrun._enqueue_notify_jobs). continue_job is the one-job form: it checks
-- its arguments and writes through the same private body (pgrun._continue_jobs_apply), and
-- raises job.lease_lost, job.state_too_large and job.invalid_state instead of reporting them.
--
-- Locks: the job rows whose leases the call owns, in id order (FOR UPDATE).
--
-- Errors: job.lease_lost (RQ004, continue_job only); job.invalid_argument (NULL job_id or
-- lease_token, continue_job), job.invalid_batch (continue_jobs: the arrays), job.invalid_step
-- (NULL, blank or over 256 characters), job.invalid_delay (delay or retry_delay outside
-- 0 s..100 years), job.invalid_max_attempts (outside 1..1000), job.state_too_large,
-- job.invalid_state (continue_job only) (RQ003). Every argument is checked before anything
-- is read or written.

-- The argument rules of one continuation, raised as continue_job states them; p_element
-- names the element of a batch of several (continue_jobs), NULL a call's own arguments.
CREATE OR REPLACE FUNCTION pgrun._continue_check(
    p_element bigint,
    p_step text,
    p_delay interval,
    p_max_attempts integer,
    p_retry_delay interval
)
RETURNS void
LANGUAGE plpgsql
IMMUTABLE
AS $$
DECLARE
    v_at text := CASE WHEN p_element IS NOT NULL THEN format(' (element %s)', p_element) ELSE '' END;
BEGIN
    IF p_step IS NULL OR length(p_step) > 256 OR btrim(p_step) = '' THEN
        PERFORM pgrun._raise(
            'job.invalid_step',
            format('next_step%s %s is NULL, blank or longer than 256 characters', v_at, pgrun._shown(p_step)),
            'Name the step the job continues with; to finish the job call complete_job.'
        );
    END IF;
    PERFORM pgrun._check_time('job.invalid_delay', 'delay' || v_at, p_delay);
    IF p_max_attempts NOT BETWEEN 1 AND 1000 THEN
        PERFORM pgrun._raise(
            'job.invalid_max_attempts',
            format('max_attempts%s %s is outside 1..1000', v_at, p_max_attempts),
            'max_attempts is the next step''s attempt budget, the first try included; '
                'NULL gives it the job''s max_attempts.'
        );
    END IF;
    PERFORM pgrun._check_time('job.invalid_delay', 'retry_delay' || v_at, p_retry_delay);
END;
$$;

REVOKE EXECUTE ON FUNCTION pgrun._continue_check(bigint, text, interval, integer, interval) FROM public;

COMMENT ON FUNCTION pgrun._continue_check(bigint, text, interval, integer, interval) IS
'Private: the argument rules of one continuation (next step, delay, max_attempts, retry_delay); raises '
'job.invalid_step, job.invalid_delay or job.invalid_max_attempts (RQ003) naming the batch element when given.';

-- continue_jobs' writes, for arguments its checks (or continue_job's) have passed: the lock,
-- the updates, the events, the answers, the notifications and the workflow hook.
CREATE OR REPLACE FUNCTION pgrun._continue_jobs_apply(
    p_job_ids uuid[],
    p_lease_tokens uuid[],
    p_next_steps text[],
    p_states jsonb[],
    p_delays interval[],
    p_max_attempts integer[],
    p_retry_delays interval[]
)
RETURNS TABLE (job_id uuid, outcome text, run_at timestamptz, lost_reason text)
LANGUAGE plpgsql
VOLATILE
-- Plan stability, as in fail_jobs: every join is a lookup by primary key, whatever the batch
-- size and however stale the statistics.
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
    v_ords bigint[];
    v_workflow_jobs uuid[];
    v_queues text[];
    v_queue_run_ats timestamptz[];
BEGIN
    WITH input AS (
        SELECT
            i.id, i.token, i.ord, i.value_bytes AS state_bytes, i.value_ok AS state_ok,
            p_next_steps[i.ord] AS step, p_states[i.ord] AS state, p_delays[i.ord] AS delay,
            p_max_attempts[i.ord] AS max_attempts, p_retry_delays[i.ord] AS retry_delay
        FROM pgrun._lease_batch_values(p_job_ids, p_lease_tokens, p_states) AS i
    ),

    -- The owned jobs whose state the rules take (no state, one within the smallest cap a
    -- type may set, or within its type's cap; nested at most 100 levels), locked in id order.
    owned AS MATERIALIZED (
        SELECT
            j.id, j.worker_id, j.step AS from_step, j.lease_token, j.started_at,
            j.cancel_requested_at IS NOT NULL AS cancel_requested,
            i.step, i.state, i.delay, i.max_attempts, i.retry_delay, i.ord
        FROM input AS i
        JOIN pgrun.jobs AS j ON j.id = i.id
        WHERE j.lease_token = i.token
          AND j.lease_expires_at > v_now
          AND i.state_ok AND (
              i.state_bytes IS NULL OR i.state_bytes <= 1024
              OR i.state_bytes <= pgrun._job_result_cap(j.job_type)
          )
        ORDER BY j.id
        FOR UPDATE OF j
    ),

    continued AS (
        UPDATE pgrun.jobs AS j
        SET status = CASE WHEN o.cancel_requested THEN 'cancelled' ELSE 'queued' END,
            step = o.step,
            state = coalesce(o.state, j.state),
            run_at = CASE WHEN o.cancel_requested THEN j.run_at ELSE v_now + coalesce(o.delay, interval '0') END,
            attempt = CASE WHEN o.cancel_requested THEN j.attempt ELSE 0 END,
            step_max_attempts = o.max_attempts,
            step_retry_delay = o.retry_delay,
            lease_token = NULL,
            lease_expires_at = NULL,
            finished_at = CASE WHEN o.cancel_requested THEN v_now END,
            updated_at = v_now
        FROM owned AS o
        WHERE j.id = o.id
        RETURNING
            j.id, j.status, j.queue, j.run_at, j.total_attempts, j.cancel_reason, j.workflow_run_id,
            o.worker_id, o.from_step, o.step, o.lease_token, o.started_at, o.ord
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
                    THEN jsonb_build_object('from_step', c.from_step, 'step', c.step, 'run_at', c.run_at)
                ELSE jsonb_build_object('reason', c.cancel_reason, 'step', c.step)
            END,
            v_now,
            CASE WHEN c.status = 'queued' THEN 'continued' ELSE 'cancelled' END,
            c.from_step,
            c.lease_token,
            c.started_at
        FROM continued AS c
    )

    SELECT
        array_agg(c.id ORDER BY c.ord),
        array_agg(CASE WHEN c.status = 'queued' THEN 'continued' ELSE 'cancelled' END ORDER BY c.ord),
        array_agg(CASE WHEN c.status = 'queued' THEN c.run_at END ORDER BY c.ord),
        array_agg(c.ord ORDER BY c.ord),
        array_agg(c.id) FILTER (WHERE c.status = 'cancelled' AND c.workflow_run_id IS NOT NULL),
        array_agg(c.queue) FILTER (WHERE c.status = 'queued'),
        array_agg(c.run_at) FILTER (WHERE c.status = 'queued')
    INTO v_ids, v_outcomes, v_run_ats, v_ords, v_workflow_jobs, v_queues, v_queue_run_ats
    FROM continued AS c;

    -- A job of the batch that did not continue: its lease is lost (lost_reason says why), or
    -- the batch still owns it and its state was over its cap or nested too deep (judged from
    -- the same rows as above). Looked at only when there are some, as in complete_jobs.
    IF coalesce(cardinality(v_ids), 0) < cardinality(p_job_ids) THEN
        SELECT
            coalesce(v_ids, '{}') || array_agg(u.id ORDER BY u.ord),
            coalesce(v_outcomes, '{}') || array_agg(u.outcome ORDER BY u.ord),
            coalesce(v_run_ats, '{}') || array_fill(NULL::timestamptz, ARRAY[count(*)::integer]),
            array_fill(NULL::text, ARRAY[coalesce(cardinality(v_ids), 0)])
                || array_agg(u.lost_reason ORDER BY u.ord),
            coalesce(v_ords, '{}') || array_agg(u.ord ORDER BY u.ord)
        INTO v_ids, v_outcomes, v_run_ats, v_lost_reasons, v_ords
        FROM pgrun._lease_batch_left(
            p_job_ids, p_lease_tokens, p_states, v_ords, v_now,
            'state_too_large', 'state_invalid'
        ) AS u;
    END IF;

    -- The next steps are queued: their queues' idle workers are told when they come due (as
    -- for new jobs), rather than find them at their poll.
    IF v_queues IS NOT NULL THEN
        PERFORM pgrun._enqueue_notify_jobs(v_queues, v_queue_run_ats, v_now);
    END IF;
    -- A pending cancel ended these jobs: settle their workflow steps.
    IF v_workflow_jobs IS NOT NULL THEN
        PERFORM pgrun._workflow_finish_steps(v_workflow_jobs);
    END IF;

    RETURN QUERY
    SELECT r.id, r.outcome, r.run_at, r.lost_reason
    FROM unnest(v_ids, v_outcomes, v_run_ats, v_lost_reasons, v_ords) AS r (id, outcome, run_at, lost_reason, ord)
    ORDER BY r.ord;
END;
$$;

REVOKE EXECUTE ON FUNCTION pgrun._continue_jobs_apply(
    uuid[], uuid[], text[], jsonb[], interval[], integer[], interval[]
) FROM public;

COMMENT ON FUNCTION pgrun._continue_jobs_apply(uuid[], uuid[], text[], jsonb[], interval[], integer[], interval[]) IS
'Private: continue_jobs'' writes for checked arguments (continue_jobs and continue_job call it).';

CREATE OR REPLACE FUNCTION pgrun.continue_jobs(
    job_ids uuid[],
    lease_tokens uuid[],
    next_steps text[],
    states jsonb[] DEFAULT NULL,
    delays interval[] DEFAULT NULL,
    max_attempts integer[] DEFAULT NULL,
    retry_delays interval[] DEFAULT NULL
)
RETURNS TABLE (job_id uuid, outcome text, run_at timestamptz, lost_reason text)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF continue_jobs.next_steps IS NULL THEN
        PERFORM pgrun._raise(
            'job.invalid_step',
            'next_steps is NULL',
            'Name the step each job continues with, one per job; to finish jobs call complete_jobs.'
        );
    END IF;
    PERFORM pgrun._lease_check_batch(
        continue_jobs.job_ids,
        continue_jobs.lease_tokens,
        ARRAY[
            cardinality(continue_jobs.next_steps), cardinality(continue_jobs.states),
            cardinality(continue_jobs.delays), cardinality(continue_jobs.max_attempts),
            cardinality(continue_jobs.retry_delays)
        ]
    );
    -- The first element whose arguments break a rule refuses the batch, as continue_job would
    -- refuse it (the rule itself: pgrun._continue_check, called for that element only), naming
    -- the element in a batch of more than one (continue_job's call is a batch of one).
    PERFORM pgrun._continue_check(
        CASE WHEN cardinality(continue_jobs.job_ids) > 1 THEN a.n END,
        a.step, a.delay, a.max_attempts, a.retry_delay
    )
    FROM (
        SELECT a.n, a.step, a.delay, a.max_attempts, a.retry_delay
        FROM unnest(
            continue_jobs.next_steps, continue_jobs.delays, continue_jobs.max_attempts,
            continue_jobs.retry_delays
        ) WITH ORDINALITY AS a (step, delay, max_attempts, retry_delay, n)
        WHERE a.step IS NULL OR length(a.step) > 256 OR btrim(a.step) = ''
           OR NOT pgrun._time_ok(a.delay) OR a.max_attempts NOT BETWEEN 1 AND 1000
           OR NOT pgrun._time_ok(a.retry_delay)
        ORDER BY a.n
        LIMIT 1
    ) AS a;

    RETURN QUERY
    SELECT c.job_id, c.outcome, c.run_at, c.lost_reason
    FROM pgrun._continue_jobs_apply(
        continue_jobs.job_ids, continue_jobs.lease_tokens, continue_jobs.next_steps, continue_jobs.states,
        continue_jobs.delays, continue_jobs.max_attempts, continue_jobs.retry_delays
    ) AS c;
END;
$$;

COMMENT ON FUNCTION pgrun.continue_jobs(uuid[], uuid[], text[], jsonb[], interval[], integer[], interval[]) IS
'Continue a batch of running jobs in one statement: parallel arrays job_ids, lease_tokens, next_steps '
'(1..256 characters each) and optional states (NULL element = keep the current state), delays, '
'max_attempts and retry_delays, each element as continue_job takes it. Each job whose lease is still owned '
'is queued again at its next step (attempt budget afresh, one continued event), or ends cancelled when a '
'cancel was requested (step and state still stored). Returns one row per input job in input order: outcome '
'continued (with run_at), cancelled, lease_lost (with lost_reason: unknown_job, not_running, '
'token_mismatch, lease_expired; not_held for a caller that never held the job and is not an admin), '
'state_too_large or state_invalid (the state is over the type''s max_result_bytes, or nested more than 100 '
'levels); for the last three nothing was written for that job, and none fails the rest of the batch. '
'The next steps'' queues are notified as an enqueue''s are. Errors: job.invalid_batch, job.invalid_step, '
'job.invalid_delay, job.invalid_max_attempts (RQ003: the whole batch is refused, naming the element).';


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
    v_outcome text;
    v_run_at timestamptz;
    v_lost_reason text;
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

    PERFORM pgrun._continue_check(
        NULL, continue_job.next_step, continue_job.delay, continue_job.max_attempts, continue_job.retry_delay
    );

    -- Its arguments checked here (as continue_jobs checks a batch's), the writes themselves.
    SELECT c.outcome, c.run_at, c.lost_reason INTO v_outcome, v_run_at, v_lost_reason
    FROM pgrun._continue_jobs_apply(
        ARRAY[continue_job.job_id], ARRAY[continue_job.lease_token], ARRAY[continue_job.next_step],
        ARRAY[continue_job.state], ARRAY[continue_job.delay], ARRAY[continue_job.max_attempts],
        ARRAY[continue_job.retry_delay]
    ) AS c;

    IF v_outcome = 'lease_lost' THEN
        PERFORM pgrun._lease_raise_lost(continue_job.job_id, continue_job.lease_token, v_lost_reason);
    ELSIF v_outcome = 'state_too_large' THEN
        SELECT j.job_type, pgrun._job_result_cap(j.job_type) INTO v_job_type, v_cap
        FROM pgrun.jobs AS j
        WHERE j.id = continue_job.job_id;
        PERFORM pgrun._raise(
            'job.state_too_large',
            format(
                'state is %s bytes of jsonb; the limit for job type %s is %s',
                pg_column_size(continue_job.state), v_job_type, v_cap
            ),
            'Keep large data elsewhere and store a reference in the state, or raise the '
                'type''s max_result_bytes (upsert_job_definition, at most 16 MiB).'
        );
    ELSIF v_outcome = 'state_invalid' THEN
        PERFORM pgrun._raise(
            'job.invalid_state',
            'state is nested more than 100 levels deep (arrays and objects)',
            'Flatten the state: pgrun stores JSON nested at most 100 levels.'
        );
    END IF;
    RETURN QUERY SELECT v_outcome, v_run_at;
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
