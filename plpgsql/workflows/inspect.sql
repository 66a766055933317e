-- Inspection of workflow runs: one run in full, or a page of runs. Read-only, no locks
-- beyond the snapshot.
--
-- get_workflow_run(run_id, organization_id) returns one jsonb object: every column of
-- workflow_runs except the enqueue_request snapshot, plus
--   "steps": one object per step, by key: key, kind, status, the job template, its
--            organization_id (NULL: the run's), delay (seconds) and run_at (NULL when not
--            given), the dependency counters, job_id and job_status (the live status of its
--            job: queued, running, ... or NULL, also for a job of an organization outside
--            the caller's scope), output, timestamps, mutation_id;
--   "dependencies": one object per edge, by (step, depends_on): step, depends_on,
--            release_mode, resolved, resolved_at;
--   "mutations": the appends, oldest first: mutation_id, mutation_key, step_keys, created_at.
-- list_workflow_runs(...) pages through runs in ascending id (= creation) order, oldest
-- first: pass the last id of a page as after_id for the next. Filters combine with AND;
-- NULL means no filter.
--
-- Names: a run's id is run_id and an append's mutation_id, as every function that takes or
-- returns one calls it. list_workflow_runs rows (last column), get_workflow_run's object and
-- each of its mutations also keep "id", the same value, for the clients written before;
-- new code reads run_id / mutation_id.
--
-- Tenancy (util/_access.sql): both see only the runs of the organizations the caller acts
-- for (organization_id narrows that to one); another organization's run is
-- workflow.run_not_found, exactly like a missing one.
--
-- Errors: workflow.run_not_found (RQ002); workflow.invalid_status,
-- workflow.invalid_max_rows (RQ003).

CREATE OR REPLACE FUNCTION pgrun.get_workflow_run(run_id uuid, organization_id uuid DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_scope record;
    v_run jsonb;
BEGIN
    SELECT c.all_organizations, c.organization_ids, c.untenanted INTO v_scope
    FROM pgrun._caller_scope(get_workflow_run.organization_id) AS c;

    SELECT
        (to_jsonb(r) - 'enqueue_request')
        || jsonb_build_object(
            'run_id', r.id,
            'steps',
            coalesce(
                (SELECT jsonb_agg(
                    jsonb_build_object(
                        'key', s.step_key,
                        'kind', s.kind,
                        'status', s.status,
                        'job_type', s.job_type,
                        'payload', s.payload,
                        'queue', s.queue,
                        'priority', s.priority,
                        'max_attempts', s.max_attempts,
                        'timeout_seconds', s.timeout_seconds,
                        'organization_id', s.organization_id,
                        'delay', extract(EPOCH FROM s.delay),
                        'run_at', s.run_at,
                        'dependency_count_total', s.dependency_count_total,
                        'dependency_count_pending', s.dependency_count_pending,
                        'job_id', s.job_id,
                        'job_status', j.status,
                        'output', s.output,
                        'error_code', s.error_code,
                        'mutation_id', s.mutation_id,
                        'created_at', s.created_at,
                        'updated_at', s.updated_at,
                        'released_at', s.released_at,
                        'finished_at', s.finished_at
                    )
                    ORDER BY s.step_key
                )
                FROM pgrun.workflow_steps AS s
                -- a step's job may be another organization's (the step named it): its status
                -- only when the caller may see that job
                LEFT JOIN pgrun.jobs AS j ON j.id = s.job_id
                    AND pgrun._in_scope(
                        j.organization_id, v_scope.all_organizations, v_scope.organization_ids, v_scope.untenanted
                    )
                WHERE s.run_id = r.id),
                '[]'::jsonb
            ),
            'dependencies',
            coalesce(
                (SELECT jsonb_agg(
                    jsonb_build_object(
                        'step', e.step_key,
                        'depends_on', e.depends_on_key,
                        'release_mode', e.release_mode,
                        'resolved', e.resolved,
                        'resolved_at', e.resolved_at
                    )
                    ORDER BY e.step_key, e.depends_on_key
                )
                FROM pgrun.workflow_step_dependencies AS e
                WHERE e.run_id = r.id),
                '[]'::jsonb
            ),
            'mutations',
            coalesce(
                (SELECT jsonb_agg(
                    jsonb_build_object(
                        'mutation_id', m.id,
                        'id', m.id,
                        'mutation_key', m.mutation_key,
                        'step_keys', to_jsonb(m.step_keys),
                        'created_at', m.created_at
                    )
                    ORDER BY m.id
                )
                FROM pgrun.workflow_run_mutations AS m
                WHERE m.run_id = r.id),
                '[]'::jsonb
            )
        )
    INTO v_run
    FROM pgrun.workflow_runs AS r
    WHERE r.id = get_workflow_run.run_id
      AND pgrun._in_scope(r.organization_id, v_scope.all_organizations, v_scope.organization_ids, v_scope.untenanted);

    IF v_run IS NULL THEN
        PERFORM pgrun._raise(
            'workflow.run_not_found',
            format(
                'no workflow run %s%s', coalesce(get_workflow_run.run_id::text, 'NULL'),
                CASE WHEN get_workflow_run.organization_id IS NULL THEN ''
                    ELSE format(' in organization %s', get_workflow_run.organization_id) END
            ),
            'Check the run id (and the organization it belongs to).'
        );
    END IF;
    RETURN v_run;
END;
$$;

COMMENT ON FUNCTION pgrun.get_workflow_run(uuid, uuid) IS
'One workflow run as jsonb: its columns (without the idempotency snapshot) with run_id (the run''s id; "id" '
'holds the same value, kept for older clients), "steps" (an array of objects '
'ordered by key, each with key, kind, status, job template, organization_id, delay, run_at, dependency '
'counters, job_id and the job''s live job_status (NULL for a job the caller may not see), output, timestamps), '
'"dependencies" (edges: step, depends_on, release_mode, resolved) and "mutations" (appends, oldest first, '
'each with mutation_id and its alias id). '
'Only runs of the organizations the caller acts for are visible (organization_id names one). '
'Errors: workflow.run_not_found (RQ002), also for a run the caller may not see.';

-- The query behind list_workflow_runs (plpgsql for the argument checks; the public
-- function is SQL because its parameters and result columns share names).
CREATE OR REPLACE FUNCTION pgrun._workflow_list_runs(
    p_status text,
    p_organization_id uuid,
    p_after_id uuid,
    p_max_rows integer
)
RETURNS SETOF pgrun.workflow_runs
LANGUAGE plpgsql
STABLE
AS $$
DECLARE
    v_limit integer := coalesce(p_max_rows, 50);
    v_scope record;
BEGIN
    IF p_status IS NOT NULL AND p_status NOT IN ('running', 'succeeded', 'failed', 'cancelled') THEN
        PERFORM pgrun._raise(
            'workflow.invalid_status',
            format('status %s is not a workflow run status', pgrun._shown(p_status)),
            'Use one of running, succeeded, failed, cancelled, or NULL for all.'
        );
    END IF;
    IF v_limit NOT BETWEEN 1 AND 1000 THEN
        PERFORM pgrun._raise(
            'workflow.invalid_max_rows',
            format('max_rows %s is outside 1..1000', v_limit),
            'Page with after_id instead of asking for more rows at once.'
        );
    END IF;

    SELECT c.all_organizations, c.organization_ids, c.untenanted INTO v_scope
    FROM pgrun._caller_scope(p_organization_id) AS c;

    RETURN QUERY
    SELECT r.*
    FROM pgrun.workflow_runs AS r
    WHERE (p_status IS NULL OR r.status = p_status)
      AND pgrun._in_scope(r.organization_id, v_scope.all_organizations, v_scope.organization_ids, v_scope.untenanted)
      AND (p_after_id IS NULL OR r.id > p_after_id)
    ORDER BY r.id
    LIMIT v_limit;
END;
$$;

REVOKE EXECUTE ON FUNCTION pgrun._workflow_list_runs(text, uuid, uuid, integer) FROM public;

COMMENT ON FUNCTION pgrun._workflow_list_runs(text, uuid, uuid, integer) IS
'Private: validates list_workflow_runs'' arguments and runs its query.';

CREATE OR REPLACE FUNCTION pgrun.list_workflow_runs(
    status text DEFAULT NULL,
    organization_id uuid DEFAULT NULL,
    after_id uuid DEFAULT NULL,
    max_rows integer DEFAULT 50
)
RETURNS TABLE (
    id uuid,
    name text,
    status text,
    organization_id uuid,
    idempotency_key text,
    metadata jsonb,
    open_step_count integer,
    cancel_reason text,
    created_at timestamptz,
    updated_at timestamptz,
    finished_at timestamptz,
    run_id uuid
)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT
        r.id, r.name, r.status, r.organization_id, r.idempotency_key, r.metadata, r.open_step_count,
        r.cancel_reason, r.created_at, r.updated_at, r.finished_at, r.id
    FROM pgrun._workflow_list_runs(
        list_workflow_runs.status, list_workflow_runs.organization_id, list_workflow_runs.after_id,
        list_workflow_runs.max_rows
    ) AS r
    ORDER BY r.id
$$;

COMMENT ON FUNCTION pgrun.list_workflow_runs(text, uuid, uuid, integer) IS
'A page of workflow runs in ascending id (= creation) order, oldest first: pass the last id you got as '
'after_id for the next page. Filters (NULL = any): status (running, succeeded, failed, cancelled), '
'organization_id (one of the caller''s organizations; only those are listed). max_rows 1..1000, default 50. Returns the run columns; get_workflow_run '
'has the steps; open_step_count is how many steps are not finished yet; the run''s id is run_id (the last '
'column) and also id (the first), kept for older clients. Errors: workflow.invalid_status, '
'workflow.invalid_max_rows (RQ003).';
