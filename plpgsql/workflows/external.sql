-- complete_external_step: an outside system closes an external step (an approval, a
-- webhook, a human task).
--
-- The step must be waiting_for_external (its prerequisites are done). It becomes
-- succeeded (succeeded => true, the default) or failed, with output (any JSON value up
-- to 1 MiB nested at most 100 levels (pgrun._json_depth_ok), or NULL) as the step's output, which dependents receive in their payload's
-- "dependencies". Then its edges resolve exactly as when a job step finishes
-- (dependents released or skipped, the skip cascading) and the run status is recomputed.
--
-- Repeating a call that already took effect (same outcome, same output) changes nothing
-- and returns changed = false; a different outcome for a finished step, or a call for a
-- step that is still blocked, is a conflict. A step of a cancelled run is cancelled, so
-- closing it is workflow.step_already_finished.
--
-- Tenant scoping (util/_access.sql): only runs of the organizations the caller acts for are
-- visible; another organization's run is workflow.run_not_found. Each call that changed
-- the run leaves an audit_log row naming the login role.
--
-- Locks, in order: the run's SHARED lock (its row FOR KEY SHARE) without waiting
-- (workflow.release_conflict when a cancel holds it), the workflow_runs row (FOR NO KEY
-- UPDATE), the step row, then the dependents' rows.
--
-- Errors: workflow.invalid_argument, workflow.payload_too_large, workflow.invalid_output,
-- workflow.step_not_external (RQ003); workflow.run_not_found, workflow.step_not_found (RQ002);
-- workflow.step_not_waiting, workflow.step_already_finished, workflow.release_conflict (RQ001).

CREATE OR REPLACE FUNCTION pgrun.complete_external_step(
    run_id uuid,
    step_key text,
    succeeded boolean DEFAULT TRUE,
    output jsonb DEFAULT NULL,
    organization_id uuid DEFAULT NULL
)
RETURNS TABLE (step_status text, run_status text, changed boolean)
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
    c_max_output_bytes CONSTANT integer := 1048576;
    v_now timestamptz := pgrun.now();
    v_step record;
    v_target text;
    v_run_status text;
    v_closed uuid[];
    v_org uuid;
BEGIN
    IF complete_external_step.run_id IS NULL OR complete_external_step.step_key IS NULL
        OR complete_external_step.succeeded IS NULL THEN
        PERFORM pgrun._raise(
            'workflow.invalid_argument',
            'run_id, step_key and succeeded must not be NULL',
            'Pass the run id, the external step''s key and whether it succeeded.'
        );
    END IF;
    IF pg_column_size(complete_external_step.output) > c_max_output_bytes THEN
        PERFORM pgrun._raise(
            'workflow.payload_too_large',
            format('output is %s bytes; the limit is %s',
                pg_column_size(complete_external_step.output), c_max_output_bytes),
            'Store large data elsewhere and pass a reference as the output.'
        );
    END IF;
    IF NOT pgrun._json_depth_ok(complete_external_step.output) THEN
        PERFORM pgrun._raise(
            'workflow.invalid_output',
            'output is nested more than 100 levels deep (arrays and objects)',
            'Flatten the output: pgrun stores JSON nested at most 100 levels.'
        );
    END IF;
    v_target := CASE WHEN complete_external_step.succeeded THEN 'succeeded' ELSE 'failed' END;

    SELECT f.organization_id INTO v_org
    FROM pgrun._workflow_find_run(complete_external_step.run_id, complete_external_step.organization_id) AS f;
    PERFORM pgrun._workflow_lock_runs(ARRAY[complete_external_step.run_id], 'try_shared');
    SELECT r.status INTO v_run_status
    FROM pgrun.workflow_runs AS r
    WHERE r.id = complete_external_step.run_id
    FOR NO KEY UPDATE OF r;

    SELECT s.kind, s.status, s.output INTO v_step
    FROM pgrun.workflow_steps AS s
    WHERE s.run_id = complete_external_step.run_id AND s.step_key = complete_external_step.step_key
    FOR NO KEY UPDATE OF s;
    IF NOT FOUND THEN
        PERFORM pgrun._raise(
            'workflow.step_not_found',
            format('workflow run %s has no step %s',
                complete_external_step.run_id, pgrun._shown(complete_external_step.step_key)),
            'Check the step key (keys are case-sensitive).'
        );
    END IF;
    IF v_step.kind <> 'external' THEN
        PERFORM pgrun._raise(
            'workflow.step_not_external',
            format('step %L of workflow run %s is a job step',
                complete_external_step.step_key, complete_external_step.run_id),
            'A job step finishes when its job does (complete_job, fail_job); only external steps '
                'are closed with complete_external_step.'
        );
    END IF;

    IF v_step.status = 'blocked' THEN
        PERFORM pgrun._raise(
            'workflow.step_not_waiting',
            format('step %L of workflow run %s is still blocked by its prerequisites',
                complete_external_step.step_key, complete_external_step.run_id),
            'Close an external step once it is waiting_for_external (get_workflow_run shows it).'
        );
    ELSIF v_step.status <> 'waiting_for_external' THEN
        IF v_step.status = v_target AND v_step.output IS NOT DISTINCT FROM complete_external_step.output THEN
            RETURN QUERY SELECT v_step.status::text, v_run_status, false;
            RETURN;
        END IF;
        PERFORM pgrun._raise(
            'workflow.step_already_finished',
            format('step %L of workflow run %s is already %s',
                complete_external_step.step_key, complete_external_step.run_id, v_step.status),
            'A finished step cannot be closed again with a different outcome.'
        );
    END IF;

    UPDATE pgrun.workflow_steps AS s
    SET status = v_target,
        output = complete_external_step.output,
        finished_at = v_now,
        updated_at = v_now
    WHERE s.run_id = complete_external_step.run_id AND s.step_key = complete_external_step.step_key;

    v_closed := complete_external_step.run_id
        || pgrun._workflow_resolve(ARRAY[complete_external_step.run_id], ARRAY[complete_external_step.step_key]);
    PERFORM pgrun._workflow_settle_runs(v_closed, array_fill(-1, ARRAY[cardinality(v_closed)]));

    SELECT r.status INTO v_run_status FROM pgrun.workflow_runs AS r WHERE r.id = complete_external_step.run_id;
    PERFORM pgrun._audit(
        'workflow_step.completed', v_org, complete_external_step.run_id::text,
        jsonb_build_object('step_key', complete_external_step.step_key, 'status', v_target)
    );
    RETURN QUERY SELECT v_target, v_run_status, true;
END;
$$;

COMMENT ON FUNCTION pgrun.complete_external_step(uuid, text, boolean, jsonb, uuid) IS
'Close an external step that is waiting_for_external: it becomes succeeded (succeeded => true, the default) '
'or failed, with output (any JSON up to 1 MiB nested at most 100 levels, or NULL) passed on to its dependents; dependents are released '
'or skipped as for a finished job, and the run status is recomputed. Repeating the same call changes nothing '
'(changed = false). Only runs of the organizations the caller acts for are visible; an audit_log row '
'records who closed the step. Returns step_status, '
'run_status, changed. Errors: workflow.invalid_argument, workflow.payload_too_large, '
'workflow.invalid_output, workflow.step_not_external (RQ003); workflow.run_not_found, workflow.step_not_found (RQ002); '
'workflow.step_not_waiting (still blocked), workflow.step_already_finished (finished differently, or '
'cancelled), workflow.release_conflict (a cancel of the run is in progress; retry) (RQ001).';
