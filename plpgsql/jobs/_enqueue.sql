-- Private helpers of the front door (enqueue.sql): request validation, the error
-- it raises, the per-queue NOTIFY, and THE insert every new job goes through.
-- Loaded before enqueue.sql (file name order).
--
-- * _enqueue_insert_jobs(ids, job_types, payloads, queues, priorities, max_attempts,
--   timeouts, run_ats, organization_ids, idempotency_keys, requests, workflow_run_ids,
--   workflow_step_keys, schedule_ids): the one set-based INSERT into jobs, called by the
--   three doors that make jobs: enqueue (pgrun._enqueue), the workflow release
--   (pgrun._workflow_release_steps, workflows/_release.sql) and the schedule fire
--   (pgrun._schedule_fire, schedules/fire.sql). Parallel arrays, one element per job, in
--   the order the jobs are inserted (for same-key enqueue elements the first wins); the
--   three link arrays may be NULL (unnest pads them with NULLs). Each door decides the
--   job's id, payload, run_at, organization and links; queue, priority, max_attempts and
--   timeout are the door's request (NULL = not asked) and resolve here, and only here:
--   coalesce(request, job_definitions, pgrun._job_defaults()); the backoff comes from the
--   definition, else the built-in default. One 'enqueued' job_events row per inserted job,
--   its detail naming the link (NULL for a plain job, {workflow_run_id, workflow_step_key}
--   for a step's job, {schedule_id} for a schedule's). Keyed rows go in ON CONFLICT DO
--   NOTHING on jobs_idempotency_idx (rows without a key never conflict). Then one
--   pgrun._notify_queues call: the queue name for each queue that got a job ready now, and
--   '<queue> <due>' for each queue that got delayed jobs, <due> the earliest run_at in Unix
--   milliseconds. Returns the ids it inserted (NULL when none): a keyed element that
--   conflicted is missing, and the door decides what that means.
--
-- Locks: _enqueue_insert_jobs locks the rows it inserts; a keyed insert waits for an
-- uncommitted insert of its key. The others take none.
-- Errors: _enqueue_raise_invalid raises the RQ003 input errors listed in enqueue.sql;
-- the others raise nothing of their own (_enqueue_insert_jobs trusts its callers: every
-- value was validated at its door, and the table's constraints are the last wall).

-- The whole validation of a request array, as one read-only statement: the first
-- bad element's 1-based index and error code, or no row. Every limit lives here.
-- A malformed timestamp, interval or uuid string raises a data_exception (class 22)
-- instead; _enqueue_check then finds the element one by one.
CREATE OR REPLACE FUNCTION pgrun._enqueue_first_invalid(p_requests jsonb)
RETURNS TABLE (bad_ordinality integer, bad_code text)
LANGUAGE plpgsql
STABLE
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    c_max_payload_bytes CONSTANT integer := 1048576;          -- 1 MiB of jsonb
    -- 100 Julian years: the time-argument rule (pgrun._time_ok), for a delay given in seconds
    c_max_delay_seconds CONSTANT numeric := 3155760000;
    c_known_keys CONSTANT text[] := ARRAY[
        'job_type', 'payload', 'queue', 'priority', 'run_at', 'delay', 'max_attempts',
        'timeout_seconds', 'idempotency_key', 'organization_id'
    ];
    c_optional_keys CONSTANT text[] := ARRAY[
        'queue', 'priority', 'run_at', 'delay', 'max_attempts', 'timeout_seconds', 'idempotency_key',
        'organization_id'
    ];
BEGIN
    RETURN QUERY
    SELECT c.ord, c.code
    FROM (
        SELECT
            e.ord::integer AS ord,
            CASE
                WHEN jsonb_typeof(e.elem) <> 'object' OR e.elem - c_known_keys <> '{}'::jsonb
                    THEN 'job.invalid_batch'
                -- the rule the job_definitions / job_schedules CHECK constraints call
                WHEN coalesce(jsonb_typeof(e.elem -> 'job_type'), 'null') <> 'string'
                    OR NOT pgrun._valid_job_type(e.elem ->> 'job_type')
                    THEN 'job.invalid_type'
                WHEN e.elem ? 'payload'
                    AND jsonb_typeof(e.elem -> 'payload') NOT IN ('null', 'object')
                    THEN 'job.invalid_payload'
                WHEN pg_column_size(e.elem -> 'payload') > c_max_payload_bytes
                    THEN 'job.payload_too_large'
                -- the nesting rule (util/_limits.sql): a small payload skips the walk
                WHEN NOT pgrun._json_depth_ok(e.elem -> 'payload')
                    THEN 'job.invalid_payload'
                -- the common element has nothing else: one cheap test instead of many
                WHEN NOT e.elem ?| c_optional_keys
                    THEN NULL
                WHEN e.elem ? 'queue' AND (
                    jsonb_typeof(e.elem -> 'queue') NOT IN ('null', 'string')
                    OR NOT pgrun._valid_queue(e.elem ->> 'queue')
                )
                    THEN 'job.invalid_queue'
                WHEN e.elem ? 'priority' AND (
                    jsonb_typeof(e.elem -> 'priority') NOT IN ('null', 'number')
                    OR NOT (
                        (e.elem ->> 'priority')::numeric BETWEEN 0 AND 32767
                        AND (e.elem ->> 'priority')::numeric = trunc((e.elem ->> 'priority')::numeric)
                    )
                )
                    THEN 'job.invalid_priority'
                WHEN e.elem ? 'max_attempts' AND (
                    jsonb_typeof(e.elem -> 'max_attempts') NOT IN ('null', 'number')
                    OR NOT (
                        (e.elem ->> 'max_attempts')::numeric BETWEEN 1 AND 1000
                        AND (e.elem ->> 'max_attempts')::numeric
                        = trunc((e.elem ->> 'max_attempts')::numeric)
                    )
                )
                    THEN 'job.invalid_max_attempts'
                WHEN e.elem ? 'timeout_seconds' AND (
                    jsonb_typeof(e.elem -> 'timeout_seconds') NOT IN ('null', 'number')
                    OR NOT (
                        (e.elem ->> 'timeout_seconds')::numeric BETWEEN 1 AND 2147483647
                        AND (e.elem ->> 'timeout_seconds')::numeric
                        = trunc((e.elem ->> 'timeout_seconds')::numeric)
                    )
                )
                    THEN 'job.invalid_timeout'
                WHEN coalesce(jsonb_typeof(e.elem -> 'run_at'), 'null') <> 'null'
                    AND coalesce(jsonb_typeof(e.elem -> 'delay'), 'null') <> 'null'
                    THEN 'job.invalid_schedule'
                WHEN e.elem ? 'run_at' AND (
                    jsonb_typeof(e.elem -> 'run_at') NOT IN ('null', 'string')
                    OR NOT pgrun._time_ok((e.elem ->> 'run_at')::timestamptz)
                )
                    THEN 'job.invalid_schedule'
                WHEN e.elem ? 'delay' AND (
                    jsonb_typeof(e.elem -> 'delay') NOT IN ('null', 'number', 'string')
                    OR NOT (
                        CASE jsonb_typeof(e.elem -> 'delay')
                            WHEN 'number' THEN (e.elem ->> 'delay')::numeric
                            ELSE extract(EPOCH FROM (e.elem ->> 'delay')::interval)
                        END BETWEEN 0 AND c_max_delay_seconds
                    )
                )
                    THEN 'job.invalid_schedule'
                WHEN e.elem ? 'idempotency_key' AND (
                    jsonb_typeof(e.elem -> 'idempotency_key') NOT IN ('null', 'string')
                    OR length(e.elem ->> 'idempotency_key') NOT BETWEEN 1 AND 256
                )
                    THEN 'job.invalid_idempotency_key'
                -- the nil uuid is the "no organization" slot of jobs_idempotency_idx
                WHEN e.elem ? 'organization_id' AND (
                    jsonb_typeof(e.elem -> 'organization_id') NOT IN ('null', 'string')
                    OR (e.elem ->> 'organization_id')::uuid = '00000000-0000-0000-0000-000000000000'::uuid
                )
                    THEN 'job.invalid_organization'
            END AS code
        FROM jsonb_array_elements(p_requests) WITH ORDINALITY AS e (elem, ord)
    ) AS c
    WHERE c.code IS NOT NULL
    ORDER BY c.ord
    LIMIT 1;
END;
$$;

REVOKE EXECUTE ON FUNCTION pgrun._enqueue_first_invalid(jsonb) FROM public;

COMMENT ON FUNCTION pgrun._enqueue_first_invalid(jsonb) IS
'Private: the first invalid element of an enqueue request array (index, error code), or no row; '
'raises data_exception on an unparsable timestamp, interval or uuid string.';

-- The first invalid element (1-based index, error code), or NULLs when all are valid.
-- Normally one pass of _enqueue_first_invalid; when a string does not parse, the
-- elements are checked one by one so the error still names the first bad one.
CREATE OR REPLACE FUNCTION pgrun._enqueue_check(
    p_requests jsonb, OUT bad_ordinality integer, OUT bad_code text
)
LANGUAGE plpgsql
STABLE
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    v_elem jsonb;
    v_ord integer;
    v_code text;
BEGIN
    BEGIN
        SELECT f.bad_ordinality, f.bad_code INTO bad_ordinality, bad_code
        FROM pgrun._enqueue_first_invalid(p_requests) AS f;
        RETURN;
    EXCEPTION WHEN data_exception THEN
        NULL;  -- fall through to the element-by-element search
    END;
    FOR v_elem, v_ord IN
        SELECT e.elem, e.ord::integer
        FROM jsonb_array_elements(p_requests) WITH ORDINALITY AS e (elem, ord)
    LOOP
        BEGIN
            SELECT f.bad_code INTO v_code
            FROM pgrun._enqueue_first_invalid(jsonb_build_array(v_elem)) AS f;
        EXCEPTION WHEN data_exception THEN
            -- only run_at, delay and organization_id are parsed from strings
            v_code := 'job.invalid_schedule';
            BEGIN
                PERFORM (v_elem ->> 'organization_id')::uuid;
            EXCEPTION WHEN data_exception THEN
                v_code := 'job.invalid_organization';
            END;
        END;
        IF v_code IS NOT NULL THEN
            bad_ordinality := v_ord;
            bad_code := v_code;
            RETURN;
        END IF;
    END LOOP;
END;
$$;

REVOKE EXECUTE ON FUNCTION pgrun._enqueue_check(jsonb) FROM public;

COMMENT ON FUNCTION pgrun._enqueue_check(jsonb) IS
'Private: the first invalid element of an enqueue request array (index, error code), or NULLs.';

-- Wakes idle workers: one pg_notify per distinct payload (a queue name: jobs ready now; a
-- queue name, a blank and a due time in Unix milliseconds: delayed jobs), in order.
CREATE OR REPLACE FUNCTION pgrun._notify_queues(p_queues text[])
RETURNS void
LANGUAGE plpgsql
VOLATILE
AS $$
BEGIN
    -- plpgsql, not sql: a sql function is parsed and planned again on every call
    PERFORM pg_catalog.pg_notify('pgrun_jobs', q.queue)
    FROM (SELECT DISTINCT u.queue FROM unnest(p_queues) AS u (queue) ORDER BY u.queue) AS q;
END;
$$;

REVOKE EXECUTE ON FUNCTION pgrun._notify_queues(text[]) FROM public;

COMMENT ON FUNCTION pgrun._notify_queues(text[]) IS
'Private: pg_notify(''pgrun_jobs'', payload) once per distinct payload (queue, or queue and due time in '
'Unix ms); enqueue calls it once per statement.';

-- Raises the input error p_code for one request element, with a DETAIL naming the
-- element (by its 1-based index when p_ordinality is given) and the offending value.
CREATE OR REPLACE FUNCTION pgrun._enqueue_raise_invalid(
    p_code text, p_elem jsonb, p_ordinality integer
)
RETURNS void
LANGUAGE plpgsql
STABLE
AS $$
DECLARE
    v_where text := CASE WHEN p_ordinality IS NULL THEN '' ELSE format('element %s: ', p_ordinality) END;
    v_detail text;
    v_hint text;
BEGIN
    CASE p_code
        WHEN 'job.invalid_batch' THEN
            v_detail := CASE
                WHEN jsonb_typeof(p_elem) <> 'object'
                    THEN format('%sis a JSON %s, not an object', v_where, jsonb_typeof(p_elem))
                ELSE format(
                    '%sunknown keys %s',
                    v_where,
                    pgrun._clip((SELECT string_agg(k.key, ', ' ORDER BY k.key)
                     FROM jsonb_object_keys(p_elem) AS k (key)
                     WHERE k.key <> ALL (ARRAY[
                         'job_type', 'payload', 'queue', 'priority', 'run_at', 'delay',
                         'max_attempts', 'timeout_seconds', 'idempotency_key', 'organization_id'
                     ])), 200)
                )
            END;
            v_hint := 'Each element is an object whose keys are enqueue_job''s parameter names.';
        WHEN 'job.invalid_type' THEN
            PERFORM pgrun._raise_invalid_job_type(format('%sjob_type %s is not a valid job type', v_where,
                left(coalesce(p_elem -> 'job_type', 'null'::jsonb)::text, 200)));
        WHEN 'job.invalid_payload' THEN
            IF jsonb_typeof(p_elem -> 'payload') = 'object' THEN
                v_detail := format('%spayload is nested more than 100 levels deep (arrays and objects)', v_where);
                v_hint := 'Flatten the payload: pgrun stores JSON nested at most 100 levels.';
            ELSE
                v_detail := format('%spayload is a JSON %s, not an object', v_where,
                    jsonb_typeof(p_elem -> 'payload'));
                v_hint := 'Wrap the value in an object, e.g. {"value": ...}.';
            END IF;
        WHEN 'job.payload_too_large' THEN
            v_detail := format('%spayload is %s bytes of jsonb; the limit is 1 MiB (1048576)', v_where,
                pg_column_size(p_elem -> 'payload'));
            v_hint := 'Store large data elsewhere and pass a reference in the payload.';
        WHEN 'job.invalid_queue' THEN
            v_detail := format('%squeue %s is not a valid queue name', v_where,
                left((p_elem -> 'queue')::text, 100));
            v_hint := 'Use at most 64 characters: a lowercase letter, then lowercase letters, '
                'digits, "_", ".", ":" or "-".';
        WHEN 'job.invalid_priority' THEN
            v_detail := format('%spriority %s is not an integer in 0..32767', v_where,
                left((p_elem -> 'priority')::text, 100));
            v_hint := 'Lower numbers run first; the default is 100.';
        WHEN 'job.invalid_max_attempts' THEN
            v_detail := format('%smax_attempts %s is not an integer in 1..1000', v_where,
                left((p_elem -> 'max_attempts')::text, 100));
            v_hint := 'max_attempts counts every try, the first included; the default is 20.';
        WHEN 'job.invalid_timeout' THEN
            v_detail := format('%stimeout_seconds %s is not a positive integer', v_where,
                left((p_elem -> 'timeout_seconds')::text, 100));
            v_hint := 'Pass a positive number of seconds, or leave it out for no timeout.';
        WHEN 'job.invalid_schedule' THEN
            v_detail := format('%srun_at %s, delay %s', v_where,
                left(coalesce(p_elem -> 'run_at', 'null'::jsonb)::text, 100),
                left(coalesce(p_elem -> 'delay', 'null'::jsonb)::text, 100));
            v_hint := 'Give run_at (a finite timestamp at most 100 years ahead) or delay (0 s to 100 years), '
                'not both.';
        WHEN 'job.invalid_idempotency_key' THEN
            v_detail := format('%sidempotency_key %s is not a string of 1..256 characters', v_where,
                left((p_elem -> 'idempotency_key')::text, 200));
            v_hint := 'Pass a non-empty string of at most 256 characters, or leave it out.';
        WHEN 'job.invalid_organization' THEN
            v_detail := format('%sorganization_id %s is not a usable uuid', v_where,
                left((p_elem -> 'organization_id')::text, 100));
            v_hint := 'Pass the organization''s uuid (not the nil uuid), or leave it out.';
        ELSE
            v_detail := format('%sinvalid request', v_where);
            v_hint := NULL;
    END CASE;
    RAISE EXCEPTION USING MESSAGE = p_code, ERRCODE = 'RQ003', DETAIL = v_detail, HINT = v_hint;
END;
$$;

REVOKE EXECUTE ON FUNCTION pgrun._enqueue_raise_invalid(text, jsonb, integer) FROM public;

COMMENT ON FUNCTION pgrun._enqueue_raise_invalid(text, jsonb, integer) IS
'Private: raises enqueue input error p_code (RQ003) for one request element, DETAIL naming it.';


-- Generic plan: its statement does not depend on the values (as in pgrun._enqueue).
CREATE OR REPLACE FUNCTION pgrun._enqueue_insert_jobs(
    p_ids uuid[],
    p_job_types text[],
    p_payloads jsonb[],
    p_queues text[],
    p_priorities integer[],
    p_max_attempts integer[],
    p_timeouts integer[],
    p_run_ats timestamptz[],
    p_organization_ids uuid[],
    p_idempotency_keys text[],
    p_requests jsonb[],
    p_workflow_run_ids uuid[],
    p_workflow_step_keys text[],
    p_schedule_ids uuid[]
)
RETURNS uuid[]
LANGUAGE plpgsql
VOLATILE
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    v_now timestamptz := pgrun.now();
    v_inserted uuid[];
    v_queues text[];
BEGIN
    WITH ins AS (
        INSERT INTO pgrun.jobs AS j (
            id, job_type, queue, priority, status, payload, run_at, max_attempts, timeout_seconds,
            backoff_base_seconds, backoff_max_seconds, backoff_jitter,
            organization_id, idempotency_key, enqueue_request,
            workflow_run_id, workflow_step_key, schedule_id, created_at, updated_at
        )
        SELECT
            r.id,
            r.job_type,
            coalesce(r.queue, d.queue, b.queue),
            coalesce(r.priority, d.priority, b.priority),
            'queued',
            r.payload,
            r.run_at,
            coalesce(r.max_attempts, d.max_attempts, b.max_attempts),
            coalesce(r.timeout_seconds, d.timeout_seconds, b.timeout_seconds),
            coalesce(d.backoff_base_seconds, b.backoff_base_seconds),
            coalesce(d.backoff_max_seconds, b.backoff_max_seconds),
            coalesce(d.backoff_jitter, b.backoff_jitter),
            r.organization_id,
            r.idempotency_key,
            r.request,
            r.workflow_run_id,
            r.workflow_step_key,
            r.schedule_id,
            v_now,
            v_now
        FROM unnest(
            p_ids, p_job_types, p_payloads, p_queues, p_priorities, p_max_attempts, p_timeouts, p_run_ats,
            p_organization_ids, p_idempotency_keys, p_requests, p_workflow_run_ids, p_workflow_step_keys,
            p_schedule_ids
        ) WITH ORDINALITY AS r (
            id, job_type, payload, queue, priority, max_attempts, timeout_seconds, run_at,
            organization_id, idempotency_key, request, workflow_run_id, workflow_step_key, schedule_id, ord
        )
        CROSS JOIN pgrun._job_defaults() AS b
        LEFT JOIN pgrun.job_definitions AS d ON d.job_type = r.job_type
        -- array order decides which of several same-key elements creates the job
        ORDER BY r.ord
        ON CONFLICT (
            job_type,
            coalesce(organization_id, '00000000-0000-0000-0000-000000000000'::uuid),
            idempotency_key
        ) WHERE idempotency_key IS NOT NULL
        DO NOTHING
        RETURNING j.id, j.queue, j.run_at, j.workflow_run_id, j.workflow_step_key, j.schedule_id
    ),
    events AS (
        INSERT INTO pgrun.job_events (job_id, event, from_status, to_status, attempt, detail, created_at)
        SELECT
            i.id, 'enqueued', NULL, 'queued', 0,
            CASE
                WHEN i.workflow_run_id IS NOT NULL THEN jsonb_build_object(
                    'workflow_run_id', i.workflow_run_id, 'workflow_step_key', i.workflow_step_key
                )
                WHEN i.schedule_id IS NOT NULL THEN jsonb_build_object('schedule_id', i.schedule_id)
            END,
            v_now
        FROM ins AS i
    )
    SELECT
        (SELECT array_agg(i.id) FROM ins AS i),
        (SELECT array_agg(x.payload) FROM (
            SELECT DISTINCT i.queue AS payload FROM ins AS i WHERE i.run_at <= v_now
            UNION ALL
            SELECT i.queue || ' ' || ceil(extract(EPOCH FROM min(i.run_at)) * 1000)::bigint
            FROM ins AS i WHERE i.run_at > v_now GROUP BY i.queue
        ) AS x)
    INTO v_inserted, v_queues;

    IF v_queues IS NOT NULL THEN
        PERFORM pgrun._notify_queues(v_queues);
    END IF;
    RETURN v_inserted;
END;
$$;

REVOKE EXECUTE ON FUNCTION pgrun._enqueue_insert_jobs(
    uuid[], text[], jsonb[], text[], integer[], integer[], integer[], timestamptz[], uuid[], text[], jsonb[],
    uuid[], text[], uuid[]
) FROM public;

COMMENT ON FUNCTION pgrun._enqueue_insert_jobs(
    uuid[], text[], jsonb[], text[], integer[], integer[], integer[], timestamptz[], uuid[], text[], jsonb[],
    uuid[], text[], uuid[]
) IS
'Private: THE insert of new jobs (enqueue, workflow release, schedule fire): settings resolved as request, '
'definition, built-in default; one enqueued event each; NOTIFY per queue; returns the ids inserted.';
