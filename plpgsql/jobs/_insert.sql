-- THE insert every new job goes through, and the NOTIFY that announces new jobs.
--
-- * _enqueue_insert_jobs(jobs): the one set-based INSERT into jobs, called by the
--   three doors that make jobs: enqueue (pgrun._enqueue, and enqueue_job), the workflow
--   release (pgrun._workflow_release_steps, workflows/_release.sql) and the schedule fire
--   (pgrun._schedule_fire, schedules/fire.sql). One pgrun._new_job per job (the row type
--   of sql/0017_new_job_type.sql), in the order the jobs are inserted (for same-key
--   enqueue elements the first wins). Each door decides the job's id, payload, run_at,
--   organization, key, snapshot and links (NULL for a door that has none); queue,
--   priority, max_attempts and timeout are the door's request (NULL = not asked) and
--   resolve here, and only here:
--   coalesce(request, job_definitions, pgrun._job_defaults()); the backoff comes from the
--   definition, else the built-in default. No job_events row (issue 15): everything an
--   'enqueued' event said (the time, the link to a workflow step or a schedule) is on the
--   job row (created_at, workflow_run_id / workflow_step_key, schedule_id), and enqueue
--   records no actor; get_job_history derives the job's 'enqueued' event from the row.
--   Old 'enqueued' rows stay valid. Each row is pgrun._new_job_row's (definitions.sql: the
--   settings resolved): one job is inserted straight from it, ON CONFLICT DO NOTHING on
--   jobs_idempotency_idx; several through pgrun._new_job_rows (in array order), ON
--   CONFLICT when one of them has a key, plainly when none has (rows without a key never
--   conflict). Then the notifications (pgrun._enqueue_notify, once per payload): the queue
--   name for each queue that got a job ready now, and
--   '<queue> <due>' for each queue that got delayed jobs, <due> the earliest run_at in Unix
--   milliseconds, rounded up (pgrun._enqueue_notify_payload). Returns the ids it inserted
--   (NULL when none): a keyed element that conflicted is missing, and the door decides what
--   that means.
--
-- * _enqueue_notify(payload): pg_notify('pgrun_jobs', payload), the one place that calls
--   pg_notify for new jobs; _enqueue_notify_queues(payloads) calls it once per distinct
--   payload, in order, for a call that made several jobs (the pgTAP fixtures swap both for
--   a recorder, tests_sql/fixtures/11_front_door.sql).
--
-- Locks: _enqueue_insert_jobs locks the rows it inserts; a keyed insert waits for an
-- uncommitted insert of its key.
-- Errors: none of their own. _enqueue_insert_jobs trusts its callers: every value was
-- validated at its door, and the table's constraints are the last wall.

-- No SET clause (a SET costs a GUC save and restore on every call): under _enqueue it
-- inherits force_generic_plan, like the other helpers _enqueue alone calls; the release and
-- the fire plan it as they planned their own insert before.
CREATE OR REPLACE FUNCTION pgrun._enqueue_insert_jobs(p_jobs pgrun._new_job[])
RETURNS uuid[]
LANGUAGE plpgsql
VOLATILE
AS $$
DECLARE
    v_now timestamptz := pgrun.now();
    v_job pgrun._new_job;
    v_def pgrun.job_definitions;
    v_id uuid;
    v_queue text;
    v_run_at timestamptz;
    v_types text[];
    v_keyed boolean;
    v_inserted uuid[];
    v_queues text[];
    v_run_ats timestamptz[];
BEGIN
    -- One job (a single enqueue, most releases and fires): its type's definition by the
    -- primary key, then a one-row insert of pgrun._new_job_row, and its one notification
    -- through the inlined pgrun._enqueue_notify. The set form's plan (the definitions' CTE,
    -- the unnest, the join, the sort, the aggregates) cost a single enqueue ~10 % of its time
    -- to set up and run (docs/performance.md, eleventh pass). ON CONFLICT whether or not the job
    -- has a key: a row without one is not in jobs_idempotency_idx and never conflicts, and on
    -- one row the clause costs nothing measurable.
    IF cardinality(p_jobs) = 1 THEN
        v_job := p_jobs[1];
        SELECT x.* INTO v_def FROM pgrun.job_definitions AS x WHERE x.job_type = v_job.job_type;
        INSERT INTO pgrun.jobs AS j (
            id, job_type, queue, priority, status, payload, run_at, max_attempts, timeout_seconds,
            backoff_base_seconds, backoff_max_seconds, backoff_jitter,
            organization_id, idempotency_key, enqueue_request,
            workflow_run_id, workflow_step_key, schedule_id, created_at, updated_at
        )
        SELECT n.*
        FROM pgrun._new_job_row(
            v_job, v_def.queue, v_def.priority, v_def.max_attempts, v_def.timeout_seconds,
            v_def.backoff_base_seconds, v_def.backoff_max_seconds, v_def.backoff_jitter, v_now
        ) AS n
        ON CONFLICT (
            job_type,
            coalesce(organization_id, '00000000-0000-0000-0000-000000000000'::uuid),
            idempotency_key
        ) WHERE idempotency_key IS NOT NULL
        DO NOTHING
        RETURNING j.id, j.queue, j.run_at INTO v_id, v_queue, v_run_at;
        IF v_id IS NULL THEN
            RETURN NULL;
        END IF;
        PERFORM pgrun._enqueue_notify(pgrun._enqueue_notify_payload(v_queue, v_run_at, v_now));
        RETURN ARRAY[v_id];
    END IF;

    -- Several jobs: the job types whose definitions apply, and whether any job has a key.
    SELECT array_agg(DISTINCT u.job_type), bool_or(u.idempotency_key IS NOT NULL)
    INTO v_types, v_keyed
    FROM unnest(p_jobs) AS u;

    -- Keyed rows go in ON CONFLICT DO NOTHING on jobs_idempotency_idx. Without a key no row
    -- can conflict, and a plain insert skips what ON CONFLICT costs every row (a speculative
    -- insertion: a lock, the arbiter probe, and a second WAL record to confirm the row). The
    -- two statements differ in that clause alone: it is fixed in a statement's plan.
    IF v_keyed THEN
        WITH ins AS (
            INSERT INTO pgrun.jobs AS j (
                id, job_type, queue, priority, status, payload, run_at, max_attempts, timeout_seconds,
                backoff_base_seconds, backoff_max_seconds, backoff_jitter,
                organization_id, idempotency_key, enqueue_request,
                workflow_run_id, workflow_step_key, schedule_id, created_at, updated_at
            )
            SELECT n.* FROM pgrun._new_job_rows(p_jobs, v_types, v_now) AS n
            ON CONFLICT (
                job_type,
                coalesce(organization_id, '00000000-0000-0000-0000-000000000000'::uuid),
                idempotency_key
            ) WHERE idempotency_key IS NOT NULL
            DO NOTHING
            RETURNING j.id, j.queue, j.run_at
        )
        SELECT array_agg(i.id), array_agg(i.queue), array_agg(i.run_at)
        INTO v_inserted, v_queues, v_run_ats
        FROM ins AS i;
    ELSE
        WITH ins AS (
            INSERT INTO pgrun.jobs AS j (
                id, job_type, queue, priority, status, payload, run_at, max_attempts, timeout_seconds,
                backoff_base_seconds, backoff_max_seconds, backoff_jitter,
                organization_id, idempotency_key, enqueue_request,
                workflow_run_id, workflow_step_key, schedule_id, created_at, updated_at
            )
            SELECT n.* FROM pgrun._new_job_rows(p_jobs, v_types, v_now) AS n
            RETURNING j.id, j.queue, j.run_at
        )
        SELECT array_agg(i.id), array_agg(i.queue), array_agg(i.run_at)
        INTO v_inserted, v_queues, v_run_ats
        FROM ins AS i;
    END IF;

    -- The NOTIFY payloads: each queue that got a job ready now, and for each queue that got
    -- delayed jobs its earliest due time (pgrun._enqueue_notify_jobs, which makes one job's
    -- payload directly, as the single-job path above does).
    IF v_inserted IS NOT NULL THEN
        PERFORM pgrun._enqueue_notify_jobs(v_queues, v_run_ats, v_now);
    END IF;
    RETURN v_inserted;
END;
$$;

REVOKE EXECUTE ON FUNCTION pgrun._enqueue_insert_jobs(pgrun._new_job[]) FROM public;

COMMENT ON FUNCTION pgrun._enqueue_insert_jobs(pgrun._new_job[]) IS
'Private: THE insert of new jobs (enqueue, workflow release, schedule fire): settings resolved as request, '
'definition, built-in default; no event (the job row says it all); NOTIFY per queue; returns the ids inserted.';

-- The NOTIFY payload for new jobs of one queue, run_at their (earliest) due time: the queue
-- name when they are ready now, else the name, a blank and the due time in Unix
-- milliseconds (rounded up, so a worker woken then finds them due). STABLE, as extract is
-- for a timestamptz, so that the planner inlines it.
CREATE OR REPLACE FUNCTION pgrun._enqueue_notify_payload(
    p_queue text,
    p_run_at timestamptz,
    p_now timestamptz
)
RETURNS text
LANGUAGE sql
STABLE
PARALLEL SAFE
AS $$
    SELECT CASE
        WHEN p_run_at OPERATOR(pg_catalog.<=) p_now THEN p_queue
        ELSE p_queue OPERATOR(pg_catalog.||) ' ' OPERATOR(pg_catalog.||) pg_catalog.ceil(
            pg_catalog.extract('epoch', p_run_at) OPERATOR(pg_catalog.*) 1000
        )::pg_catalog.int8::pg_catalog.text
    END
$$;

REVOKE EXECUTE ON FUNCTION pgrun._enqueue_notify_payload(text, timestamptz, timestamptz) FROM public;

COMMENT ON FUNCTION pgrun._enqueue_notify_payload(text, timestamptz, timestamptz) IS
'Private: the NOTIFY payload for new jobs of one queue: the queue when ready now, else the queue and the '
'earliest due time in Unix milliseconds.';

-- Wakes idle workers: THE pg_notify for new jobs, of one payload (a queue name: jobs ready
-- now; a queue name, a blank and a due time in Unix milliseconds: delayed jobs). SQL without a
-- SET clause: inlined into the expression or statement that asks, so a single enqueue's
-- notification costs no function call.
CREATE OR REPLACE FUNCTION pgrun._enqueue_notify(p_payload text)
RETURNS void
LANGUAGE sql
VOLATILE
AS $$
    SELECT pg_catalog.pg_notify('pgrun_jobs', p_payload)
$$;

REVOKE EXECUTE ON FUNCTION pgrun._enqueue_notify(text) FROM public;

COMMENT ON FUNCTION pgrun._enqueue_notify(text) IS
'Private: pg_notify(''pgrun_jobs'', payload), the one call that announces new jobs (queue, or queue and due '
'time in Unix ms).';

-- The notifications for jobs queued (new, or back in the queue: a retry, a job's next step)
-- in queues p_queues at p_run_ats, parallel arrays: each queue that got a job ready now, and
-- for each queue that got delayed jobs its earliest due time (one payload each). One job
-- makes its payload directly (the grouping query costs ~45 us to set up in a transaction).
CREATE OR REPLACE FUNCTION pgrun._enqueue_notify_jobs(
    p_queues text[],
    p_run_ats timestamptz[],
    p_now timestamptz
)
RETURNS void
LANGUAGE plpgsql
VOLATILE
AS $$
DECLARE
    v_payloads text[];
BEGIN
    IF cardinality(p_queues) = 1 THEN
        PERFORM pgrun._enqueue_notify(pgrun._enqueue_notify_payload(p_queues[1], p_run_ats[1], p_now));
        RETURN;
    END IF;
    SELECT array_agg(x.payload) INTO v_payloads FROM (
        SELECT DISTINCT u.queue AS payload
        FROM unnest(p_queues, p_run_ats) AS u (queue, run_at) WHERE u.run_at <= p_now
        UNION ALL
        SELECT pgrun._enqueue_notify_payload(u.queue, min(u.run_at), p_now)
        FROM unnest(p_queues, p_run_ats) AS u (queue, run_at) WHERE u.run_at > p_now GROUP BY u.queue
    ) AS x;
    PERFORM pgrun._enqueue_notify_queues(v_payloads);
END;
$$;

REVOKE EXECUTE ON FUNCTION pgrun._enqueue_notify_jobs(text[], timestamptz[], timestamptz) FROM public;

COMMENT ON FUNCTION pgrun._enqueue_notify_jobs(text[], timestamptz[], timestamptz) IS
'Private: the notifications for jobs queued in the given queues at the given run_ats (parallel arrays): '
'each queue with a job ready now, and each queue with delayed jobs and their earliest due time, once.';

-- The payloads of several new jobs: one notification per distinct payload, in order.
CREATE OR REPLACE FUNCTION pgrun._enqueue_notify_queues(p_queues text[])
RETURNS void
LANGUAGE plpgsql
VOLATILE
AS $$
BEGIN
    -- plpgsql, not sql: a sql function whose body is a query is parsed and planned again on
    -- every call
    PERFORM pgrun._enqueue_notify(q.queue)
    FROM (SELECT DISTINCT u.queue FROM unnest(p_queues) AS u (queue) ORDER BY u.queue) AS q;
END;
$$;

REVOKE EXECUTE ON FUNCTION pgrun._enqueue_notify_queues(text[]) FROM public;

COMMENT ON FUNCTION pgrun._enqueue_notify_queues(text[]) IS
'Private: pgrun._enqueue_notify once per distinct payload (queue, or queue and due time in Unix ms); the one '
'insert of new jobs (pgrun._enqueue_insert_jobs) calls it for a call that made several jobs.';
