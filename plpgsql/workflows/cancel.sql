-- cancel_workflow_run: stop a whole run.
--
-- Every step that is not terminal (blocked, released, waiting_for_external) becomes
-- cancelled. The run's queued jobs become cancelled (event 'cancelled'); its running jobs
-- get a cancel request (cancel_requested_at, event 'cancel_requested'): cancel_job's own
-- pgrun._job_cancel (jobs/cancel.sql), so heartbeat_jobs tells their workers and the
-- worker's next write ends them. The run becomes cancelled with the reason (at most 1024 characters kept).
-- A job that finishes after the cancel records its own outcome on its job row, but its
-- step stays cancelled and nothing is released (pgrun._workflow_finish_steps ignores
-- runs that are not running).
--
-- Cancelling a cancelled run changes nothing (changed = false); a succeeded or failed
-- run cannot be cancelled (workflow.run_finished).
--
-- Locks, in order (plpgsql/workflows/_lock.sql):
--   1. the run's unfinished jobs rows (queued, running), ORDER BY id, FOR UPDATE: waits
--      for any completion holding one of them, which then finishes its release first;
--   2. the EXCLUSIVE run lock (its row FOR UPDATE), waiting for releases in progress (they hold the
--      shared lock and never wait for us). That lock is taken inside a subtransaction:
--      if, once it is held, the run has unfinished jobs that step 1 did not lock
--      (a release that was in progress created them), the subtransaction rolls back,
--      which gives the row lock up again, and the loop goes back to step 1. So the
--      exclusive lock is only ever held together with every unfinished job row, and a
--      completion waiting for the shared lock never holds a row we wait for;
--   3. the workflow_runs row, then the step rows.
-- Tenant scoping (util/_access.sql): only runs of the organizations the caller acts for are
-- visible; another organization's run is workflow.run_not_found. Each call that changed
-- the run leaves an audit_log row naming the login role.
--
-- Errors: workflow.invalid_argument (RQ003), workflow.run_not_found (RQ002),
-- workflow.run_finished (RQ001), workflow.release_conflict (RQ001: jobs kept appearing
-- for 100 rounds; retry).

CREATE OR REPLACE FUNCTION pgrun.cancel_workflow_run(
    run_id uuid,
    reason text DEFAULT NULL,
    organization_id uuid DEFAULT NULL
)
RETURNS TABLE (
    status text,
    changed boolean,
    cancelled_steps integer,
    cancelled_jobs integer,
    cancel_requested_jobs integer
)
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
    c_max_rounds CONSTANT integer := 100;
    v_now timestamptz := pgrun.now();
    v_reason text := pgrun._clip(cancel_workflow_run.reason, 1024);
    v_status text;
    v_locked uuid[];
    v_round integer := 0;
    v_settled boolean := false;
    v_steps integer;
    v_cancelled integer;
    v_requested integer;
    v_org uuid;
BEGIN
    IF cancel_workflow_run.run_id IS NULL THEN
        PERFORM pgrun._raise(
            'workflow.invalid_argument',
            'run_id must not be NULL',
            'Pass the id of the run to cancel.'
        );
    END IF;

    SELECT f.status, f.organization_id INTO v_status, v_org
    FROM pgrun._workflow_find_run(cancel_workflow_run.run_id, cancel_workflow_run.organization_id) AS f;
    IF v_status = 'cancelled' THEN
        RETURN QUERY SELECT v_status, false, 0, 0, 0;
        RETURN;
    END IF;

    WHILE NOT v_settled LOOP
        v_round := v_round + 1;
        IF v_round > c_max_rounds THEN
            PERFORM pgrun._raise(
                'workflow.release_conflict',
                format('workflow run %s kept creating jobs while it was being cancelled',
                    cancel_workflow_run.run_id),
                'Retry the cancel.'
            );
        END IF;

        -- 1. The unfinished job rows, in id order.
        SELECT coalesce(array_agg(j.id), '{}') INTO v_locked
        FROM (
            SELECT jb.id
            FROM pgrun.jobs AS jb
            WHERE jb.workflow_run_id = cancel_workflow_run.run_id AND jb.status IN ('queued', 'running')
            ORDER BY jb.id
            FOR UPDATE OF jb
        ) AS j;

        -- 2. The exclusive lock, kept only if no unfinished job escaped step 1.
        BEGIN
            PERFORM pgrun._workflow_lock_runs(ARRAY[cancel_workflow_run.run_id], 'exclusive');
            IF EXISTS (
                SELECT FROM pgrun.jobs AS jb
                WHERE jb.workflow_run_id = cancel_workflow_run.run_id
                  AND jb.status IN ('queued', 'running')
                  AND jb.id <> ALL (v_locked)
            ) THEN
                PERFORM pgrun._raise('workflow.cancel_retry');
            END IF;
            v_settled := true;
        EXCEPTION WHEN SQLSTATE 'RQ005' THEN
            IF SQLERRM <> 'workflow.cancel_retry' THEN
                RAISE;
            END IF;
        END;
    END LOOP;

    -- 3. The run row, then the steps.
    SELECT r.status INTO v_status
    FROM pgrun.workflow_runs AS r
    WHERE r.id = cancel_workflow_run.run_id
    FOR NO KEY UPDATE OF r;
    IF v_status = 'cancelled' THEN
        RETURN QUERY SELECT v_status, false, 0, 0, 0;
        RETURN;
    ELSIF v_status <> 'running' THEN
        PERFORM pgrun._raise(
            'workflow.run_finished',
            format('workflow run %s already %s', cancel_workflow_run.run_id, v_status),
            'A finished run cannot be cancelled.'
        );
    END IF;

    WITH cancelled AS (
        UPDATE pgrun.workflow_steps AS s
        SET status = 'cancelled',
            finished_at = v_now,
            updated_at = v_now
        WHERE s.run_id = cancel_workflow_run.run_id
          AND s.status IN ('blocked', 'released', 'waiting_for_external')
        RETURNING s.step_key
    )

    SELECT count(*)::integer INTO v_steps FROM cancelled;

    SELECT c.cancelled, c.requested INTO v_cancelled, v_requested
    FROM pgrun._job_cancel(
        v_locked, v_reason, jsonb_build_object('reason', v_reason, 'workflow_run_id', cancel_workflow_run.run_id)
    ) AS c;

    UPDATE pgrun.workflow_runs AS r
    SET status = 'cancelled',
        open_step_count = 0,
        cancel_reason = v_reason,
        finished_at = v_now,
        updated_at = v_now
    WHERE r.id = cancel_workflow_run.run_id;

    PERFORM pgrun._audit(
        'workflow_run.cancelled', v_org, cancel_workflow_run.run_id::text,
        jsonb_build_object(
            'reason', v_reason, 'cancelled_steps', v_steps, 'cancelled_jobs', v_cancelled,
            'cancel_requested_jobs', v_requested
        )
    );
    RETURN QUERY SELECT 'cancelled'::text, true, v_steps, v_cancelled, v_requested;
END;
$$;

COMMENT ON FUNCTION pgrun.cancel_workflow_run(uuid, text, uuid) IS
'Cancel a running workflow run: every unfinished step becomes cancelled, queued jobs are cancelled, running '
'jobs get a cancel request (as cancel_job does; heartbeat_jobs reports it), the run becomes cancelled with '
'reason (at most 1024 characters). A job finishing afterwards keeps its own outcome but releases nothing. '
'Cancelling a cancelled run changes nothing (changed = false). Only runs of the organizations the caller '
'acts for are visible; an audit_log row records who cancelled. Returns status, changed, cancelled_steps, cancelled_jobs, '
'cancel_requested_jobs. Errors: workflow.invalid_argument (RQ003), workflow.run_not_found (RQ002), '
'workflow.run_finished (RQ001: already succeeded or failed), workflow.release_conflict (RQ001: retry).';
