-- What `pgrun dashboard` reads beyond get_job / list_jobs / queue_depth: its overview page,
-- and a job's history. Read-only; every read bounded by an index or a LIMIT, so both stay
-- cheap on a table with millions of finished jobs (docs/dashboard.md has the plans).
--
-- dashboard_overview(organization_id) returns one jsonb object (times by pgrun.now(); the window is the current minute and
-- the 59 before it):
--   "depth":   one object per queue and job type with queued, running or dead jobs: ready
--              (queued, run_at reached), delayed (queued, run_at in the future), running,
--              retrying (queued after a failed attempt: attempt > 0; also counted in ready
--              or delayed), dead, oldest_ready_seconds, paused, max_concurrency (the
--              type's cap, NULL when none). Live counts read only the
--              queued and running rows (the partial indexes jobs_claim_idx, jobs_lease_idx).
--              Dead jobs are counted from their open dead letters (requeued_at NULL), the
--              newest dead_limit of them by id (a backward walk of the primary key), each
--              checked against its job (still dead, in scope) by a primary-key probe;
--              "dead_capped" says the limit was reached (the counts are then a lower bound).
--   "minutes": sixty objects, oldest first: minute, succeeded, dead, cancelled (jobs that
--              reached that status in the minute), started (of those, and of the running
--              jobs, the ones whose latest attempt started in the minute) and
--              latency_p50_seconds / latency_p95_seconds over them (started_at - run_at, the
--              wait from due to claim). Read from the jobs finished in the window through
--              jobs_finished_idx, newest first, at most activity_limit rows;
--              "activity_capped" says the limit was reached (older minutes are then partial).
--   "workers": the workers seen in the window, most recent first (at most 100): worker_id,
--              running (jobs it holds now), last_seen_at (its latest heartbeat, claim or
--              finish), from the running jobs and the same bounded read of finished ones.
--   "oldest_ready_seconds", "now", "window_start", "dead_limit", "activity_limit".
--
-- get_job_history(job_id, organization_id, max_rows) returns what get_job leaves out: the
-- job's "events" (its transitions: every column of job_events but the lease token and the
-- job id) and its "log_lines" (job_logs: attempt, level, message, fields, created_at), each
-- the newest max_rows (default 200, 1..1000) in order, oldest first, through the primary key
-- (job_id, id) and job_logs_job_idx; "events_more" / "log_lines_more" say older ones exist.
-- The first event is the job's creation: since issue 15 no 'enqueued' row is written (the
-- job row holds all it said), so it is DERIVED from the job row: event 'enqueued', NULL ->
-- queued, attempt 0, created_at the job's, detail naming the workflow step
-- ({workflow_run_id, workflow_step_key}) or the schedule ({schedule_id}) as the row did, id
-- NULL and "derived": true. It counts as the oldest event for max_rows and events_more, and
-- is left out when an 'enqueued' row of the job is stored (a job created before). Claims
-- write no row either: the event that ends an attempt carries its start and worker, and
-- get_job's "attempts" lists every claim that ran. Success writes none since 0023: a job
-- that succeeded shows a DERIVED 'succeeded' event as its newest (running -> succeeded, its
-- last attempt, worker, step and start, created_at the job's finished_at, outcome
-- 'succeeded', id NULL, "derived": true), taking one of max_rows; a job that succeeded
-- before 0023 shows its stored row instead (its job row kept no lease token).
--
-- Tenancy (util/_access.sql) as for queue_depth and get_job: only the jobs the caller may see;
-- organization_id narrows that to one organization; an admin without one sees every
-- organization. Worker ids are those that ran the caller's jobs. Another organization's job is
-- job.not_found, exactly like a missing one.
--
-- Locks: none (reads in the statement's snapshot). Errors: job.not_found (RQ002),
-- job.invalid_max_rows (RQ003), both from get_job_history.

CREATE OR REPLACE FUNCTION pgrun.dashboard_overview(organization_id uuid DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    c_dead_limit constant integer := 10000;
    c_activity_limit constant integer := 100000;
    v_now timestamptz := pgrun.now();
    v_since timestamptz := date_trunc('minute', pgrun.now()) - interval '59 minutes';
    v_scope record;
    v_depth jsonb;
    v_dead_read integer;
    v_activity_read integer;
    v_minutes jsonb;
    v_workers jsonb;
    v_oldest double precision;
BEGIN
    SELECT c.all_organizations, c.organization_ids, c.untenanted INTO v_scope
    FROM pgrun._caller_scope(dashboard_overview.organization_id) AS c;

    -- The live rows, the newest open dead letters, and the runtime switches.
    -- queued and running rows apart, so that each side is a walk of its partial index
    -- (jobs_claim_idx, jobs_lease_idx); "status IN (...)" is planned as a scan of the table.
    WITH open_jobs AS (
        SELECT j.queue, j.job_type, j.status, j.run_at, j.attempt
        FROM pgrun.jobs AS j
        WHERE j.status = 'queued'
            AND pgrun._in_scope(
                j.organization_id, v_scope.all_organizations, v_scope.organization_ids, v_scope.untenanted
            )
        UNION ALL
        SELECT j.queue, j.job_type, j.status, j.run_at, j.attempt
        FROM pgrun.jobs AS j
        WHERE j.status = 'running'
            AND pgrun._in_scope(
                j.organization_id, v_scope.all_organizations, v_scope.organization_ids, v_scope.untenanted
            )
    ),

    live AS (
        SELECT
            o.queue,
            o.job_type,
            count(*) FILTER (WHERE o.status = 'queued' AND o.run_at <= v_now) AS ready,
            count(*) FILTER (WHERE o.status = 'queued' AND o.run_at > v_now) AS delayed,
            count(*) FILTER (WHERE o.status = 'running') AS running,
            count(*) FILTER (WHERE o.status = 'queued' AND o.attempt > 0) AS retrying,
            min(o.run_at) FILTER (WHERE o.status = 'queued' AND o.run_at <= v_now) AS oldest_ready_run_at
        FROM open_jobs AS o
        GROUP BY o.queue, o.job_type
    ),

    letters AS (
        SELECT d.job_id, d.queue, d.job_type
        FROM pgrun.job_dead_letters AS d
        WHERE d.requeued_at IS NULL
        ORDER BY d.id DESC
        LIMIT c_dead_limit
    ),

    -- each letter's job by primary key (a correlated subquery: a probe per letter, never a
    -- join that could scan jobs): still dead, and visible to the caller
    dead AS (
        SELECT l.queue, l.job_type, count(*) AS dead
        FROM letters AS l
        WHERE (
            SELECT
                j.status = 'dead'
                AND pgrun._in_scope(
                    j.organization_id, v_scope.all_organizations, v_scope.organization_ids, v_scope.untenanted
                )
            FROM pgrun.jobs AS j
            WHERE j.id = l.job_id
        )
        GROUP BY l.queue, l.job_type
    ),

    merged AS (
        SELECT
            coalesce(l.queue, d.queue) AS queue,
            coalesce(l.job_type, d.job_type) AS job_type,
            coalesce(l.ready, 0) AS ready,
            coalesce(l.delayed, 0) AS delayed,
            coalesce(l.running, 0) AS running,
            coalesce(l.retrying, 0) AS retrying,
            coalesce(d.dead, 0) AS dead,
            extract(EPOCH FROM v_now - l.oldest_ready_run_at)::double precision AS oldest_ready_seconds
        FROM live AS l
        FULL JOIN dead AS d ON l.queue = d.queue AND l.job_type = d.job_type
    )

    SELECT
        coalesce(
            jsonb_agg(
                jsonb_build_object(
                    'queue', r.queue,
                    'job_type', r.job_type,
                    'ready', r.ready,
                    'delayed', r.delayed,
                    'running', r.running,
                    'retrying', r.retrying,
                    'dead', r.dead,
                    'oldest_ready_seconds', r.oldest_ready_seconds,
                    'paused', coalesce(rc.paused, FALSE),
                    'max_concurrency', rc.max_concurrency
                )
                ORDER BY r.queue, r.job_type
            ),
            '[]'::jsonb
        ),
        max(r.oldest_ready_seconds),
        (SELECT count(*) FROM letters)
    INTO v_depth, v_oldest, v_dead_read
    FROM merged AS r
    LEFT JOIN pgrun.job_runtime_configs AS rc ON r.job_type = rc.job_type;

    -- The window: jobs finished in it (bounded), and the running ones.
    WITH finished AS (
        SELECT j.status, j.finished_at, j.started_at, j.run_at, j.worker_id
        FROM pgrun.jobs AS j
        WHERE j.finished_at >= v_since
            AND pgrun._in_scope(
                j.organization_id, v_scope.all_organizations, v_scope.organization_ids, v_scope.untenanted
            )
        ORDER BY j.finished_at DESC
        LIMIT c_activity_limit
    ),

    running AS (
        SELECT j.started_at, j.run_at, j.worker_id, greatest(j.started_at, j.heartbeat_at) AS seen_at
        FROM pgrun.jobs AS j
        WHERE j.status = 'running'
            AND pgrun._in_scope(
                j.organization_id, v_scope.all_organizations, v_scope.organization_ids, v_scope.untenanted
            )
    ),

    starts AS (
        SELECT
            date_trunc('minute', s.started_at) AS minute,
            greatest(extract(EPOCH FROM s.started_at - s.run_at), 0)::double precision AS latency
        FROM (
            SELECT f.started_at, f.run_at FROM finished AS f WHERE f.started_at >= v_since
            UNION ALL
            SELECT r.started_at, r.run_at FROM running AS r WHERE r.started_at >= v_since
        ) AS s
    ),

    ends AS (
        SELECT
            date_trunc('minute', f.finished_at) AS minute,
            count(*) FILTER (WHERE f.status = 'succeeded') AS succeeded,
            count(*) FILTER (WHERE f.status = 'dead') AS dead,
            count(*) FILTER (WHERE f.status = 'cancelled') AS cancelled
        FROM finished AS f
        GROUP BY 1
    ),

    lat AS (
        SELECT
            s.minute,
            count(*) AS started,
            percentile_cont(0.5) WITHIN GROUP (ORDER BY s.latency) AS p50,
            percentile_cont(0.95) WITHIN GROUP (ORDER BY s.latency) AS p95
        FROM starts AS s
        GROUP BY s.minute
    ),

    seen AS (
        SELECT
            w.worker_id,
            count(*) FILTER (WHERE w.running) AS running,
            max(w.seen_at) AS last_seen_at
        FROM (
            SELECT r.worker_id, r.seen_at, TRUE AS running FROM running AS r
            UNION ALL
            SELECT f.worker_id, f.finished_at, FALSE FROM finished AS f WHERE f.worker_id IS NOT NULL
        ) AS w
        GROUP BY w.worker_id
        ORDER BY max(w.seen_at) DESC, w.worker_id
        LIMIT 100
    )

    SELECT
        (SELECT
            jsonb_agg(
                jsonb_build_object(
                    'minute', m.minute,
                    'succeeded', coalesce(e.succeeded, 0),
                    'dead', coalesce(e.dead, 0),
                    'cancelled', coalesce(e.cancelled, 0),
                    'started', coalesce(l.started, 0),
                    'latency_p50_seconds', l.p50,
                    'latency_p95_seconds', l.p95
                )
                ORDER BY m.minute
            )
         FROM generate_series(v_since, date_trunc('minute', v_now), interval '1 minute') AS m (minute)
         LEFT JOIN ends AS e ON m.minute = e.minute
         LEFT JOIN lat AS l ON m.minute = l.minute),
        (SELECT
            coalesce(
                jsonb_agg(
                    jsonb_build_object('worker_id', s.worker_id, 'running', s.running, 'last_seen_at', s.last_seen_at)
                    ORDER BY s.last_seen_at DESC, s.worker_id
                ),
                '[]'::jsonb
            )
         FROM seen AS s),
        (SELECT count(*) FROM finished)
    INTO v_minutes, v_workers, v_activity_read;

    RETURN jsonb_build_object(
        'now', v_now,
        'window_start', v_since,
        'depth', v_depth,
        'oldest_ready_seconds', v_oldest,
        'dead_limit', c_dead_limit,
        'dead_capped', v_dead_read >= c_dead_limit,
        'minutes', v_minutes,
        'activity_limit', c_activity_limit,
        'activity_capped', v_activity_read >= c_activity_limit,
        'workers', v_workers
    );
END;
$$;

COMMENT ON FUNCTION pgrun.dashboard_overview(uuid) IS
'The dashboard''s overview as one jsonb object, every read bounded: "depth" per queue and job type (ready, '
'delayed, running, retrying, dead, oldest_ready_seconds, paused, max_concurrency; dead from the newest 10,000 open dead '
'letters, dead_capped when reached), "minutes" over the last hour (succeeded, dead, cancelled, started, '
'latency_p50_seconds / latency_p95_seconds of started_at - run_at; from at most 100,000 jobs finished '
'in the hour, activity_capped when reached), "workers" seen in the hour (worker_id, running, '
'last_seen_at), oldest_ready_seconds. Only the jobs the caller may see (organization_id as for '
'queue_depth). Errors: none.';

-- An event get_job_history derives from the job row instead of reading it from job_events:
-- the given fields as a job_events row (every other column NULL, id included), shown like a
-- stored one (without job_id and lease_token) and marked "derived": true. SQL, inlined.
CREATE OR REPLACE FUNCTION pgrun._derived_job_event(p_fields jsonb)
RETURNS jsonb
LANGUAGE sql
STABLE
AS $$
    SELECT pg_catalog.to_jsonb(pg_catalog.jsonb_populate_record(NULL::pgrun.job_events, p_fields))
        OPERATOR(pg_catalog.-) 'job_id' OPERATOR(pg_catalog.-) 'lease_token'
        OPERATOR(pg_catalog.||) '{"derived": true}'::jsonb
$$;

REVOKE EXECUTE ON FUNCTION pgrun._derived_job_event(jsonb) FROM public;

COMMENT ON FUNCTION pgrun._derived_job_event(jsonb) IS
'Private: a job event derived from the job row (the given fields as a job_events row, without job_id and '
'lease_token, marked "derived": true), for get_job_history.';

CREATE OR REPLACE FUNCTION pgrun.get_job_history(
    job_id uuid,
    organization_id uuid DEFAULT NULL,
    max_rows integer DEFAULT 200
)
RETURNS jsonb
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_limit integer := coalesce(get_job_history.max_rows, 200);
    v_scope record;
    v_job record;
    v_events jsonb;
    v_events_read integer;
    v_stored_limit integer;
    v_enqueued_read integer;
    v_events_more boolean;
    v_logs jsonb;
    v_logs_read integer;
BEGIN
    IF v_limit NOT BETWEEN 1 AND 1000 THEN
        PERFORM pgrun._raise(
            'job.invalid_max_rows',
            format('max_rows %s is outside 1..1000', v_limit),
            'Ask for at most 1000 events and log lines; the newest come first.'
        );
    END IF;
    SELECT c.all_organizations, c.organization_ids, c.untenanted INTO v_scope
    FROM pgrun._caller_scope(get_job_history.organization_id) AS c;
    SELECT
        j.created_at, j.workflow_run_id, j.workflow_step_key, j.schedule_id,
        j.total_attempts, j.step, j.worker_id, j.started_at, j.finished_at,
        j.status = 'succeeded' AND j.lease_token IS NOT NULL AS success_on_row
    INTO v_job
    FROM pgrun.jobs AS j
    WHERE j.id = get_job_history.job_id
        AND pgrun._in_scope(
            j.organization_id, v_scope.all_organizations, v_scope.organization_ids, v_scope.untenanted
        );
    IF NOT FOUND THEN
        PERFORM pgrun._job_raise_not_found(get_job_history.job_id, get_job_history.organization_id);
    END IF;

    -- The derived 'succeeded' event, when the job row records the attempt that succeeded: the
    -- newest of all (success is final), so it takes one of the max_rows and the stored
    -- events share the others.
    v_stored_limit := v_limit - CASE WHEN v_job.success_on_row THEN 1 ELSE 0 END;
    SELECT
        coalesce(jsonb_agg(to_jsonb(e) - 'job_id' - 'lease_token' ORDER BY e.id) FILTER (WHERE e.n <= v_stored_limit), '[]'),
        count(*),
        count(*) FILTER (WHERE e.event = 'enqueued')
    INTO v_events, v_events_read, v_enqueued_read
    FROM (
        SELECT x.*, row_number() OVER (ORDER BY x.id DESC) AS n
        FROM (
            SELECT ev.*
            FROM pgrun.job_events AS ev
            WHERE ev.job_id = get_job_history.job_id
            ORDER BY ev.id DESC
            LIMIT v_stored_limit + 1
        ) AS x
    ) AS e;
    v_events_more := v_events_read > v_stored_limit;

    -- The derived 'enqueued' event: the oldest of all, so it is shown only when every stored
    -- event is and there is room for one more; none of them is an old 'enqueued' row then.
    IF NOT v_events_more AND v_enqueued_read = 0 THEN
        IF v_events_read < v_stored_limit THEN
            v_events := jsonb_build_array(pgrun._derived_job_event(jsonb_build_object(
                'event', 'enqueued',
                'to_status', 'queued',
                'attempt', 0,
                'created_at', v_job.created_at,
                'detail', CASE
                    WHEN v_job.workflow_run_id IS NOT NULL THEN jsonb_build_object(
                        'workflow_run_id', v_job.workflow_run_id, 'workflow_step_key', v_job.workflow_step_key
                    )
                    WHEN v_job.schedule_id IS NOT NULL THEN jsonb_build_object('schedule_id', v_job.schedule_id)
                END
            ))) || v_events;
        ELSE
            v_events_more := TRUE;
        END IF;
    END IF;
    IF v_job.success_on_row THEN
        v_events := v_events || jsonb_build_array(pgrun._derived_job_event(jsonb_build_object(
            'event', 'succeeded',
            'from_status', 'running',
            'to_status', 'succeeded',
            'attempt', v_job.total_attempts,
            'worker_id', v_job.worker_id,
            'created_at', v_job.finished_at,
            'outcome', 'succeeded',
            'step', v_job.step,
            'started_at', v_job.started_at
        )));
    END IF;

    SELECT
        coalesce(
            jsonb_agg(
                jsonb_build_object(
                    'id', l.id, 'attempt', l.attempt, 'level', l.level, 'message', l.message,
                    'fields', l.fields, 'created_at', l.created_at
                )
                ORDER BY l.id
            ) FILTER (WHERE l.n <= v_limit),
            '[]'
        ),
        count(*)
    INTO v_logs, v_logs_read
    FROM (
        SELECT x.*, row_number() OVER (ORDER BY x.id DESC) AS n
        FROM (
            SELECT lg.id, lg.attempt, lg.level, lg.message, lg.fields, lg.created_at
            FROM pgrun.job_logs AS lg
            WHERE lg.job_id = get_job_history.job_id
            ORDER BY lg.id DESC
            LIMIT v_limit + 1
        ) AS x
    ) AS l;

    RETURN jsonb_build_object(
        'events', v_events,
        'events_more', v_events_more,
        'log_lines', v_logs,
        'log_lines_more', v_logs_read > v_limit
    );
END;
$$;

COMMENT ON FUNCTION pgrun.get_job_history(uuid, uuid, integer) IS
'What get_job leaves out, as jsonb: "events" (the job''s transitions, lease token omitted; the first, '
'"enqueued", and for a succeeded job the last, "succeeded", derived from the job row and marked '
'"derived": true unless stored) and "log_lines" '
'(append_job_log), each the newest max_rows (default 200, 1..1000) oldest first, with events_more / '
'log_lines_more when older ones exist. Only jobs the caller may see (organization_id names one). Errors: '
'job.not_found (RQ002), job.invalid_max_rows (RQ003).';
