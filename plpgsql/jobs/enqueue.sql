-- Enqueue: the front door. enqueue_job adds one job, enqueue_jobs many. enqueue_jobs runs
-- the set-based core pgrun._enqueue; enqueue_job takes a lean path through the same pieces
-- (all in _enqueue.sql): the same checks on its request as a one-element array (the field
-- rules as one expression, no subtransaction), the same payload, run_at and snapshot rules,
-- its arguments straight into the shared insert, the same retry check. So a request means
-- the same through either door and a keyed retry may come through the other one.
--
-- Resolution: an argument given wins, else the type's job_definitions row, else the
-- built-in default (queue 'default', priority 100 (0..32767, lower runs first),
-- max_attempts 20, no timeout, backoff 2 s / 3600 s / 0.2: pgrun._job_defaults). Unknown
-- job types are fine. The resolution, the INSERT and the NOTIFY are the shared
-- insert's (pgrun._enqueue_insert_jobs, _insert.sql), which the workflow release and the
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
-- jobs (ids from one block of reserved UUIDv7 slots) and ONE INSERT ... SELECT creates them
-- (pgrun._enqueue_insert_jobs).
-- Elements sharing a key act like retries in array order: the first creates, identical
-- later ones return its job (created = false), a different one conflicts (all rolls back).
--
-- Events: none (issue 15): the job row records the creation (created_at);
-- get_job_history shows it as the job's derived 'enqueued' event.
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
DECLARE
    v_now timestamptz := pgrun.now();
    v_delay_seconds numeric := extract(EPOCH FROM enqueue_job.delay);
    v_request jsonb;
    v_organization_id uuid;
    v_slot bigint;
    v_id uuid;
    v_payload jsonb;
    v_snapshot jsonb;
    v_jobs pgrun._new_job[];
    v_created uuid[];
    v_found jsonb;
    v_result pgrun.enqueue_job_result;
BEGIN
    -- The lean path for one job. The checks are enqueue_jobs' own, on the request as the
    -- element enqueue_jobs would take (same order, codes and DETAIL; typed arguments always
    -- parse back, so no subtransaction). Then the arguments go straight into the shared
    -- insert: no parse of the JSON back into arrays, no call of the set-based core.
    -- A key given as JSON null is checked as a key left out, so the common call (a type
    -- and a payload) is the short element, which skips the optional fields' checks.
    IF num_nonnulls(
        enqueue_job.queue, enqueue_job.priority, enqueue_job.run_at, v_delay_seconds,
        enqueue_job.max_attempts, enqueue_job.timeout_seconds, enqueue_job.idempotency_key,
        enqueue_job.organization_id
    ) = 0 THEN
        v_request := jsonb_build_object('job_type', enqueue_job.job_type, 'payload', enqueue_job.payload);
    ELSE
        v_request := jsonb_build_object(
            'job_type', enqueue_job.job_type,
            'payload', enqueue_job.payload,
            'queue', enqueue_job.queue,
            'priority', enqueue_job.priority,
            'run_at', enqueue_job.run_at,
            'delay', v_delay_seconds,
            'max_attempts', enqueue_job.max_attempts,
            'timeout_seconds', enqueue_job.timeout_seconds,
            'idempotency_key', enqueue_job.idempotency_key,
            'organization_id', enqueue_job.organization_id
        );
    END IF;
    v_organization_id := pgrun._enqueue_check_requests(jsonb_build_array(v_request), true);
    v_organization_id := coalesce(enqueue_job.organization_id, v_organization_id);

    -- one id: a slot reserved, then its id as an inlined expression, not _uuidv7_series(1)
    -- through a query nor uuidv7() (a SET clause and a strong random draw); all three advance
    -- the session's one UUIDv7 sequence. Two steps: a volatile argument used twice would keep
    -- the planner from inlining _uuidv7_at.
    v_slot := pgrun._uuidv7_reserve(1);
    v_id := pgrun._uuidv7_at(v_slot);
    v_payload := pgrun._enqueue_payload(enqueue_job.payload);
    v_result.job_id := v_id;
    v_result.created := TRUE;
    v_result.status := 'queued';
    v_result.run_at := pgrun._enqueue_run_at(enqueue_job.run_at, v_delay_seconds, v_now);
    IF enqueue_job.idempotency_key IS NOT NULL THEN
        v_snapshot := pgrun._enqueue_snapshot(
            enqueue_job.job_type, v_payload, v_organization_id, enqueue_job.queue,
            enqueue_job.priority, enqueue_job.max_attempts, enqueue_job.timeout_seconds,
            enqueue_job.run_at, v_delay_seconds
        );
    END IF;
    v_jobs := ARRAY[ROW(
        v_id, enqueue_job.job_type, v_payload, enqueue_job.queue, enqueue_job.priority,
        enqueue_job.max_attempts, enqueue_job.timeout_seconds, v_result.run_at, v_organization_id,
        enqueue_job.idempotency_key, v_snapshot, NULL, NULL, NULL
    )::pgrun._new_job];
    v_created := pgrun._enqueue_insert_jobs(v_jobs);

    -- A keyed call that created nothing: an identical earlier request, or a conflict.
    IF v_created IS NULL THEN
        v_found := pgrun._enqueue_check_retries(v_jobs, v_created, true);
        v_result.job_id := (v_found -> 0 ->> 'id')::uuid;
        v_result.created := FALSE;
        v_result.status := v_found -> 0 ->> 'status';
        v_result.run_at := (v_found -> 0 ->> 'run_at')::timestamptz;
    END IF;
    RETURN NEXT v_result;
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
'(job.enqueue_idempotency_unsupported_isolation, RQ006). Writes no event (the job row records it); notifies channel '
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
    FROM pgrun._enqueue(enqueue_jobs.jobs) AS r;
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
