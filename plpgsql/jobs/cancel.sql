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
--
-- Private helpers, shared with cancel_workflow_run (workflows/cancel.sql) and requeue_job:
-- * _job_lock(job_id, organization_id): the job row, locked FOR UPDATE, when the caller may
--   see it; else job.not_found (RQ002), the same for a job of another organization as for
--   no job at all.
-- * _job_cancel(job_ids, reason, detail): THE cancel of jobs the caller has locked: each
--   queued one becomes cancelled (event 'cancelled'), each running one without a pending
--   request gets one (cancel_requested_at, event 'cancel_requested'); others are left
--   alone. reason goes in cancel_reason, detail in the events (naming the login role).
--   Returns how many were cancelled and how many got a request. Raises nothing.

-- The job row for a call that changes one job: locked, and only when the caller may see it.
CREATE OR REPLACE FUNCTION pgrun._job_lock(p_job_id uuid, p_organization_id uuid)
RETURNS pgrun.jobs
LANGUAGE plpgsql
VOLATILE
AS $$
DECLARE
    v_scope record;
    v_job pgrun.jobs;
BEGIN
    SELECT c.all_organizations, c.organization_ids, c.untenanted INTO v_scope
    FROM pgrun._caller_scope(p_organization_id) AS c;

    SELECT j.* INTO v_job
    FROM pgrun.jobs AS j
    WHERE j.id = p_job_id
      AND pgrun._in_scope(j.organization_id, v_scope.all_organizations, v_scope.organization_ids, v_scope.untenanted)
    FOR UPDATE OF j;

    IF NOT FOUND THEN
        PERFORM pgrun._job_raise_not_found(p_job_id, p_organization_id);
    END IF;
    RETURN v_job;
END;
$$;

REVOKE EXECUTE ON FUNCTION pgrun._job_lock(uuid, uuid) FROM public;

COMMENT ON FUNCTION pgrun._job_lock(uuid, uuid) IS
'Private: the job row, locked FOR UPDATE, when the caller may see it; raises job.not_found (RQ002) otherwise.';

-- Cancel jobs the caller holds locked (cancel_job, cancel_workflow_run): queued -> cancelled,
-- running -> cancel requested (once); one event each, with p_detail and the login role.
CREATE OR REPLACE FUNCTION pgrun._job_cancel(
    p_job_ids uuid[],
    p_reason text,
    p_detail jsonb,
    OUT cancelled integer,
    OUT requested integer
)
LANGUAGE plpgsql
VOLATILE
-- Each job by primary key whoever calls it, whatever the statistics (a table analyzed while
-- small looks like one a Seq Scan reads at once).
SET enable_seqscan = off
SET enable_bitmapscan = off
SET jit = off
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    v_now timestamptz := pgrun.now();
BEGIN
    WITH done AS (
        UPDATE pgrun.jobs AS j
        SET status = 'cancelled',
            cancel_requested_at = v_now,
            cancel_reason = p_reason,
            finished_at = v_now,
            updated_at = v_now
        -- queued, spelt by the CHECK constraints (no end, no lease): a status test let the
        -- planner, with statistics taken while few jobs were queued, read every queued job
        -- (jobs_claim_idx) to find a run's few; each job is a primary-key lookup instead
        WHERE j.id = ANY (p_job_ids) AND j.finished_at IS NULL AND j.lease_expires_at IS NULL
        RETURNING j.id, j.total_attempts
    ),

    events AS (
        INSERT INTO pgrun.job_events (job_id, event, from_status, to_status, attempt, detail, created_at, actor)
        SELECT d.id, 'cancelled', 'queued', 'cancelled', d.total_attempts, p_detail, v_now, session_user
        FROM done AS d
    )

    SELECT count(*)::integer INTO cancelled FROM done;

    WITH asked AS (
        UPDATE pgrun.jobs AS j
        SET cancel_requested_at = v_now,
            cancel_reason = p_reason,
            updated_at = v_now
        -- running, spelt likewise (jobs_lease_check), which jobs_lease_idx cannot serve
        WHERE j.id = ANY (p_job_ids) AND j.lease_expires_at IS NOT NULL AND j.cancel_requested_at IS NULL
        RETURNING j.id, j.total_attempts, j.worker_id
    ),

    events AS (
        INSERT INTO pgrun.job_events (
            job_id, event, from_status, to_status, attempt, worker_id, detail, created_at, actor
        )
        SELECT a.id, 'cancel_requested', 'running', 'running', a.total_attempts, a.worker_id, p_detail, v_now,
            session_user
        FROM asked AS a
    )

    SELECT count(*)::integer INTO requested FROM asked;
END;
$$;

REVOKE EXECUTE ON FUNCTION pgrun._job_cancel(uuid[], text, jsonb) FROM public;

COMMENT ON FUNCTION pgrun._job_cancel(uuid[], text, jsonb) IS
'Private: cancel locked jobs (queued -> cancelled, running -> cancel requested once), one event each; '
'returns how many of each.';

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
-- Generic plans, built once per session for its statements and those of the helpers it calls:
-- re-planned on every call, as plpgsql does while a custom plan looks cheaper, they cost more
-- than running them (docs/performance.md, "Generic plans off the worker's path").
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    v_reason text := pgrun._clip(cancel_job.reason, 1024);
    v_job pgrun.jobs;
BEGIN
    IF cancel_job.job_id IS NULL THEN
        PERFORM pgrun._raise('job.invalid_argument', 'job_id must not be NULL', 'Pass the id of the job to cancel.');
    END IF;

    v_job := pgrun._job_lock(cancel_job.job_id, cancel_job.organization_id);

    IF v_job.status NOT IN ('queued', 'running') THEN
        PERFORM pgrun._raise(
            'job.not_cancellable',
            format('job %s is %s; only queued and running jobs can be cancelled', v_job.id, v_job.status),
            'A finished job cannot be cancelled; requeue_job brings a dead or cancelled job back.'
        );
    END IF;

    PERFORM pgrun._job_cancel(ARRAY[v_job.id], v_reason, jsonb_build_object('reason', v_reason));
    IF v_job.status = 'running' THEN
        RETURN 'cancel_requested';
    END IF;
    -- A workflow step's job: settle the step and release dependents.
    IF v_job.workflow_run_id IS NOT NULL THEN
        PERFORM pgrun._workflow_finish_steps(ARRAY[v_job.id]);
    END IF;
    RETURN 'cancelled';
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
