-- Enqueue: the front door. enqueue_job adds one job, enqueue_jobs many; both run the
-- set-based core pgrun._enqueue (helpers in _enqueue.sql), so a request means the same
-- through either door and a keyed retry may come through the other one.
--
-- Resolution: an argument given wins, else the type's job_definitions row, else the
-- built-in default (queue 'default', priority 100 (0..32767, lower runs first),
-- max_attempts 20, no timeout, backoff 2 s / 3600 s / 0.2: pgrun._job_defaults). Unknown
-- job types are fine. The resolution, the INSERT, the events and the NOTIFY are the shared
-- insert's (pgrun._enqueue_insert_jobs, _enqueue.sql), which the workflow release and the
-- schedule fire call too: a job means the same whichever door made it.
-- payload: a JSON object (NULL = {}) of at most 1 MiB (pg_column_size of the jsonb),
-- nested at most 100 levels (pgrun._json_depth_ok; deeper is job.invalid_payload).
-- run_at (absolute; a past one is ready at once; finite and at most 100 years ahead) and
-- delay (0 s..100 years from pgrun.now()) are exclusive; with neither the job is ready
-- now. Both follow the time-argument rule (pgrun._time_ok, docs/errors.md).
--
-- Idempotency: a keyed job is unique per (job_type, organization_id, key). The snapshot
-- in jobs.enqueue_request is the request as asked, normalized, not as resolved:
-- job_type, payload (NULL as {}), and, only when given, organization_id, queue,
-- priority, max_attempts, timeout_seconds, run_at (UTC text, microseconds) and
-- delay_seconds (a number). So a changed job definition never turns an honest retry
-- into a conflict, and a delay means the same request whenever it is retried. An equal
-- snapshot returns the existing job (created = false) whatever it became since; any
-- difference raises job.enqueue_conflicting_retry. Only the stored snapshot is
-- compared, never the live row. Leaving an argument out and passing its default
-- explicitly are different requests.
--
-- Concurrency: INSERT ... ON CONFLICT DO NOTHING on jobs_idempotency_idx, then a read of
-- the existing row in a new statement. Racing sessions get one job: the second waits
-- for the first's insert and then reads its committed row, which needs the fresh
-- snapshot only READ COMMITTED takes per statement; keyed enqueue refuses other levels.
--
-- Bulk: enqueue_jobs takes an array of objects keyed like enqueue_job's parameters
-- (delay: seconds or an interval string). The whole array is validated first (the first
-- bad element's 1-based index goes in DETAIL), then one statement parses the array into
-- jobs (ids from pgrun._uuidv7_series) and ONE INSERT ... SELECT creates them and their
-- events (pgrun._enqueue_insert_jobs).
-- Elements sharing a key act like retries in array order: the first creates, identical
-- later ones return its job (created = false), a different one conflicts (all rolls back).
--
-- Events: one job_events 'enqueued' row per created job, none for a keyed retry.
-- NOTIFY: pg_notify('pgrun_jobs', <queue name>) once per call for each queue that got a
-- job ready now, and pg_notify('pgrun_jobs', '<queue name> <due>') for each queue that got
-- delayed jobs, <due> the earliest of their run_at in Unix milliseconds: an idle worker sets
-- a timer for it and claims the job when it comes due, not at its next poll. Delivered on
-- commit; PostgreSQL folds duplicates within a transaction. Workers LISTEN pgrun_jobs.
--
-- Locks: the inserted rows; a keyed insert waits for an uncommitted insert of its key.
--
-- Tenancy: each job is stamped with the organization the caller acts for: the one it names,
-- else the only one its role is bound to (pgrun._caller_write_organizations); naming one it
-- may not act for is access.organization_denied (42501), naming none while bound to several
-- access.organization_required (RQ003). The stamped organization is part of the snapshot.
--
-- Errors: RQ003 job.invalid_batch, job.batch_too_large, job.invalid_type,
-- job.invalid_payload, job.payload_too_large, job.invalid_queue, job.invalid_priority,
-- job.invalid_max_attempts, job.invalid_timeout, job.invalid_schedule,
-- job.invalid_idempotency_key, job.invalid_organization; RQ001
-- job.enqueue_conflicting_retry; RQ006 job.enqueue_idempotency_unsupported_isolation;
-- 40001 job.enqueue_idempotency_race (the keyed row vanished between conflict and read,
-- e.g. purged: retry); 42501 access.organization_denied; RQ003 access.organization_required.

-- The core both enqueue functions call. p_single => true words errors for one job
-- (no element index). Generic plans (here and in the helpers): with the default plan
-- cache mode its statements were re-planned on every call, about a third of the cost
-- of a single enqueue; their plans do not depend on the values anyway.
CREATE OR REPLACE FUNCTION pgrun._enqueue(p_requests jsonb, p_single boolean)
RETURNS TABLE (
    r_ordinality integer, r_job_id uuid, r_created boolean, r_status text, r_run_at timestamptz
)
LANGUAGE plpgsql
VOLATILE
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    c_max_batch CONSTANT integer := 100000;
    v_now timestamptz := pgrun.now();
    v_count integer;
    v_bad_ord integer;
    v_bad_code text;
    v_where text;
    v_ids uuid[];
    v_job_types text[];
    v_payloads jsonb[];
    v_queues text[];
    v_priorities integer[];
    v_max_attempts integer[];
    v_timeouts integer[];
    v_run_ats timestamptz[];
    v_orgs uuid[];
    v_keys text[];
    v_requests jsonb[];
    v_keyed boolean;
    v_created uuid[];
    v_pending jsonb;
    v_existing_id uuid;
    v_existing_request jsonb;
    v_request jsonb;
    v_default_org uuid;
    v_allowed_orgs uuid[];
    v_bad_org uuid;
BEGIN
    IF p_requests IS NULL OR jsonb_typeof(p_requests) <> 'array' THEN
        RAISE EXCEPTION 'job.invalid_batch' USING
            ERRCODE = 'RQ003',
            DETAIL = format(
                'jobs is %s, not a JSON array', coalesce(jsonb_typeof(p_requests), 'NULL')
            ),
            HINT = 'Pass a JSON array of objects, e.g. [{"job_type": "email.send", "payload": {}}].';
    END IF;
    v_count := jsonb_array_length(p_requests);
    IF v_count = 0 THEN
        RETURN;
    END IF;
    IF v_count > c_max_batch THEN
        RAISE EXCEPTION 'job.batch_too_large' USING
            ERRCODE = 'RQ003',
            DETAIL = format('%s jobs in one call; the limit is %s', v_count, c_max_batch),
            HINT = 'Split the array into several calls.';
    END IF;

    -- 1. Validate everything before writing anything.
    SELECT c.bad_ordinality, c.bad_code INTO v_bad_ord, v_bad_code
    FROM pgrun._enqueue_check(p_requests) AS c;
    IF v_bad_ord IS NOT NULL THEN
        PERFORM pgrun._enqueue_raise_invalid(
            v_bad_code, p_requests -> (v_bad_ord - 1), CASE WHEN NOT p_single THEN v_bad_ord END
        );
    END IF;

    -- Tenancy: the organization each job is stamped with, and whether the caller may act
    -- for it (util/_access.sql). Admins and any-organization roles skip the pass.
    SELECT w.default_organization, w.allowed_organizations INTO v_default_org, v_allowed_orgs
    FROM pgrun._caller_write_organizations() AS w;
    IF v_allowed_orgs IS NOT NULL THEN
        SELECT e.ord::integer, o.org
        INTO v_bad_ord, v_bad_org
        FROM jsonb_array_elements(p_requests) WITH ORDINALITY AS e (elem, ord)
        CROSS JOIN LATERAL (SELECT coalesce((e.elem ->> 'organization_id')::uuid, v_default_org) AS org) AS o
        WHERE CASE WHEN o.org IS NULL THEN cardinality(v_allowed_orgs) > 0 ELSE o.org <> ALL (v_allowed_orgs) END
        ORDER BY e.ord
        LIMIT 1;
        IF v_bad_ord IS NOT NULL THEN
            v_where := CASE WHEN p_single THEN '' ELSE format('element %s: ', v_bad_ord) END;
            IF v_bad_org IS NULL THEN
                PERFORM pgrun._raise_organization_required(cardinality(v_allowed_orgs), v_where);
            END IF;
            PERFORM pgrun._raise_organization_denied(v_bad_org, v_where);
        END IF;
    END IF;

    -- READ UNCOMMITTED is READ COMMITTED in PostgreSQL: both see the concurrent insert.
    IF current_setting('transaction_isolation') NOT IN ('read committed', 'read uncommitted') THEN
        SELECT e.ord::integer INTO v_bad_ord
        FROM jsonb_array_elements(p_requests) WITH ORDINALITY AS e (elem, ord)
        WHERE jsonb_typeof(e.elem -> 'idempotency_key') = 'string'
        ORDER BY e.ord
        LIMIT 1;
        IF v_bad_ord IS NOT NULL THEN
            RAISE EXCEPTION 'job.enqueue_idempotency_unsupported_isolation' USING
                ERRCODE = 'RQ006',
                DETAIL = format(
                    '%sa keyed enqueue ran at isolation level %s',
                    CASE WHEN p_single THEN '' ELSE format('element %s: ', v_bad_ord) END,
                    current_setting('transaction_isolation')
                ),
                HINT = 'Run keyed enqueues in a READ COMMITTED transaction (the default), '
                    'or leave out the idempotency key.';
        END IF;
    END IF;

    -- 2. Parse each element into its job (id, run_at, stamped organization, snapshot), in
    -- array order; the insert, the resolution of settings, the events and the NOTIFY are the
    -- shared core's (pgrun._enqueue_insert_jobs, _enqueue.sql).
    SELECT
        array_agg(q.id), array_agg(q.job_type), array_agg(q.payload), array_agg(q.queue),
        array_agg(q.priority), array_agg(q.max_attempts), array_agg(q.timeout_seconds),
        array_agg(q.eff_run_at), array_agg(q.organization_id), array_agg(q.idempotency_key),
        array_agg(q.request), bool_or(q.idempotency_key IS NOT NULL)
    INTO v_ids, v_job_types, v_payloads, v_queues, v_priorities, v_max_attempts, v_timeouts,
        v_run_ats, v_orgs, v_keys, v_requests, v_keyed
    FROM (
        SELECT
            e.ord,
            e.id,
            r.*,
            coalesce(r.run_at, v_now + make_interval(secs => r.delay_seconds::double precision), v_now)
                AS eff_run_at,
            CASE WHEN r.idempotency_key IS NOT NULL THEN
                jsonb_build_object('job_type', r.job_type, 'payload', r.payload)
                || CASE WHEN r.organization_id IS NULL THEN '{}'::jsonb
                    ELSE jsonb_build_object('organization_id', r.organization_id) END
                || CASE WHEN r.queue IS NULL THEN '{}'::jsonb
                    ELSE jsonb_build_object('queue', r.queue) END
                || CASE WHEN r.priority IS NULL THEN '{}'::jsonb
                    ELSE jsonb_build_object('priority', r.priority) END
                || CASE WHEN r.max_attempts IS NULL THEN '{}'::jsonb
                    ELSE jsonb_build_object('max_attempts', r.max_attempts) END
                || CASE WHEN r.timeout_seconds IS NULL THEN '{}'::jsonb
                    ELSE jsonb_build_object('timeout_seconds', r.timeout_seconds) END
                || CASE WHEN r.run_at IS NULL THEN '{}'::jsonb
                    ELSE jsonb_build_object(
                        'run_at', to_char(r.run_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
                    ) END
                || CASE WHEN r.delay_seconds IS NULL THEN '{}'::jsonb
                    ELSE jsonb_build_object('delay_seconds', r.delay_seconds) END
            END AS request
        FROM ROWS FROM (
            jsonb_array_elements(p_requests),
            pgrun._uuidv7_series(v_count)
        ) WITH ORDINALITY AS e (elem, id, ord)
        CROSS JOIN LATERAL (
            SELECT
                e.elem ->> 'job_type' AS job_type,
                coalesce(nullif(e.elem -> 'payload', 'null'::jsonb), '{}'::jsonb) AS payload,
                e.elem ->> 'queue' AS queue,
                (e.elem ->> 'priority')::numeric::integer AS priority,
                (e.elem ->> 'max_attempts')::numeric::integer AS max_attempts,
                (e.elem ->> 'timeout_seconds')::numeric::integer AS timeout_seconds,
                (e.elem ->> 'run_at')::timestamptz AS run_at,
                CASE jsonb_typeof(e.elem -> 'delay')
                    WHEN 'number' THEN (e.elem ->> 'delay')::numeric
                    WHEN 'string' THEN extract(EPOCH FROM (e.elem ->> 'delay')::interval)
                END AS delay_seconds,
                e.elem ->> 'idempotency_key' AS idempotency_key,
                coalesce((e.elem ->> 'organization_id')::uuid, v_default_org) AS organization_id
        ) AS r
        -- the aggregates keep this order: every array lists the elements in array order
        ORDER BY e.ord
    ) AS q;

    v_created := pgrun._enqueue_insert_jobs(
        v_ids, v_job_types, v_payloads, v_queues, v_priorities, v_max_attempts, v_timeouts, v_run_ats,
        v_orgs, v_keys, v_requests, NULL, NULL, NULL
    );

    -- Keyed elements that created nothing (their id is not among the inserted ones).
    IF v_keyed THEN
        SELECT jsonb_agg(
            jsonb_build_object(
                'ordinality', u.ord,
                'job_type', u.job_type,
                'organization_id', u.organization_id,
                'idempotency_key', u.idempotency_key,
                'request', u.request
            )
            ORDER BY u.ord
        )
        INTO v_pending
        FROM unnest(v_ids, v_job_types, v_orgs, v_keys, v_requests)
            WITH ORDINALITY AS u (id, job_type, organization_id, idempotency_key, request, ord)
        WHERE u.idempotency_key IS NOT NULL
            AND NOT EXISTS (SELECT FROM unnest(v_created) AS c (id) WHERE c.id = u.id);
    END IF;

    -- 3. Keyed elements that created nothing: an identical earlier request, or a conflict.
    IF v_pending IS NOT NULL THEN
        SELECT p.ordinality, x.id, x.enqueue_request, p.request
        INTO v_bad_ord, v_existing_id, v_existing_request, v_request
        FROM jsonb_to_recordset(v_pending) AS p (
            ordinality integer, job_type text, organization_id uuid, idempotency_key text, request jsonb
        )
        -- LIMIT keeps this a per-element probe of jobs_idempotency_idx, never a join over jobs
        LEFT JOIN LATERAL (
            SELECT h.id, h.enqueue_request
            FROM pgrun.jobs AS h
            WHERE h.job_type = p.job_type
                AND coalesce(h.organization_id, '00000000-0000-0000-0000-000000000000'::uuid)
                = coalesce(p.organization_id, '00000000-0000-0000-0000-000000000000'::uuid)
                AND h.idempotency_key = p.idempotency_key
            LIMIT 1
        ) AS x ON TRUE
        WHERE x.id IS NULL OR x.enqueue_request IS DISTINCT FROM p.request
        ORDER BY p.ordinality
        LIMIT 1;
        IF v_bad_ord IS NOT NULL THEN
            v_where := CASE WHEN p_single THEN '' ELSE format('element %s: ', v_bad_ord) END;
            IF v_existing_id IS NULL THEN
                RAISE EXCEPTION 'job.enqueue_idempotency_race' USING
                    ERRCODE = '40001',
                    DETAIL = format(
                        '%sthe job holding this idempotency key was deleted while the call ran', v_where
                    ),
                    HINT = 'Retry the call.';
            END IF;
            RAISE EXCEPTION 'job.enqueue_conflicting_retry' USING
                ERRCODE = 'RQ001',
                DETAIL = format(
                    '%sthe idempotency key already names job %s, enqueued with a different request '
                    '(differs in: %s)',
                    v_where,
                    v_existing_id,
                    (SELECT string_agg(k.key, ', ' ORDER BY k.key)
                     FROM (
                         SELECT a.key FROM jsonb_each(v_existing_request) AS a
                         UNION
                         SELECT b.key FROM jsonb_each(v_request) AS b
                     ) AS k
                     WHERE v_existing_request -> k.key IS DISTINCT FROM v_request -> k.key)
                ),
                HINT = 'Resend the original request unchanged, or use a new idempotency key '
                    'for a different request.';
        END IF;
    END IF;

    IF v_pending IS NULL THEN
        RETURN QUERY
        SELECT u.ord::integer, u.id, TRUE, 'queued'::text, u.run_at
        FROM unnest(v_ids, v_run_ats) WITH ORDINALITY AS u (id, run_at, ord)
        ORDER BY u.ord;
        RETURN;
    END IF;
    RETURN QUERY
    SELECT
        u.ord::integer,
        coalesce(e.id, u.id),
        e.ordinality IS NULL,
        coalesce(e.status, 'queued'),
        coalesce(e.run_at, u.run_at)
    FROM unnest(v_ids, v_run_ats) WITH ORDINALITY AS u (id, run_at, ord)
    LEFT JOIN (
        SELECT p.ordinality, x.id, x.status, x.run_at
        FROM jsonb_to_recordset(v_pending) AS p (
            ordinality integer, job_type text, organization_id uuid, idempotency_key text
        )
        CROSS JOIN LATERAL (
            SELECT h.id, h.status, h.run_at
            FROM pgrun.jobs AS h
            WHERE h.job_type = p.job_type
                AND coalesce(h.organization_id, '00000000-0000-0000-0000-000000000000'::uuid)
                = coalesce(p.organization_id, '00000000-0000-0000-0000-000000000000'::uuid)
                AND h.idempotency_key = p.idempotency_key
            LIMIT 1
        ) AS x
    ) AS e ON e.ordinality = u.ord
    ORDER BY u.ord;
END;
$$;

REVOKE EXECUTE ON FUNCTION pgrun._enqueue(jsonb, boolean) FROM public;

COMMENT ON FUNCTION pgrun._enqueue(jsonb, boolean) IS
'Private: the set-based core of enqueue_job and enqueue_jobs.';

CREATE OR REPLACE FUNCTION pgrun.enqueue_job(
    job_type text,
    payload jsonb DEFAULT '{}',
    queue text DEFAULT NULL,
    priority integer DEFAULT NULL,
    run_at timestamptz DEFAULT NULL,
    delay interval DEFAULT NULL,
    max_attempts integer DEFAULT NULL,
    timeout_seconds integer DEFAULT NULL,
    idempotency_key text DEFAULT NULL,
    organization_id uuid DEFAULT NULL
)
RETURNS SETOF pgrun.enqueue_job_result
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
-- plpgsql, not sql: a volatile sql function is never inlined and was parsed and planned
-- again in every transaction (~0.1 ms, about a sixth of a single enqueue); plpgsql keeps
-- its plan for the session. The result is a named row type because plpgsql cannot have
-- an output column named like the run_at parameter.
SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
    RETURN QUERY
    SELECT r.r_job_id, r.r_created, r.r_status, r.r_run_at
    FROM pgrun._enqueue(
        jsonb_build_array(
            jsonb_build_object(
                'job_type', enqueue_job.job_type,
                'payload', enqueue_job.payload,
                'queue', enqueue_job.queue,
                'priority', enqueue_job.priority,
                'run_at', enqueue_job.run_at,
                'delay', extract(EPOCH FROM enqueue_job.delay),
                'max_attempts', enqueue_job.max_attempts,
                'timeout_seconds', enqueue_job.timeout_seconds,
                'idempotency_key', enqueue_job.idempotency_key,
                'organization_id', enqueue_job.organization_id
            )
        ),
        true
    ) AS r;
END;
$$;

COMMENT ON FUNCTION pgrun.enqueue_job(
    text, jsonb, text, integer, timestamptz, interval, integer, integer, text, uuid
) IS
'Enqueue one job. Arguments left out (or NULL) come from the job type''s definition, else the built-in '
'defaults: queue default, priority 100 (0..32767, lower runs first), max_attempts 20, no timeout. '
'payload: a JSON object up to 1 MiB, nested at most 100 levels (NULL = {}). run_at (absolute, finite, at most 100 years ahead) or '
'delay (0 s..100 years from now), '
'not both; neither = ready now. With idempotency_key the job is unique per (job_type, organization_id, '
'key): an identical retry returns the existing job with created = false, a different request raises '
'job.enqueue_conflicting_retry (RQ001); keyed calls need READ COMMITTED '
'(job.enqueue_idempotency_unsupported_isolation, RQ006). Writes one enqueued event; notifies channel '
'pgrun_jobs with the queue name when the job is ready now. Returns job_id, created, status, run_at. '
'Input errors (RQ003): job.invalid_type, job.invalid_payload, job.payload_too_large, job.invalid_queue, '
'job.invalid_priority, job.invalid_max_attempts, job.invalid_timeout, job.invalid_schedule, '
'job.invalid_idempotency_key, job.invalid_organization. The job belongs to the organization the caller '
'acts for (the one named, or the only one its role is bound to): access.organization_denied (42501: an organization the caller may not act for), access.organization_required (RQ003: the caller acts for several and named none).';

CREATE OR REPLACE FUNCTION pgrun.enqueue_jobs(jobs jsonb)
RETURNS TABLE (ordinality integer, job_id uuid, created boolean)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN QUERY
    SELECT r.r_ordinality, r.r_job_id, r.r_created
    FROM pgrun._enqueue(enqueue_jobs.jobs, false) AS r;
END;
$$;

COMMENT ON FUNCTION pgrun.enqueue_jobs(jsonb) IS
'Enqueue many jobs in one statement. jobs: a JSON array (at most 100000) of objects keyed like '
'enqueue_job''s parameters: job_type, payload, queue, priority, run_at (timestamptz string), delay '
'(seconds, or an interval string), max_attempts, timeout_seconds, idempotency_key, organization_id; '
'unknown keys are refused. Same rules and errors as enqueue_job; a bad element is named by its '
'1-based index in DETAIL and nothing is written. Elements sharing an idempotency key behave like '
'retries in array order (first creates, identical later ones return it, a different one conflicts). '
'One pg_notify per queue with ready jobs. Returns one row per element: ordinality, job_id, created. '
'Extra errors: job.invalid_batch (not an array of objects, unknown keys), job.batch_too_large (RQ003).';
