-- pgrun._workflow_check_steps(steps, existing_keys): validate a JSON array of step
-- objects (format: docs/workflows.md) and return it in normal form: sorted by key, every
-- field present (NULL when left out), kind defaulted to 'job', a job step's payload to
-- {}, each dependency as {"step": key, "release_mode": mode} (mode defaulted to
-- 'on_success'), dependencies sorted by step key. Steps are stored from that form and
-- the idempotency snapshots compare it, so the order of steps and of dependencies never
-- matters. Shared by enqueue_workflow and append_workflow_steps.
--
-- existing_keys are the run's keys (append): new steps may depend on them, must not
-- reuse them, and count towards the step limit. NULL checks the steps on their own
-- (dependencies outside the array are then not checked). Cycles: see _acyclic.sql.
--
-- The checks are the private functions below, called in this order; the first failure
-- raises, so a spec with several faults always reports the same one:
--   1. _workflow_check_step_array: the array, the step count;
--   2. _workflow_check_step_fields: each step in array order (shape, key, kind, job
--      template, payload), then (through _workflow_check_step_placement) each job step's
--      placement in array order (organization_id, delay, run_at), then each step's
--      depends_on is an array, in array order;
--   3. _workflow_check_step_keys: duplicate keys;
--   4. _workflow_check_dependencies: the dependency count, each dependency in order
--      (shape, release mode, self-edge, unknown step);
--   5. _workflow_normalize_steps: duplicate dependencies, and the normal form;
--   6. _workflow_check_acyclic (_acyclic.sql): cycles.
-- Each is one set-based statement over the array (or a few), never a loop over steps.
--
-- Placement (job steps only; an external step carrying one is
-- workflow.external_step_with_job_template): organization_id a uuid other than the nil
-- one (whether the caller may use it is _workflow_check_step_organizations' question, asked
-- by the callers, who know the caller); delay a number of seconds and run_at a timestamp
-- string, under the time-argument rule (pgrun._time_ok: 0 s..100 years; finite, no later
-- than now + 100 years), at most one of the two. In normal form the three keys appear only
-- when given (organization_id as a lower-case uuid, run_at in UTC as
-- YYYY-MM-DDTHH:MI:SS.USZ, delay as the number given), so a snapshot stored before they
-- existed still equals the normal form of the same request.
--
-- Limits (constants in the function that checks each): 10,000 steps per run, 100,000
-- dependencies per call, keys of at most 128 characters, a step payload of at most 1 MiB
-- (as for jobs) nested at most 100 levels (pgrun._json_depth_ok; deeper is
-- workflow.invalid_step).
--
-- Locks: none. Errors (RQ003): workflow.invalid_spec, workflow.too_many_steps,
-- workflow.invalid_step, workflow.invalid_step_key, workflow.missing_job_type,
-- workflow.external_step_with_job_template, workflow.payload_too_large,
-- workflow.reserved_payload_key, workflow.duplicate_step_key,
-- workflow.too_many_dependencies, workflow.invalid_dependency,
-- workflow.invalid_release_mode, workflow.self_dependency, workflow.unknown_dependency,
-- workflow.duplicate_dependency, workflow.cycle_detected.

CREATE OR REPLACE FUNCTION pgrun._workflow_check_steps(p_steps jsonb, p_existing_keys text[])
RETURNS jsonb
LANGUAGE plpgsql
STABLE
AS $$
DECLARE
    v_norm jsonb;
BEGIN
    PERFORM pgrun._workflow_check_step_array(p_steps, coalesce(cardinality(p_existing_keys), 0));
    PERFORM pgrun._workflow_check_step_fields(p_steps);
    PERFORM pgrun._workflow_check_step_keys(p_steps, coalesce(p_existing_keys, '{}'));
    PERFORM pgrun._workflow_check_dependencies(p_steps, p_existing_keys);
    v_norm := pgrun._workflow_normalize_steps(p_steps);
    PERFORM pgrun._workflow_check_acyclic(v_norm);
    RETURN v_norm;
END;
$$;

REVOKE EXECUTE ON FUNCTION pgrun._workflow_check_steps(jsonb, text[]) FROM public;

COMMENT ON FUNCTION pgrun._workflow_check_steps(jsonb, text[]) IS
'Private: validate workflow steps (raising the first error) and return them in normal form, sorted by key.';

-- Check 1 of _workflow_check_steps: steps is a non-empty JSON array, and with the
-- existing_count steps the run already has (0 for a new run) it makes at most 10,000.
--
-- Locks: none. Errors (RQ003): workflow.invalid_spec, workflow.too_many_steps.
CREATE OR REPLACE FUNCTION pgrun._workflow_check_step_array(p_steps jsonb, p_existing_count integer)
RETURNS void
LANGUAGE plpgsql
STABLE
AS $$
DECLARE
    c_max_steps CONSTANT integer := 10000;
    v_count integer;
BEGIN
    IF p_steps IS NULL OR jsonb_typeof(p_steps) <> 'array' OR jsonb_array_length(p_steps) = 0 THEN
        PERFORM pgrun._raise(
            'workflow.invalid_spec',
            format('steps is %s, not a non-empty JSON array', CASE
                WHEN p_steps IS NULL THEN 'missing'
                WHEN jsonb_typeof(p_steps) = 'array' THEN 'an empty array'
                ELSE 'a JSON ' || jsonb_typeof(p_steps)
            END),
            'Pass "steps": [{"key": "...", "job_type": "..."}, ...] (docs/workflows.md).'
        );
    END IF;
    v_count := jsonb_array_length(p_steps);
    IF v_count + p_existing_count > c_max_steps THEN
        PERFORM pgrun._raise(
            'workflow.too_many_steps',
            format(
                '%s steps%s; a run has at most %s',
                v_count,
                CASE WHEN p_existing_count > 0
                    THEN format(' added to the %s the run has', p_existing_count) ELSE '' END,
                c_max_steps
            ),
            'Split the work into several runs, or batch small units into one step.'
        );
    END IF;
END;
$$;

REVOKE EXECUTE ON FUNCTION pgrun._workflow_check_step_array(jsonb, integer) FROM public;

COMMENT ON FUNCTION pgrun._workflow_check_step_array(jsonb, integer) IS
'Private: raise when workflow steps are not a non-empty array or make a run of more than 10,000 steps.';

-- Check 2 of _workflow_check_steps: each step on its own, in array order: an object with
-- known fields only, its key (a non-empty string of at most 128 characters without
-- surrounding blanks), its kind ("job" or "external"; an external step carries no job
-- template field), then for a job step its job_type (present and well-formed, as the
-- jobs CHECK constraint says), payload (an object of at most 1 MiB nested at most 100
-- levels, without a top-level "dependencies" key), queue, priority (0..32767),
-- max_attempts (1..1000) and timeout_seconds (1..2^31-1). Once every step passed those,
-- the placement of each job step (pgrun._workflow_check_step_placement), then each step's
-- depends_on: an array, absent or null, before check 4 reads its entries. The first step
-- that breaks a rule is reported by pgrun._workflow_raise_invalid_step
-- (_validate_step_error.sql), which is handed the field lists and limits stated here.
--
-- Locks: none. Errors (RQ003): workflow.invalid_step, workflow.invalid_step_key,
-- workflow.external_step_with_job_template, workflow.missing_job_type,
-- workflow.payload_too_large, workflow.reserved_payload_key, workflow.invalid_dependency.
CREATE OR REPLACE FUNCTION pgrun._workflow_check_step_fields(p_steps jsonb)
RETURNS void
LANGUAGE plpgsql
STABLE
AS $$
DECLARE
    c_max_key_length CONSTANT integer := 128;
    c_max_payload_bytes CONSTANT integer := 1048576;
    c_step_fields CONSTANT text[] := ARRAY[
        'key', 'kind', 'job_type', 'payload', 'queue', 'priority', 'max_attempts', 'timeout_seconds',
        'organization_id', 'delay', 'run_at', 'depends_on'
    ];
    c_template_fields CONSTANT text[] := ARRAY[
        'job_type', 'payload', 'queue', 'priority', 'max_attempts', 'timeout_seconds',
        'organization_id', 'delay', 'run_at'
    ];
    v_ord integer;
    v_code text;
    v_step jsonb;
BEGIN
    SELECT c.ord, c.code, c.step INTO v_ord, v_code, v_step
    FROM (
        SELECT
            e.ord::integer AS ord,
            e.step,
            CASE
                WHEN jsonb_typeof(e.step) <> 'object' OR e.step - c_step_fields <> '{}'::jsonb
                    THEN 'workflow.invalid_step'
                WHEN coalesce(jsonb_typeof(e.step -> 'key'), 'null') <> 'string'
                    OR e.step ->> 'key' = ''
                    OR e.step ->> 'key' <> btrim(e.step ->> 'key')
                    OR length(e.step ->> 'key') > c_max_key_length
                    THEN 'workflow.invalid_step_key'
                WHEN coalesce(jsonb_typeof(e.step -> 'kind'), 'null') NOT IN ('null', 'string')
                    OR coalesce(e.step ->> 'kind', 'job') NOT IN ('job', 'external')
                    THEN 'workflow.invalid_step'
                WHEN e.step ->> 'kind' = 'external' AND jsonb_strip_nulls(e.step) ?| c_template_fields
                    THEN 'workflow.external_step_with_job_template'
                WHEN e.step ->> 'kind' = 'external'
                    THEN NULL
                WHEN coalesce(jsonb_typeof(e.step -> 'job_type'), 'null') = 'null'
                    OR btrim(e.step ->> 'job_type') = ''
                    THEN 'workflow.missing_job_type'
                -- the job_definitions / jobs CHECK constraints say the same
                WHEN jsonb_typeof(e.step -> 'job_type') <> 'string'
                    OR NOT pgrun._valid_job_type(e.step ->> 'job_type')
                    THEN 'workflow.invalid_step'
                WHEN coalesce(jsonb_typeof(e.step -> 'payload'), 'null') NOT IN ('null', 'object')
                    THEN 'workflow.invalid_step'
                WHEN pg_column_size(e.step -> 'payload') > c_max_payload_bytes
                    THEN 'workflow.payload_too_large'
                -- the nesting rule (util/_limits.sql): a small payload skips the walk
                WHEN NOT pgrun._json_depth_ok(e.step -> 'payload')
                    THEN 'workflow.invalid_step'
                WHEN e.step -> 'payload' ? 'dependencies'
                    THEN 'workflow.reserved_payload_key'
                WHEN coalesce(jsonb_typeof(e.step -> 'queue'), 'null') NOT IN ('null', 'string')
                    OR NOT pgrun._valid_queue(e.step ->> 'queue')
                    THEN 'workflow.invalid_step'
                WHEN coalesce(jsonb_typeof(e.step -> 'priority'), 'null') NOT IN ('null', 'number')
                    OR NOT coalesce(
                        (e.step ->> 'priority')::numeric BETWEEN 0 AND 32767
                        AND (e.step ->> 'priority')::numeric = trunc((e.step ->> 'priority')::numeric),
                        true
                    )
                    THEN 'workflow.invalid_step'
                WHEN coalesce(jsonb_typeof(e.step -> 'max_attempts'), 'null') NOT IN ('null', 'number')
                    OR NOT coalesce(
                        (e.step ->> 'max_attempts')::numeric BETWEEN 1 AND 1000
                        AND (e.step ->> 'max_attempts')::numeric = trunc((e.step ->> 'max_attempts')::numeric),
                        true
                    )
                    THEN 'workflow.invalid_step'
                WHEN coalesce(jsonb_typeof(e.step -> 'timeout_seconds'), 'null') NOT IN ('null', 'number')
                    OR NOT coalesce(
                        (e.step ->> 'timeout_seconds')::numeric BETWEEN 1 AND 2147483647
                        AND (e.step ->> 'timeout_seconds')::numeric
                        = trunc((e.step ->> 'timeout_seconds')::numeric),
                        true
                    )
                    THEN 'workflow.invalid_step'
            END AS code
        FROM jsonb_array_elements(p_steps) WITH ORDINALITY AS e (step, ord)
    ) AS c
    WHERE c.code IS NOT NULL
    ORDER BY c.ord
    LIMIT 1;

    IF v_code IS NULL THEN
        PERFORM pgrun._workflow_check_step_placement(p_steps);
        -- depends_on must be an array (or absent / null) before it can be read
        SELECT e.ord::integer, 'workflow.invalid_dependency', e.step INTO v_ord, v_code, v_step
        FROM jsonb_array_elements(p_steps) WITH ORDINALITY AS e (step, ord)
        WHERE coalesce(jsonb_typeof(e.step -> 'depends_on'), 'null') NOT IN ('null', 'array')
        ORDER BY e.ord
        LIMIT 1;
    END IF;

    IF v_code IS NOT NULL THEN
        PERFORM pgrun._workflow_raise_invalid_step(
            v_code, v_ord, v_step, c_step_fields, c_template_fields, c_max_key_length, c_max_payload_bytes
        );
    END IF;
END;
$$;

REVOKE EXECUTE ON FUNCTION pgrun._workflow_check_step_fields(jsonb) FROM public;

COMMENT ON FUNCTION pgrun._workflow_check_step_fields(jsonb) IS
'Private: raise the error of the first workflow step (in array order) with a bad field, placement or depends_on.';

-- Part of check 2 of _workflow_check_steps (called by _workflow_check_step_fields once
-- every step's fields passed, so every step is an object with a valid key and only job
-- steps carry these keys): the placement keys (organization_id, delay, run_at) of each
-- step, in array order, by pgrun._workflow_describe_placement_problem; only steps that
-- name one of the keys pay for the check. DETAIL names the step (position and key) and
-- the field.
--
-- Locks: none. Errors (RQ003): workflow.invalid_step.
CREATE OR REPLACE FUNCTION pgrun._workflow_check_step_placement(p_steps jsonb)
RETURNS void
LANGUAGE plpgsql
STABLE
AS $$
DECLARE
    c_placement_fields CONSTANT text[] := ARRAY['organization_id', 'delay', 'run_at'];
    v_ord integer;
    v_step jsonb;
    v_problem text;
BEGIN
    SELECT e.ord::integer, e.step, p.problem INTO v_ord, v_step, v_problem
    FROM jsonb_array_elements(p_steps) WITH ORDINALITY AS e (step, ord)
    CROSS JOIN LATERAL (SELECT pgrun._workflow_describe_placement_problem(e.step) AS problem) AS p
    WHERE e.step ?| c_placement_fields AND p.problem IS NOT NULL
    ORDER BY e.ord
    LIMIT 1;
    IF v_problem IS NOT NULL THEN
        PERFORM pgrun._raise(
            'workflow.invalid_step',
            format('step %s (%s): %s', v_ord, pgrun._clip(v_step ->> 'key', 200), v_problem),
            'A job step may name organization_id (a uuid), and delay (seconds, 0 to 100 years) '
                'or run_at (a timestamp no later than 100 years from now), not both.'
        );
    END IF;
END;
$$;

REVOKE EXECUTE ON FUNCTION pgrun._workflow_check_step_placement(jsonb) FROM public;

COMMENT ON FUNCTION pgrun._workflow_check_step_placement(jsonb) IS
'Private: raise workflow.invalid_step for the first step (in array order) with a bad organization_id, delay or run_at.';

-- Check 3 of _workflow_check_steps: keys are unique among the steps and against the run's
-- existing keys ('{}' for a new run); the smallest repeated key is reported, saying when
-- the run already has it.
--
-- Locks: none. Errors (RQ003): workflow.duplicate_step_key.
CREATE OR REPLACE FUNCTION pgrun._workflow_check_step_keys(p_steps jsonb, p_existing_keys text[])
RETURNS void
LANGUAGE plpgsql
STABLE
AS $$
DECLARE
    v_key text;
BEGIN
    SELECT k.key INTO v_key
    FROM (
        SELECT e.step ->> 'key' AS key
        FROM jsonb_array_elements(p_steps) AS e (step)
        UNION ALL
        SELECT x.key FROM unnest(p_existing_keys) AS x (key)
    ) AS k
    GROUP BY k.key
    HAVING count(*) > 1
    ORDER BY k.key
    LIMIT 1;
    IF v_key IS NOT NULL THEN
        PERFORM pgrun._raise(
            'workflow.duplicate_step_key',
            format(
                'step key %L is used more than once%s', v_key,
                CASE WHEN v_key = ANY (p_existing_keys)
                    THEN ' (the run already has a step with this key)' ELSE '' END
            ),
            'Step keys are unique within a run.'
        );
    END IF;
END;
$$;

REVOKE EXECUTE ON FUNCTION pgrun._workflow_check_step_keys(jsonb, text[]) FROM public;

COMMENT ON FUNCTION pgrun._workflow_check_step_keys(jsonb, text[]) IS
'Private: raise workflow.duplicate_step_key when two steps, or a step and the run, share a key.';

-- Check 4 of _workflow_check_steps: the dependencies. At most 100,000 in one call; then
-- each entry, by step and entry position: a step key or {"step": key, "release_mode":
-- mode} (nothing else), a release mode of on_success or on_terminal, not the step itself,
-- and a key of the steps or of the run's existing_keys. The unknown keys are found first
-- as one set difference (no per-edge lookups); with NULL existing_keys (the steps checked
-- on their own) that part is skipped. Check 2 made every depends_on an array or absent.
--
-- Locks: none. Errors (RQ003): workflow.too_many_dependencies,
-- workflow.invalid_dependency, workflow.invalid_release_mode, workflow.self_dependency,
-- workflow.unknown_dependency.
CREATE OR REPLACE FUNCTION pgrun._workflow_check_dependencies(p_steps jsonb, p_existing_keys text[])
RETURNS void
LANGUAGE plpgsql
STABLE
AS $$
DECLARE
    c_max_dependencies CONSTANT integer := 100000;
    v_existing text[] := coalesce(p_existing_keys, '{}');
    v_unknown text[] := '{}'::text[];
    v_edges integer;
    v_code text;
    v_key text;
    v_dep jsonb;
    v_dep_key text;
    v_detail text;
    v_hint text;
BEGIN
    SELECT coalesce(sum(jsonb_array_length(e.step -> 'depends_on')), 0)::integer INTO v_edges
    FROM jsonb_array_elements(p_steps) AS e (step)
    WHERE jsonb_typeof(e.step -> 'depends_on') = 'array';
    IF v_edges > c_max_dependencies THEN
        PERFORM pgrun._raise(
            'workflow.too_many_dependencies',
            format('%s dependencies in one call; the limit is %s', v_edges, c_max_dependencies),
            'Fan in through intermediate steps, or split the work into several runs.'
        );
    END IF;

    -- Prerequisite keys that name no step, as a set difference (no per-edge lookups).
    IF p_existing_keys IS NOT NULL THEN
        SELECT coalesce(array_agg(u.key), '{}') INTO v_unknown
        FROM (
            SELECT CASE jsonb_typeof(x.dep) WHEN 'string' THEN x.dep #>> '{}' WHEN 'object' THEN x.dep ->> 'step' END
            FROM jsonb_array_elements(p_steps) AS e (step)
            CROSS JOIN LATERAL jsonb_array_elements(
                CASE WHEN jsonb_typeof(e.step -> 'depends_on') = 'array' THEN e.step -> 'depends_on' ELSE '[]' END
            ) AS x (dep)
            EXCEPT
            SELECT e.step ->> 'key' FROM jsonb_array_elements(p_steps) AS e (step)
            EXCEPT
            SELECT x.key FROM unnest(v_existing) AS x (key)
        ) AS u (key)
        WHERE u.key IS NOT NULL;
    END IF;

    WITH d AS (
        SELECT
            e.step ->> 'key' AS key,
            e.ord AS step_ord,
            x.dep,
            x.ord AS dep_ord,
            CASE jsonb_typeof(x.dep)
                WHEN 'string' THEN x.dep #>> '{}'
                WHEN 'object' THEN x.dep ->> 'step'
            END AS dep_key
        FROM jsonb_array_elements(p_steps) WITH ORDINALITY AS e (step, ord)
        CROSS JOIN LATERAL jsonb_array_elements(
            CASE WHEN jsonb_typeof(e.step -> 'depends_on') = 'array' THEN e.step -> 'depends_on' ELSE '[]' END
        ) WITH ORDINALITY AS x (dep, ord)
    )

    SELECT c.key, c.dep, c.code, c.dep_key INTO v_key, v_dep, v_code, v_dep_key
    FROM (
        SELECT
            d.key,
            d.dep,
            d.dep_key,
            d.step_ord,
            d.dep_ord,
            CASE
                WHEN jsonb_typeof(d.dep) NOT IN ('string', 'object')
                    OR (jsonb_typeof(d.dep) = 'object' AND (
                        d.dep - ARRAY['step', 'release_mode'] <> '{}'::jsonb
                        OR coalesce(jsonb_typeof(d.dep -> 'step'), 'null') <> 'string'
                    ))
                    THEN 'workflow.invalid_dependency'
                WHEN coalesce(jsonb_typeof(d.dep -> 'release_mode'), 'null') NOT IN ('null', 'string')
                    OR coalesce(d.dep ->> 'release_mode', 'on_success') NOT IN ('on_success', 'on_terminal')
                    THEN 'workflow.invalid_release_mode'
                WHEN d.dep_key = d.key
                    THEN 'workflow.self_dependency'
                WHEN d.dep_key = ANY (v_unknown)
                    THEN 'workflow.unknown_dependency'
            END AS code
        FROM d
    ) AS c
    WHERE c.code IS NOT NULL
    ORDER BY c.step_ord, c.dep_ord
    LIMIT 1;

    IF v_code IS NOT NULL THEN
        v_detail := format('step %s: ', v_key) || CASE v_code
            WHEN 'workflow.invalid_dependency' THEN format(
                'dependency %s is neither a step key nor {"step": key, "release_mode": mode}',
                left(v_dep::text, 200)
            )
            WHEN 'workflow.invalid_release_mode' THEN format(
                'release_mode %s of its dependency on %s', left((v_dep -> 'release_mode')::text, 200),
                pgrun._clip(v_dep_key, 200)
            )
            WHEN 'workflow.self_dependency' THEN 'it depends on itself'
            ELSE format('it depends on %s, which is not a step of the %s', pgrun._shown(v_dep_key),
                CASE WHEN cardinality(v_existing) > 0 THEN 'run or of this append' ELSE 'workflow' END)
        END;
        v_hint := CASE v_code
            WHEN 'workflow.invalid_dependency'
                THEN 'depends_on is an array of step keys or {"step": key, "release_mode": mode} objects.'
            WHEN 'workflow.invalid_release_mode'
                THEN 'release_mode is "on_success" (the default) or "on_terminal".'
            WHEN 'workflow.self_dependency' THEN 'Remove the step from its own depends_on.'
            ELSE 'Every dependency must name a step of the same run.'
        END;
        PERFORM pgrun._raise(v_code, v_detail, v_hint);
    END IF;
END;
$$;

REVOKE EXECUTE ON FUNCTION pgrun._workflow_check_dependencies(jsonb, text[]) FROM public;

COMMENT ON FUNCTION pgrun._workflow_check_dependencies(jsonb, text[]) IS
'Private: raise the error of the first bad workflow dependency (too many, malformed, bad release_mode, self, unknown).';

-- Check 5 of _workflow_check_steps: the steps (checks 1 to 4 passed) in normal form, as
-- _workflow_check_steps returns them; on the way it finds a step that lists the same
-- prerequisite twice (the smallest such pair of keys is reported). The placement keys
-- enter the form only when given, so only steps that name one pay for them.
--
-- Locks: none. Errors (RQ003): workflow.duplicate_dependency.
CREATE OR REPLACE FUNCTION pgrun._workflow_normalize_steps(p_steps jsonb)
RETURNS jsonb
LANGUAGE plpgsql
STABLE
AS $$
DECLARE
    -- the keys of pgrun._workflow_check_step_placement
    c_placement_fields CONSTANT text[] := ARRAY['organization_id', 'delay', 'run_at'];
    v_detail text;
    v_norm jsonb;
BEGIN
    WITH steps AS (
        SELECT
            e.step ->> 'key' AS key,
            coalesce(e.step ->> 'kind', 'job') AS kind,
            e.step
        FROM jsonb_array_elements(p_steps) AS e (step)
    ),

    deps AS (
        SELECT
            s.key,
            CASE jsonb_typeof(x.dep) WHEN 'string' THEN x.dep #>> '{}' ELSE x.dep ->> 'step' END AS dep_key,
            coalesce(x.dep ->> 'release_mode', 'on_success') AS release_mode
        FROM steps AS s
        CROSS JOIN LATERAL jsonb_array_elements(
            CASE WHEN jsonb_typeof(s.step -> 'depends_on') = 'array' THEN s.step -> 'depends_on' ELSE '[]' END
        ) AS x (dep)
    ),

    dup AS (
        SELECT d.key, d.dep_key
        FROM deps AS d
        GROUP BY d.key, d.dep_key
        HAVING count(*) > 1
        ORDER BY d.key, d.dep_key
        LIMIT 1
    ),

    per_step AS (
        SELECT
            d.key,
            jsonb_agg(
                jsonb_build_object('step', d.dep_key, 'release_mode', d.release_mode)
                ORDER BY d.dep_key, d.release_mode
            ) AS depends_on
        FROM deps AS d
        GROUP BY d.key
    )

    SELECT
        (SELECT format('step %s lists its dependency on %s more than once', u.key, pgrun._clip(u.dep_key, 200))
         FROM dup AS u),
        jsonb_agg(
            jsonb_build_object(
                'key', s.key,
                'kind', s.kind,
                'job_type', s.step -> 'job_type',
                'payload', CASE
                    WHEN s.kind = 'job' THEN coalesce(nullif(s.step -> 'payload', 'null'::jsonb), '{}'::jsonb)
                END,
                'queue', s.step -> 'queue',
                'priority', (s.step ->> 'priority')::numeric::integer,
                'max_attempts', (s.step ->> 'max_attempts')::numeric::integer,
                'timeout_seconds', (s.step ->> 'timeout_seconds')::numeric::integer,
                'depends_on', coalesce(p.depends_on, '[]'::jsonb)
            ) || CASE WHEN s.step ?| c_placement_fields THEN jsonb_strip_nulls(jsonb_build_object(
                'organization_id', ((s.step ->> 'organization_id')::uuid)::text,
                'delay', nullif(s.step -> 'delay', 'null'::jsonb),
                'run_at', to_char(
                    (s.step ->> 'run_at')::timestamptz AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'
                )
            )) ELSE '{}'::jsonb END
            ORDER BY s.key
        )
    INTO v_detail, v_norm
    FROM steps AS s
    LEFT JOIN per_step AS p ON p.key = s.key;

    IF v_detail IS NOT NULL THEN
        PERFORM pgrun._raise(
            'workflow.duplicate_dependency',
            v_detail,
            'List each prerequisite once, with the release_mode you mean.'
        );
    END IF;
    RETURN v_norm;
END;
$$;

REVOKE EXECUTE ON FUNCTION pgrun._workflow_normalize_steps(jsonb) FROM public;

COMMENT ON FUNCTION pgrun._workflow_normalize_steps(jsonb) IS
'Private: checked workflow steps in normal form (sorted by key); raises workflow.duplicate_dependency.';

-- The placement keys of one step (organization_id, delay, run_at) against their rules, in
-- that order: NULL when they keep them, else what is wrong, for workflow.invalid_step's
-- DETAIL. A string run_at is parsed here (pgrun._workflow_parse_time), so a value
-- PostgreSQL cannot read is this error, never a raw 22007.
CREATE OR REPLACE FUNCTION pgrun._workflow_describe_placement_problem(p_step jsonb)
RETURNS text
LANGUAGE plpgsql
STABLE
AS $$
DECLARE
    v_delay numeric;
    v_run_at timestamptz;
BEGIN
    IF coalesce(jsonb_typeof(p_step -> 'organization_id'), 'null') NOT IN ('null', 'string')
        -- length before the patterns: a uuid string has at most 36 characters
        OR length(p_step ->> 'organization_id') > 36
        OR p_step ->> 'organization_id' !~* '^[0-9a-f]{8}-?([0-9a-f]{4}-?){3}[0-9a-f]{12}$'
        OR p_step ->> 'organization_id' ~ '^[0-]*$' THEN
        RETURN format('organization_id %s is not a usable uuid', left((p_step -> 'organization_id')::text, 100));
    END IF;
    IF coalesce(jsonb_typeof(p_step -> 'delay'), 'null') NOT IN ('null', 'number') THEN
        RETURN format('delay %s is not a number of seconds', left((p_step -> 'delay')::text, 100));
    END IF;
    v_delay := (p_step ->> 'delay')::numeric;
    -- the magnitude guard only keeps make_interval from overflowing; the rule is _time_ok's
    IF v_delay IS NOT NULL AND NOT (
        abs(v_delay) < 1e12 AND pgrun._time_ok(make_interval(secs => v_delay::double precision))
    ) THEN
        RETURN format('delay %s is outside 0 seconds..100 years', left(v_delay::text, 100));
    END IF;
    IF coalesce(jsonb_typeof(p_step -> 'run_at'), 'null') NOT IN ('null', 'string') THEN
        RETURN format('run_at %s is not a timestamp string', left((p_step -> 'run_at')::text, 100));
    END IF;
    IF p_step ->> 'run_at' IS NOT NULL THEN
        v_run_at := pgrun._workflow_parse_time(p_step ->> 'run_at');
        IF NOT coalesce(pgrun._time_ok(v_run_at), false) THEN
            RETURN format(
                'run_at %s is not a finite time between 0001-01-02 and 100 years from now',
                left((p_step -> 'run_at')::text, 100)
            );
        END IF;
    END IF;
    IF v_delay IS NOT NULL AND v_run_at IS NOT NULL THEN
        RETURN 'delay and run_at are both given; a step takes one of them';
    END IF;
    RETURN NULL;
END;
$$;

REVOKE EXECUTE ON FUNCTION pgrun._workflow_describe_placement_problem(jsonb) FROM public;

COMMENT ON FUNCTION pgrun._workflow_describe_placement_problem(jsonb) IS
'Private: what is wrong with a workflow step''s organization_id, delay or run_at, or NULL.';

-- A timestamp string as timestamptz, or NULL when PostgreSQL cannot read it (or it is longer
-- than 100 characters, which no timestamp needs). Only steps that give run_at call it.
CREATE OR REPLACE FUNCTION pgrun._workflow_parse_time(p_value text)
RETURNS timestamptz
LANGUAGE plpgsql
STABLE
AS $$
BEGIN
    IF length(p_value) > 100 THEN
        RETURN NULL;
    END IF;
    RETURN p_value::timestamptz;
EXCEPTION WHEN data_exception THEN
    RETURN NULL;
END;
$$;

REVOKE EXECUTE ON FUNCTION pgrun._workflow_parse_time(text) FROM public;

COMMENT ON FUNCTION pgrun._workflow_parse_time(text) IS
'Private: a timestamp string as timestamptz, NULL when it cannot be read.';

-- Whether the caller may place the given steps (normal form) in the organizations they name:
-- each must be one the caller could enqueue a job in directly (pgrun._caller_write_organizations:
-- admins and any-organization roles any; a role bound to organizations those; a role without
-- tenancy none), whatever the run's organization is. The first step (by key) naming another
-- raises access.organization_denied (42501), as the run's own organization does. Steps that
-- name none cost one scan of the array and no role lookup.
CREATE OR REPLACE FUNCTION pgrun._workflow_check_step_organizations(p_steps jsonb)
RETURNS void
LANGUAGE plpgsql
STABLE
AS $$
DECLARE
    v_allowed uuid[];
    v_key text;
    v_org uuid;
BEGIN
    IF NOT EXISTS (SELECT FROM jsonb_array_elements(p_steps) AS s (step) WHERE s.step ? 'organization_id') THEN
        RETURN;
    END IF;
    SELECT w.allowed_organizations INTO v_allowed FROM pgrun._caller_write_organizations() AS w;
    IF v_allowed IS NULL THEN
        RETURN;
    END IF;
    SELECT s.step ->> 'key', (s.step ->> 'organization_id')::uuid INTO v_key, v_org
    FROM jsonb_array_elements(p_steps) AS s (step)
    WHERE s.step ? 'organization_id'
      AND NOT ((s.step ->> 'organization_id')::uuid = ANY (v_allowed))
    ORDER BY s.step ->> 'key'
    LIMIT 1;
    IF v_key IS NOT NULL THEN
        PERFORM pgrun._raise_organization_denied(v_org, format('step %s: ', pgrun._clip(v_key, 200)));
    END IF;
END;
$$;

REVOKE EXECUTE ON FUNCTION pgrun._workflow_check_step_organizations(jsonb) FROM public;

COMMENT ON FUNCTION pgrun._workflow_check_step_organizations(jsonb) IS
'Private: raise access.organization_denied when a step names an organization the caller may not enqueue in.';
