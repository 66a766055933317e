-- release_jobs: a worker hands claimed jobs it never started back to the queue.
--
-- A worker that claims ahead of its free slots (the Python worker's prefetch queue) holds
-- jobs whose handlers have not started. When it stops, it hands them back at once instead
-- of leaving their leases to expire (which would cost each job an attempt and the lease's
-- length in waiting). release_jobs(job_ids, lease_tokens) does that in one statement. For
-- each job whose lease is still owned (same token, status running, lease_expires_at >
-- pgrun.now(): the check of every lifecycle write; the token is the credential, as in
-- complete_jobs):
--   * no cancel request -> 'queued' again, as if the claim had not happened for the
--     attempt budget: attempt - 1 (the claim burns no attempt), run_at unchanged (it keeps
--     its place in the claim order), the lease cleared; one 'released' event. The event
--     ends no attempt (outcome NULL): the handler never ran, so job_attempts shows no row
--     for the released claim. It is the one record of that claim (a claim writes no event):
--     its number (attempt), its worker (worker_id) and its time (detail.claimed_at, the
--     job's started_at, which the next claim overwrites). total_attempts is NOT lowered: it
--     numbers claims over the job's life, and a number is never used twice (the released
--     event carries it, and log lines and attempt rows are keyed by it), so the next claim gets the next
--     number and job_attempts skips the released one. worker_id stays (the worker that
--     claimed the job last), started_at too (the latest claim's time), as after a reap.
--     The queues of the jobs put back are notified once each, as by an enqueue
--     (pgrun._enqueue_notify_queues): idle workers take them at once, not at their poll.
--   * a cancel request is pending -> 'cancelled' instead, like every other write that
--     ends a claim after a request (complete_jobs, fail_jobs, continue_job, the reaper):
--     finished_at set, event 'cancelled' recording the attempt with outcome 'cancelled';
--     a workflow step's job settles its step (pgrun._workflow_finish_steps). The cancel
--     wins: handing the job back would only have it claimed and cancelled again.
-- The caller asserts that no handler ran under the lease; the SQL cannot tell.
--
-- A lost lease in a batch is REPORTED, not raised, as in complete_jobs: outcome
-- 'lease_lost' and lost_reason (unknown_job, not_running, token_mismatch, lease_expired;
-- not_held for a caller that never held the job and is not an admin), nothing written for
-- that job. An expired lease is never released: the reaper owns that job now.
--
-- Locks: the batch's owned job rows, in id order (one UPDATE joined to the input sorted by
-- id, by primary key), as complete_jobs.
--
-- Errors: job.invalid_batch (RQ003: the arrays, pgrun._lease_check_batch).

CREATE OR REPLACE FUNCTION pgrun.release_jobs(
    job_ids uuid[],
    lease_tokens uuid[]
)
RETURNS TABLE (job_id uuid, outcome text, lost_reason text)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
-- Plan stability: every join is a lookup by primary key whatever the statistics say, as in
-- complete_jobs; the plan is built once per session.
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
    v_lost_reasons text[];
    v_workflow_jobs uuid[];
    v_queues text[];
BEGIN
    PERFORM pgrun._lease_check_batch(release_jobs.job_ids, release_jobs.lease_tokens);

    WITH input AS (
        SELECT i.id, i.token, i.ord
        FROM unnest(release_jobs.job_ids, release_jobs.lease_tokens) WITH ORDINALITY AS i (id, token, ord)
    ),

    released AS (
        UPDATE pgrun.jobs AS j
        SET status = CASE WHEN j.cancel_requested_at IS NULL THEN 'queued' ELSE 'cancelled' END,
            attempt = CASE WHEN j.cancel_requested_at IS NULL THEN j.attempt - 1 ELSE j.attempt END,
            lease_token = NULL,
            lease_expires_at = NULL,
            finished_at = CASE WHEN j.cancel_requested_at IS NULL THEN NULL ELSE v_now END,
            updated_at = v_now
        FROM (SELECT i.id, i.token, i.ord FROM input AS i ORDER BY i.id) AS o
        WHERE j.id = o.id
          AND j.lease_token = o.token
          AND j.lease_expires_at > v_now
        RETURNING
            j.id, j.status, j.workflow_run_id, j.total_attempts, j.step, j.worker_id, o.token AS lease_token,
            j.started_at, j.cancel_reason, j.queue, o.ord
    ),

    events AS (
        INSERT INTO pgrun.job_events (
            job_id, event, from_status, to_status, attempt, worker_id, detail, created_at,
            outcome, step, lease_token, started_at
        )
        SELECT
            r.id,
            CASE r.status WHEN 'queued' THEN 'released' ELSE 'cancelled' END,
            'running',
            r.status,
            r.total_attempts,
            r.worker_id,
            CASE r.status
                WHEN 'cancelled' THEN jsonb_build_object('reason', r.cancel_reason)
                ELSE jsonb_build_object('claimed_at', r.started_at)
            END,
            v_now,
            -- only the cancelled claim ends an attempt; a released one never ran
            CASE WHEN r.status = 'cancelled' THEN 'cancelled' END,
            CASE WHEN r.status = 'cancelled' THEN r.step END,
            CASE WHEN r.status = 'cancelled' THEN r.lease_token END,
            CASE WHEN r.status = 'cancelled' THEN r.started_at END
        FROM released AS r
    )

    -- No CTE-to-CTE join: released rows come from the UPDATE, the others via a hashed NOT IN.
    SELECT
        array_agg(u.id ORDER BY u.ord),
        array_agg(u.outcome ORDER BY u.ord),
        array_agg(u.lost_reason ORDER BY u.ord),
        array_agg(u.id ORDER BY u.ord) FILTER (WHERE u.workflow_run_id IS NOT NULL),
        array_agg(u.queue) FILTER (WHERE u.outcome = 'released')
    INTO v_ids, v_outcomes, v_lost_reasons, v_workflow_jobs, v_queues
    FROM (
        SELECT
            r.id, CASE r.status WHEN 'queued' THEN 'released' ELSE 'cancelled' END AS outcome,
            NULL::text AS lost_reason,
            CASE WHEN r.status = 'cancelled' THEN r.workflow_run_id END AS workflow_run_id, r.queue, r.ord
        FROM released AS r
        UNION ALL
        SELECT i.id, 'lease_lost', pgrun._lease_lost_reason(i.id, i.token), NULL, NULL, i.ord
        FROM input AS i
        WHERE i.id NOT IN (SELECT r.id FROM released AS r)
    ) AS u;

    -- The released jobs are ready again (run_at as it was, when they were claimed): wake the
    -- idle workers of their queues, as an enqueue does, rather than leave them to the poll.
    IF v_queues IS NOT NULL THEN
        PERFORM pgrun._enqueue_notify_queues(v_queues);
    END IF;

    -- Workflow steps of the jobs that ended cancelled here: settle them.
    IF v_workflow_jobs IS NOT NULL THEN
        PERFORM pgrun._workflow_finish_steps(v_workflow_jobs);
    END IF;

    RETURN QUERY
    SELECT r.id, r.outcome, r.lost_reason
    FROM unnest(v_ids, v_outcomes, v_lost_reasons) WITH ORDINALITY AS r (id, outcome, lost_reason, ord)
    ORDER BY r.ord;
END;
$$;

COMMENT ON FUNCTION pgrun.release_jobs(uuid[], uuid[]) IS
'Hand claimed jobs that were never started back to the queue, in one statement: parallel arrays '
'job_ids and lease_tokens. Each job whose lease is still owned becomes queued again with attempt - 1 '
'(the claim burns no attempt; total_attempts keeps counting claims), run_at unchanged, the lease cleared '
'and one released event naming the claim''s worker, number and time (detail.claimed_at; no attempt row: '
'the handler never ran); the queues of the jobs put back are notified as by an enqueue (channel pgrun_jobs, '
'once per queue), so idle workers take them at once; a job with a pending cancel request '
'ends cancelled instead (attempt outcome cancelled). Returns one row per input job in input order: '
'outcome released, cancelled or lease_lost; for lease_lost, lost_reason is unknown_job, not_running, '
'token_mismatch or lease_expired (not_held for a caller that never held the job and is not an admin) '
'and nothing was written for that job. '
'Errors: job.invalid_batch (RQ003).';
