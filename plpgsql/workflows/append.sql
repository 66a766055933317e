-- append_workflow_steps: add steps to a running run.
--
-- steps is an array in the enqueue format (docs/workflows.md). New steps may depend on
-- the run's existing steps and on each other; existing steps never depend on new ones.
-- A new step behaves as if it had been there from the start: an edge to a prerequisite
-- that is still open (blocked, released, waiting_for_external) waits as usual; an edge
-- to a prerequisite that already finished resolves at once, so behind a succeeded
-- prerequisite it counts down, behind a failed, skipped or cancelled one an on_terminal
-- edge counts down and an on_success edge skips the new step (and the skip cascades
-- through the new steps). New steps whose edges all resolved are released in the same
-- transaction, and the run status is recomputed.
--
-- Every append is recorded in workflow_run_mutations with its canonical request
-- ({"steps": <normal form>}: steps sorted by key, dependencies sorted) and the keys it
-- added. With a mutation_key the append is idempotent per (run, key): a retry with the
-- same request returns the first call's mutation (created = false) even after the run
-- finished; a different request raises workflow.append_conflicting_retry. A NULL key
-- appends every time.
--
-- Tenant scoping (util/_access.sql): only runs of the organizations the caller acts for are
-- visible; another organization's run is workflow.run_not_found. A new job step may name its
-- own organization_id, delay or run_at as in enqueue_workflow (the same validation, part of
-- the canonical request); the organization must be one the caller could enqueue a job in
-- (access.organization_denied, 42501, checked once the run is found). Each call that changed
-- the run leaves an audit_log row naming the login role.
--
-- Locks, in order: the run's SHARED lock (its row FOR KEY SHARE) without waiting
-- (workflow.release_conflict when a cancel holds it), the workflow_runs row (FOR NO KEY
-- UPDATE: appends and releases of one run serialize there), then the steps it changes.
--
-- Errors: the validation codes of enqueue_workflow's steps (RQ003), plus
-- workflow.invalid_argument (RQ003); workflow.run_not_found (RQ002);
-- workflow.append_conflicting_retry, workflow.run_finished, workflow.release_conflict (RQ001);
-- access.organization_denied (42501).

CREATE OR REPLACE FUNCTION pgrun.append_workflow_steps(
    run_id uuid,
    mutation_key text,
    steps jsonb,
    organization_id uuid DEFAULT NULL
)
RETURNS TABLE (mutation_id uuid, created boolean, step_keys text[], run_status text)
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
    c_max_steps CONSTANT integer := 10000;
    v_now timestamptz := pgrun.now();
    v_steps jsonb;
    v_request jsonb;
    v_status text;
    v_existing text[];
    v_mutation record;
    v_mutation_id uuid;
    v_keys text[];
    v_bad text;
    v_roots text[];
    v_finished text[];
    v_skipped uuid[] := '{}'::uuid[];
    v_closed uuid[] := '{}'::uuid[];
    v_org uuid;
BEGIN
    IF append_workflow_steps.run_id IS NULL
        OR length(append_workflow_steps.mutation_key) NOT BETWEEN 1 AND 256 THEN
        PERFORM pgrun._raise(
            'workflow.invalid_argument',
            CASE
                WHEN append_workflow_steps.run_id IS NULL THEN 'run_id must not be NULL'
                ELSE format('mutation_key is %s characters long; it must have 1..256',
                    length(append_workflow_steps.mutation_key))
            END,
            'Pass the run id and a mutation_key of 1..256 characters (or NULL for an unkeyed append).'
        );
    END IF;

    -- Shape first (it needs no lock); the checks against the run's steps come later.
    v_steps := pgrun._workflow_check_steps(append_workflow_steps.steps, NULL);
    v_request := jsonb_build_object('steps', v_steps);

    SELECT f.organization_id INTO v_org
    FROM pgrun._workflow_find_run(append_workflow_steps.run_id, append_workflow_steps.organization_id) AS f;
    -- a step's own organization: one the caller could enqueue a job in (access.organization_denied)
    PERFORM pgrun._workflow_check_step_organizations(v_steps);
    PERFORM pgrun._workflow_lock_runs(ARRAY[append_workflow_steps.run_id], 'try_shared');
    SELECT r.status INTO v_status
    FROM pgrun.workflow_runs AS r
    WHERE r.id = append_workflow_steps.run_id
    FOR NO KEY UPDATE OF r;

    IF append_workflow_steps.mutation_key IS NOT NULL THEN
        SELECT m.id, m.request, m.step_keys INTO v_mutation
        FROM pgrun.workflow_run_mutations AS m
        WHERE m.run_id = append_workflow_steps.run_id AND m.mutation_key = append_workflow_steps.mutation_key;
        IF FOUND THEN
            IF v_mutation.request IS DISTINCT FROM v_request THEN
                PERFORM pgrun._raise(
                    'workflow.append_conflicting_retry',
                    format(
                        'mutation_key %L of workflow run %s already names mutation %s, made with a different '
                        'request (differs in: %s)',
                        append_workflow_steps.mutation_key, append_workflow_steps.run_id, v_mutation.id,
                        pgrun._workflow_diff_requests(v_mutation.request, v_request)
                    ),
                    'Resend the original steps unchanged, or use a new mutation_key for different steps.'
                );
            END IF;
            RETURN QUERY SELECT v_mutation.id, false, v_mutation.step_keys, v_status;
            RETURN;
        END IF;
    END IF;

    IF v_status <> 'running' THEN
        PERFORM pgrun._raise(
            'workflow.run_finished',
            format('workflow run %s is %s; steps can only be appended to a running run',
                append_workflow_steps.run_id, v_status),
            'Start a new run for more work.'
        );
    END IF;

    -- Checks against the run's steps: the step limit, key clashes, unknown prerequisites.
    SELECT array_agg(s.step_key ORDER BY s.step_key) INTO v_existing
    FROM pgrun.workflow_steps AS s
    WHERE s.run_id = append_workflow_steps.run_id;
    SELECT array_agg(s.step ->> 'key' ORDER BY s.step ->> 'key') INTO v_keys
    FROM jsonb_array_elements(v_steps) AS s (step);

    IF cardinality(v_existing) + cardinality(v_keys) > c_max_steps THEN
        PERFORM pgrun._raise(
            'workflow.too_many_steps',
            format('%s steps added to the %s the run has; a run has at most %s',
                cardinality(v_keys), cardinality(v_existing), c_max_steps),
            'Split the work into several runs, or batch small units into one step.'
        );
    END IF;

    SELECT min(k.key) INTO v_bad FROM unnest(v_keys) AS k (key) WHERE k.key = ANY (v_existing);
    IF v_bad IS NOT NULL THEN
        PERFORM pgrun._raise(
            'workflow.duplicate_step_key',
            format('step key %L is used more than once (the run already has a step with this key)', v_bad),
            'Step keys are unique within a run.'
        );
    END IF;

    SELECT format('step %s: it depends on %s, which is not a step of the run or of this append',
        x.key, pgrun._shown(x.dep_key))
    INTO v_bad
    FROM (
        SELECT s.step ->> 'key' AS key, d.dep ->> 'step' AS dep_key
        FROM jsonb_array_elements(v_steps) AS s (step)
        CROSS JOIN LATERAL jsonb_array_elements(s.step -> 'depends_on') AS d (dep)
    ) AS x
    WHERE x.dep_key <> ALL (v_existing) AND x.dep_key <> ALL (v_keys)
    ORDER BY x.key, x.dep_key
    LIMIT 1;
    IF v_bad IS NOT NULL THEN
        PERFORM pgrun._raise(
            'workflow.unknown_dependency',
            v_bad,
            'Every dependency must name a step of the same run.'
        );
    END IF;

    INSERT INTO pgrun.workflow_run_mutations AS m (run_id, kind, mutation_key, request, step_keys, created_at)
    VALUES (
        append_workflow_steps.run_id, 'append_steps', append_workflow_steps.mutation_key, v_request, v_keys, v_now
    )
    RETURNING m.id INTO v_mutation_id;

    PERFORM pgrun._workflow_insert_steps(append_workflow_steps.run_id, v_steps, v_mutation_id);

    -- New roots are released; edges behind finished prerequisites resolve as if they had
    -- been there when the prerequisite finished.
    SELECT array_agg(s.step ->> 'key') INTO v_roots
    FROM jsonb_array_elements(v_steps) AS s (step)
    WHERE jsonb_array_length(s.step -> 'depends_on') = 0;
    IF v_roots IS NOT NULL THEN
        -- steps the release closed (a payload over 1 MiB or 100 levels) are settled with the skipped ones
        v_closed := pgrun._workflow_release_steps(
            array_fill(append_workflow_steps.run_id, ARRAY[cardinality(v_roots)]), v_roots
        );
    END IF;

    SELECT array_agg(DISTINCT p.step_key) INTO v_finished
    FROM pgrun.workflow_step_dependencies AS e
    JOIN pgrun.workflow_steps AS p ON p.run_id = e.run_id AND p.step_key = e.depends_on_key
    WHERE e.run_id = append_workflow_steps.run_id
      AND e.step_key = ANY (v_keys)
      AND NOT e.resolved
      AND p.status IN ('succeeded', 'failed', 'skipped', 'cancelled');
    IF v_finished IS NOT NULL THEN
        v_skipped := pgrun._workflow_resolve(
            array_fill(append_workflow_steps.run_id, ARRAY[cardinality(v_finished)]), v_finished
        );
    END IF;
    v_skipped := v_skipped || v_closed;

    -- The new steps are open, minus those skipped at once.
    PERFORM pgrun._workflow_settle_runs(
        append_workflow_steps.run_id || v_skipped,
        cardinality(v_keys) || array_fill(-1, ARRAY[cardinality(v_skipped)])
    );
    SELECT r.status INTO v_status FROM pgrun.workflow_runs AS r WHERE r.id = append_workflow_steps.run_id;
    PERFORM pgrun._audit(
        'workflow_run.appended', v_org, append_workflow_steps.run_id::text,
        jsonb_build_object(
            'mutation_id', v_mutation_id, 'mutation_key', append_workflow_steps.mutation_key, 'step_keys', v_keys
        )
    );

    RETURN QUERY SELECT v_mutation_id, true, v_keys, v_status;
END;
$$;

COMMENT ON FUNCTION pgrun.append_workflow_steps(uuid, text, jsonb, uuid) IS
'Add steps (enqueue_workflow''s step format) to a running run. New steps may depend on existing ones and '
'behave as if they had been there from the start: behind an open prerequisite they wait, behind a finished '
'one the edge resolves at once (on_success behind a failed, skipped or cancelled prerequisite skips the step). '
'Ready new steps are released at once. With mutation_key (1..256 characters) the append is idempotent per '
'run: the same steps (in any order) return the first call''s mutation with created = false, different ones '
'raise workflow.append_conflicting_retry (RQ001); NULL appends every time. Only runs of the organizations the '
'caller acts for are visible; an audit_log row records who appended. Returns mutation_id, created, step_keys (sorted), run_status. '
'Errors: the step validation codes of enqueue_workflow (RQ003), workflow.invalid_argument (RQ003), '
'workflow.run_not_found (RQ002), workflow.run_finished (RQ001: the run is not running), '
'workflow.release_conflict (RQ001: a cancel of the run is in progress; retry), access.organization_denied '
'(42501: a step names an organization the caller may not enqueue in).';
