-- cancel_job: an operator (or the application) stops a job.
--
--   * queued  -> 'cancelled' at once: finished_at set, event 'cancelled'.
--   * running -> the job keeps running but cancel_requested_at is set (event
--                'cancel_requested'); heartbeat_jobs and report_progress tell the worker,
--                and the worker's next terminal write (complete, fail, continue) ends the
--                job 'cancelled' with attempt outcome 'cancelled'. If the worker never
--                writes, the reaper cancels the job once its lease expires. Asking again
--                while a request is pending changes nothing and writes no event.
--   * succeeded, dead, cancelled -> job.not_cancellable.
-- reason (at most 1024 characters kept) is stored in cancel_reason and in the event.
--
-- Tenant scoping (util/_access.sql): only jobs of the organizations the caller acts for are
-- visible; another organization's job is job.not_found, exactly like a job that does not
-- exist. The events name the login role that cancelled (job_events.actor).
--
-- Locks: the one job row (FOR UPDATE).
--
-- Errors: job.not_found (RQ002), job.not_cancellable (RQ001), job.invalid_argument (RQ003,
-- NULL job_id).

CREATE OR REPLACE FUNCTION pgrun.cancel_job(
    job_id uuid,
    reason text DEFAULT NULL,
    organization_id uuid DEFAULT NULL
)
RETURNS text
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_now timestamptz := pgrun.now();
    v_reason text := pgrun._clip(cancel_job.reason, 1024);
    v_job record;
    v_scope record;
BEGIN
    IF cancel_job.job_id IS NULL THEN
        PERFORM pgrun._raise('job.invalid_argument', 'job_id must not be NULL', 'Pass the id of the job to cancel.');
    END IF;

    SELECT c.all_organizations, c.organization_ids, c.untenanted INTO v_scope
    FROM pgrun._caller_scope(cancel_job.organization_id) AS c;

    SELECT j.id, j.status, j.cancel_requested_at, j.total_attempts, j.workflow_run_id
    INTO v_job
    FROM pgrun.jobs AS j
    WHERE j.id = cancel_job.job_id
      AND pgrun._in_scope(j.organization_id, v_scope.all_organizations, v_scope.organization_ids, v_scope.untenanted)
    FOR UPDATE OF j;

    IF NOT FOUND THEN
        PERFORM pgrun._job_raise_not_found(cancel_job.job_id, cancel_job.organization_id);
    END IF;

    IF v_job.status NOT IN ('queued', 'running') THEN
        PERFORM pgrun._raise(
            'job.not_cancellable',
            format('job %s is %s; only queued and running jobs can be cancelled', v_job.id, v_job.status),
            'A finished job cannot be cancelled; requeue_job brings a dead or cancelled job back.'
        );
    END IF;

    IF v_job.status = 'queued' THEN
        WITH cancelled AS (
            UPDATE pgrun.jobs AS j
            SET status = 'cancelled',
                cancel_requested_at = v_now,
                cancel_reason = v_reason,
                finished_at = v_now,
                updated_at = v_now
            WHERE j.id = v_job.id
            RETURNING j.id
        )
        INSERT INTO pgrun.job_events (job_id, event, from_status, to_status, attempt, detail, created_at, actor)
        SELECT c.id, 'cancelled', 'queued', 'cancelled', v_job.total_attempts,
            jsonb_build_object('reason', v_reason), v_now, session_user
        FROM cancelled AS c;
        -- A workflow step's job: settle the step and release dependents.
        IF v_job.workflow_run_id IS NOT NULL THEN
            PERFORM pgrun._workflow_finish_steps(ARRAY[v_job.id]);
        END IF;
        RETURN 'cancelled';
    END IF;

    -- running
    IF v_job.cancel_requested_at IS NULL THEN
        WITH requested AS (
            UPDATE pgrun.jobs AS j
            SET cancel_requested_at = v_now,
                cancel_reason = v_reason,
                updated_at = v_now
            WHERE j.id = v_job.id
            RETURNING j.id, j.worker_id
        )
        INSERT INTO pgrun.job_events (
            job_id, event, from_status, to_status, attempt, worker_id, detail, created_at, actor
        )
        SELECT r.id, 'cancel_requested', 'running', 'running', v_job.total_attempts, r.worker_id,
            jsonb_build_object('reason', v_reason), v_now, session_user
        FROM requested AS r;
    END IF;
    RETURN 'cancel_requested';
END;
$$;

COMMENT ON FUNCTION pgrun.cancel_job(uuid, text, uuid) IS
'Cancel a job. A queued job becomes cancelled at once (returns cancelled). A running job gets a cancel '
'request (returns cancel_requested): heartbeat_jobs and report_progress report it, and the worker''s next '
'complete/fail/continue ends the job cancelled (the reaper does so if its lease expires first); asking '
'again changes nothing. reason is stored (at most 1024 characters). Only jobs of the organizations the '
'caller acts for are visible (organization_id names one). One event per transition (cancelled or '
'cancel_requested), naming the login role in actor. '
'Errors: job.not_found (RQ002; also another organization''s job), job.not_cancellable (RQ001: succeeded, '
'dead or cancelled), job.invalid_argument (RQ003).';
