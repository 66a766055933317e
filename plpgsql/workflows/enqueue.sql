-- enqueue_workflow: start a run of a DAG of steps.
--
-- spec is a JSON object (docs/workflows.md): steps (required, a non-empty array),
-- name, idempotency_key, organization_id, metadata (an object). The steps are validated
-- and normalized by pgrun._workflow_check_steps (plpgsql/workflows/_validate.sql), then
-- stored with their edges; each step's dependency_count_total and
-- dependency_count_pending start at its number of dependencies. Root steps (no
-- dependencies) are released at once by pgrun._workflow_release_steps: a job step
-- becomes a queued job (one INSERT for all roots, no job_events row, one
-- pg_notify per queue), an external step becomes waiting_for_external. The run is
-- 'running' (it has at least one step, and none is terminal yet).
--
-- Tenancy: the run is stamped with the organization the caller acts for (the one named, or the
-- only one its role is bound to; another is access.organization_denied, 42501), and so are
-- the jobs its steps make, except a job step that names its own organization_id: its job is
-- stamped with that one, which must be an organization the caller could enqueue a job in
-- directly (pgrun._workflow_check_step_organizations; otherwise access.organization_denied,
-- whatever the run's organization). So a run without an organization may have such steps
-- only for a caller that may write in those organizations (admins, any-organization roles).
--
-- Idempotency: with an idempotency_key the run is unique per (name, organization_id, key)
-- (sql/0012): two kinds of workflow may both use a natural key, and a run without a name is a
-- kind of its own (NULL takes part as '', the organization as the nil uuid, in the unique
-- index workflow_runs_idempotency_name_idx and in the lookup after a conflict alike).
-- The canonical request snapshot stored in workflow_runs.enqueue_request is
-- {"name", "metadata", "steps"} with the steps in normal form: sorted by key, defaults
-- filled in, dependencies sorted. A retry whose snapshot equals the stored one returns
-- the existing run (created = false) whatever it became since; any difference (a
-- payload, a priority, an edge, a release mode or the metadata; a different name is
-- another run) raises workflow.enqueue_conflicting_retry. The order of steps and of
-- dependencies never matters. As for jobs, the comparison needs a snapshot newer than the conflicting
-- insert, which only READ COMMITTED gives: keyed enqueue refuses other isolation levels.
--
-- Limits: a spec of at most 16 MiB, metadata of at most 64 KiB nested at most 100 levels
-- (pgrun._json_depth_ok; deeper is workflow.invalid_spec), and those of
-- _workflow_check_steps (10,000 steps, 100,000 dependencies, 1 MiB per payload, 100 levels).
--
-- Locks: the new rows only (nobody else can see the run before commit); a keyed insert
-- waits for a concurrent uncommitted insert of the same key. No advisory lock.
--
-- Errors: every validation code of _workflow_check_steps, workflow.invalid_spec,
-- workflow.spec_too_large, workflow.payload_too_large (metadata) (RQ003);
-- workflow.enqueue_conflicting_retry (RQ001);
-- workflow.enqueue_idempotency_unsupported_isolation (RQ006); access.organization_denied
-- (42501), access.organization_required (RQ003);
-- workflow.enqueue_idempotency_race (40001: the keyed run vanished between the conflict
-- and the read; retry).

CREATE OR REPLACE FUNCTION pgrun.enqueue_workflow(spec jsonb)
RETURNS TABLE (run_id uuid, created boolean, status text)
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
    c_max_spec_bytes CONSTANT integer := 16777216;
    c_max_metadata_bytes CONSTANT integer := 65536;
    c_fields CONSTANT text[] := ARRAY['name', 'idempotency_key', 'organization_id', 'metadata', 'steps'];
    c_no_org CONSTANT uuid := '00000000-0000-0000-0000-000000000000'::uuid;
    v_now timestamptz := pgrun.now();
    v_name text;
    v_key text;
    v_org uuid;
    v_metadata jsonb;
    v_steps jsonb;
    v_request jsonb;
    v_run_id uuid;
    v_existing_id uuid;
    v_existing_status text;
    v_closed uuid[];
    v_status text;
    v_existing_request jsonb;
    v_roots text[];
    v_problem text;
    v_allowed boolean;
BEGIN
    IF enqueue_workflow.spec IS NULL OR jsonb_typeof(enqueue_workflow.spec) <> 'object' THEN
        PERFORM pgrun._raise(
            'workflow.invalid_spec',
            format('spec is %s, not a JSON object', coalesce('a JSON ' || jsonb_typeof(enqueue_workflow.spec), 'NULL')),
            'Pass {"steps": [...], ...} as described in docs/workflows.md.'
        );
    END IF;
    IF pg_column_size(enqueue_workflow.spec) > c_max_spec_bytes THEN
        PERFORM pgrun._raise(
            'workflow.spec_too_large',
            format('spec is %s bytes; the limit is %s', pg_column_size(enqueue_workflow.spec), c_max_spec_bytes),
            'Store large data elsewhere and pass references in the payloads.'
        );
    END IF;

    v_problem := CASE
        WHEN enqueue_workflow.spec - c_fields <> '{}'::jsonb THEN format(
            'unknown fields %s',
            pgrun._clip((SELECT string_agg(k.key, ', ' ORDER BY k.key)
             FROM jsonb_object_keys(enqueue_workflow.spec) AS k (key)
             WHERE k.key <> ALL (c_fields)), 200)
        )
        WHEN coalesce(jsonb_typeof(enqueue_workflow.spec -> 'name'), 'null') NOT IN ('null', 'string')
            OR length(enqueue_workflow.spec ->> 'name') NOT BETWEEN 1 AND 200
            THEN format('name %s is not a string of 1..200 characters', left((enqueue_workflow.spec -> 'name')::text, 200))
        WHEN coalesce(jsonb_typeof(enqueue_workflow.spec -> 'idempotency_key'), 'null') NOT IN ('null', 'string')
            OR length(enqueue_workflow.spec ->> 'idempotency_key') NOT BETWEEN 1 AND 256
            THEN format(
                'idempotency_key %s is not a string of 1..256 characters',
                left((enqueue_workflow.spec -> 'idempotency_key')::text, 200)
            )
        WHEN coalesce(jsonb_typeof(enqueue_workflow.spec -> 'organization_id'), 'null') NOT IN ('null', 'string')
            -- length before the patterns: a uuid string has at most 36 characters
            OR length(enqueue_workflow.spec ->> 'organization_id') > 36
            OR enqueue_workflow.spec ->> 'organization_id' !~* '^[0-9a-f]{8}-?([0-9a-f]{4}-?){3}[0-9a-f]{12}$'
            OR enqueue_workflow.spec ->> 'organization_id' ~ '^[0-]*$'
            THEN format(
                'organization_id %s is not a usable uuid',
                left((enqueue_workflow.spec -> 'organization_id')::text, 100)
            )
        WHEN coalesce(jsonb_typeof(enqueue_workflow.spec -> 'metadata'), 'null') NOT IN ('null', 'object')
            THEN format('metadata is a JSON %s, not an object', jsonb_typeof(enqueue_workflow.spec -> 'metadata'))
        WHEN NOT pgrun._json_depth_ok(enqueue_workflow.spec -> 'metadata')
            THEN 'metadata is nested more than 100 levels deep (arrays and objects)'
    END;
    IF v_problem IS NOT NULL THEN
        PERFORM pgrun._raise(
            'workflow.invalid_spec',
            v_problem,
            'A spec has steps and optionally name (1..200 characters), idempotency_key (1..256), '
                'organization_id (a uuid) and metadata (an object nested at most 100 levels); see '
                'docs/workflows.md.'
        );
    END IF;

    v_name := enqueue_workflow.spec ->> 'name';
    v_key := enqueue_workflow.spec ->> 'idempotency_key';
    -- Tenancy: the run (and every job it makes) is stamped with the caller's organization.
    SELECT o.organization_id, o.allowed INTO v_org, v_allowed
    FROM pgrun._caller_organization((enqueue_workflow.spec ->> 'organization_id')::uuid) AS o;
    IF NOT v_allowed THEN
        PERFORM pgrun._raise_organization_denied(v_org);
    END IF;
    v_metadata := coalesce(nullif(enqueue_workflow.spec -> 'metadata', 'null'::jsonb), '{}'::jsonb);
    IF pg_column_size(v_metadata) > c_max_metadata_bytes THEN
        PERFORM pgrun._raise(
            'workflow.payload_too_large',
            format('metadata is %s bytes; the limit is %s', pg_column_size(v_metadata), c_max_metadata_bytes),
            'Keep run metadata small (labels, ids); put data in step payloads or elsewhere.'
        );
    END IF;

    v_steps := pgrun._workflow_check_steps(enqueue_workflow.spec -> 'steps', '{}');
    -- a step's own organization: one the caller could enqueue a job in (access.organization_denied)
    PERFORM pgrun._workflow_check_step_organizations(v_steps);
    v_request := jsonb_build_object('name', v_name, 'metadata', v_metadata, 'steps', v_steps);

    -- READ UNCOMMITTED is READ COMMITTED in PostgreSQL: both see the concurrent insert.
    IF v_key IS NOT NULL
        AND current_setting('transaction_isolation') NOT IN ('read committed', 'read uncommitted') THEN
        PERFORM pgrun._raise(
            'workflow.enqueue_idempotency_unsupported_isolation',
            format(
                'a keyed workflow enqueue ran at isolation level %s', current_setting('transaction_isolation')
            ),
            'Run keyed enqueues in a READ COMMITTED transaction (the default), or leave out the '
                'idempotency key.'
        );
    END IF;

    INSERT INTO pgrun.workflow_runs AS r (
        name, status, organization_id, idempotency_key, enqueue_request, metadata, open_step_count,
        created_at, updated_at
    )
    VALUES (
        v_name, 'running', v_org, v_key, CASE WHEN v_key IS NOT NULL THEN v_request END, v_metadata,
        jsonb_array_length(v_steps), v_now, v_now
    )
    ON CONFLICT (
        coalesce(name, ''), coalesce(organization_id, '00000000-0000-0000-0000-000000000000'::uuid), idempotency_key
    )
    WHERE idempotency_key IS NOT NULL
    DO NOTHING
    RETURNING r.id INTO v_run_id;

    IF v_run_id IS NULL THEN
        SELECT r.id, r.status, r.enqueue_request
        INTO v_existing_id, v_existing_status, v_existing_request
        FROM pgrun.workflow_runs AS r
        WHERE coalesce(r.name, '') = coalesce(v_name, '')
          AND coalesce(r.organization_id, c_no_org) = coalesce(v_org, c_no_org)
          AND r.idempotency_key = v_key;
        IF v_existing_id IS NULL THEN
            PERFORM pgrun._raise(
                'workflow.enqueue_idempotency_race',
                'the run holding this idempotency key was deleted while the call ran',
                'Retry the call.'
            );
        END IF;
        IF v_existing_request IS DISTINCT FROM v_request THEN
            PERFORM pgrun._raise(
                'workflow.enqueue_conflicting_retry',
                format(
                    'the idempotency key already names workflow run %s, enqueued with a different request '
                    '(differs in: %s)',
                    v_existing_id,
                    pgrun._workflow_diff_requests(v_existing_request, v_request)
                ),
                'Resend the original request unchanged, or use a new idempotency key for a '
                    'different request.'
            );
        END IF;
        RETURN QUERY SELECT v_existing_id, false, v_existing_status;
        RETURN;
    END IF;

    PERFORM pgrun._workflow_insert_steps(v_run_id, v_steps, NULL);

    SELECT array_agg(s.step ->> 'key') INTO v_roots
    FROM jsonb_array_elements(v_steps) AS s (step)
    WHERE jsonb_array_length(s.step -> 'depends_on') = 0;
    -- a non-empty DAG always has a root. A root whose payload the release refused (over 1 MiB
    -- with its "dependencies" key) failed at once: close it, and what it skipped.
    v_closed := pgrun._workflow_release_steps(array_fill(v_run_id, ARRAY[cardinality(v_roots)]), v_roots);
    IF cardinality(v_closed) > 0 THEN
        PERFORM pgrun._workflow_settle_runs(v_closed, array_fill(-1, ARRAY[cardinality(v_closed)]));
        SELECT r.status INTO v_status FROM pgrun.workflow_runs AS r WHERE r.id = v_run_id;
        RETURN QUERY SELECT v_run_id, true, v_status;
        RETURN;
    END IF;

    RETURN QUERY SELECT v_run_id, true, 'running'::text;
END;
$$;

COMMENT ON FUNCTION pgrun.enqueue_workflow(jsonb) IS
'Start a workflow run from spec: {"steps": [...], "name", "idempotency_key", "organization_id", "metadata"} '
'(docs/workflows.md). Steps are validated (unique non-empty keys, known dependencies, no self-edges, no '
'cycles, job steps name a job_type, external steps carry no job template, release_mode on_success or '
'on_terminal, at most 10,000 steps, 1 MiB per payload, 16 MiB per spec, payloads and metadata nested at '
'most 100 levels) and stored with their edges; root '
'steps are released at once (job steps become queued jobs, external steps wait for complete_external_step). '
'With idempotency_key the run is unique per (name, organization_id, key): the same request (steps and '
'dependencies in any order) returns the existing run with created = false, a different one raises '
'workflow.enqueue_conflicting_retry (RQ001); keyed calls need READ COMMITTED '
'(workflow.enqueue_idempotency_unsupported_isolation, RQ006). Returns run_id, created, status. '
'Input errors (RQ003): workflow.invalid_spec, workflow.spec_too_large, workflow.too_many_steps, '
'workflow.invalid_step, workflow.invalid_step_key, workflow.duplicate_step_key, workflow.missing_job_type, '
'workflow.external_step_with_job_template, workflow.payload_too_large, workflow.reserved_payload_key, '
'workflow.too_many_dependencies, workflow.invalid_dependency, workflow.invalid_release_mode, '
'workflow.self_dependency, workflow.unknown_dependency, workflow.duplicate_dependency, '
'workflow.cycle_detected. The run belongs to the organization the caller acts for (spec organization_id, '
'or the only one its role is bound to); a job step may name its own organization_id (its job''s), which must '
'be one the caller could enqueue a job in: access.organization_denied (42501: an organization the caller may not act for), access.organization_required (RQ003: the caller acts for several and named none). '
'A job step may also name delay (seconds) or run_at: its job is queued with run_at = release time + delay, or '
'greatest(release time, run_at).';

-- Store normalized steps (the output of _workflow_check_steps) and their edges for a run,
-- every step blocked with dependency_count_pending = its number of dependencies.
CREATE OR REPLACE FUNCTION pgrun._workflow_insert_steps(p_run_id uuid, p_steps jsonb, p_mutation_id uuid)
RETURNS void
LANGUAGE plpgsql
VOLATILE
AS $$
DECLARE
    v_now timestamptz := pgrun.now();
BEGIN
    INSERT INTO pgrun.workflow_steps (
        run_id, step_key, kind, status, job_type, payload, queue, priority, max_attempts, timeout_seconds,
        organization_id, delay, run_at, dependency_count_total, dependency_count_pending, mutation_id,
        created_at, updated_at
    )
    SELECT
        p_run_id,
        s.step ->> 'key',
        s.step ->> 'kind',
        'blocked',
        s.step ->> 'job_type',
        nullif(s.step -> 'payload', 'null'::jsonb),
        s.step ->> 'queue',
        (s.step ->> 'priority')::integer,
        (s.step ->> 'max_attempts')::integer,
        (s.step ->> 'timeout_seconds')::integer,
        (s.step ->> 'organization_id')::uuid,
        make_interval(secs => (s.step ->> 'delay')::double precision),
        (s.step ->> 'run_at')::timestamptz,
        jsonb_array_length(s.step -> 'depends_on'),
        jsonb_array_length(s.step -> 'depends_on'),
        p_mutation_id,
        v_now,
        v_now
    FROM jsonb_array_elements(p_steps) AS s (step);

    INSERT INTO pgrun.workflow_step_dependencies (run_id, step_key, depends_on_key, release_mode, created_at)
    SELECT p_run_id, s.step ->> 'key', d.dep ->> 'step', d.dep ->> 'release_mode', v_now
    FROM jsonb_array_elements(p_steps) AS s (step)
    CROSS JOIN LATERAL jsonb_array_elements(s.step -> 'depends_on') AS d (dep);
END;
$$;

REVOKE EXECUTE ON FUNCTION pgrun._workflow_insert_steps(uuid, jsonb, uuid) FROM public;

COMMENT ON FUNCTION pgrun._workflow_insert_steps(uuid, jsonb, uuid) IS
'Private: insert normalized steps (blocked, counters = number of dependencies) and their edges.';

-- For a conflict's DETAIL: which parts of two canonical requests differ ("name",
-- "metadata", "step fetch", "step fetch (only in the stored request)", ...), at most 10.
CREATE OR REPLACE FUNCTION pgrun._workflow_diff_requests(p_stored jsonb, p_new jsonb)
RETURNS text
LANGUAGE sql
IMMUTABLE
AS $$
    SELECT coalesce(
        string_agg(d.what, ', ' ORDER BY d.ord, d.what) FILTER (WHERE d.rn <= 10)
        || CASE WHEN count(*) > 10 THEN format(' and %s more', count(*) - 10) ELSE '' END,
        'nothing'
    )
    FROM (
        SELECT x.ord, x.what, row_number() OVER (ORDER BY x.ord, x.what) AS rn
        FROM (
            SELECT 0 AS ord, k.key AS what
            FROM (VALUES ('name'), ('metadata')) AS k (key)
            WHERE p_stored -> k.key IS DISTINCT FROM p_new -> k.key
            UNION ALL
            SELECT
                1,
                'step ' || coalesce(a.key, b.key) || CASE
                    WHEN a.key IS NULL THEN ' (only in the new request)'
                    WHEN b.key IS NULL THEN ' (only in the stored request)'
                    ELSE ''
                END
            FROM (
                SELECT s.step ->> 'key' AS key, s.step
                FROM jsonb_array_elements(coalesce(p_stored -> 'steps', '[]')) AS s (step)
            ) AS a
            FULL JOIN (
                SELECT s.step ->> 'key' AS key, s.step
                FROM jsonb_array_elements(coalesce(p_new -> 'steps', '[]')) AS s (step)
            ) AS b ON a.key = b.key
            WHERE a.step IS DISTINCT FROM b.step
        ) AS x
    ) AS d
$$;

REVOKE EXECUTE ON FUNCTION pgrun._workflow_diff_requests(jsonb, jsonb) FROM public;

COMMENT ON FUNCTION pgrun._workflow_diff_requests(jsonb, jsonb) IS
'Private: which parts of two canonical workflow requests differ, for a conflict''s DETAIL.';
