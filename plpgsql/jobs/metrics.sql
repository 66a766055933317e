-- queue_depth, job_metrics and count_jobs: what is waiting, running and finishing, per queue
-- and job type, and how many jobs are in each status.
--
-- All three count only the jobs the caller may see (pgrun._caller_scope of organization_id: an
-- admin without one counts every organization, any other role its own organizations, or the
-- work without an organization), so a tenant's dashboard never shows another tenant's queue.
--
-- queue_depth reads only queued and running rows (the two partial indexes), so it stays cheap
-- however much finished history the table holds. job_metrics scans every row still in jobs
-- (counts by status over all of them; rates and percentiles over the last 5 minutes): poll it
-- for dashboards and alerts, never from a hot path. Times use pgrun.now().
--
-- count_jobs(status, job_type, queue, organization_id, workflow_run_id) is list_jobs without
-- the paging: one row per status of jobs_status_check in lifecycle order (queued, running,
-- succeeded, dead, cancelled; zeros included), or with status given that one row. Its filters,
-- argument check (_job_check_status), filters and tenancy (_job_filter) are list_jobs'
-- (jobs/inspect.sql), and like it each filter combination is planned on its own (dynamic SQL),
-- so the planner sees the status and can use a partial index. What it costs, per status (plan
-- shapes in docs/enqueue.md, "Counting jobs"):
--   queued    an index-only scan of jobs_claim_idx (partial: queued rows only), so it grows
--             with the queued jobs, not with the finished history;
--   running   the same over jobs_lease_idx (running rows only);
--   succeeded, dead, cancelled, or no status: a sequential scan of the whole jobs table: no
--             index holds the status of finished rows (jobs_finished_idx has finished_at
--             only), and one would be written on every finish. Poll these like job_metrics.
-- A filter on organization_id or workflow_run_id can turn the scan into a probe of
-- jobs_organization_idx / jobs_workflow_idx when it selects few rows.
--
-- Locks: none. Errors: job.invalid_status (RQ003) from count_jobs; none from the others.

CREATE OR REPLACE FUNCTION pgrun.queue_depth(organization_id uuid DEFAULT NULL)
RETURNS TABLE (
    queue text,
    job_type text,
    ready bigint,
    delayed bigint,
    running bigint,
    oldest_ready_age interval,
    paused boolean,
    max_concurrency integer
)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    -- The two statuses are read apart: each branch walks its partial index (jobs_claim_idx,
    -- jobs_lease_idx). One "status IN (...)" filter was planned as a scan of the whole table
    -- (0.31 s with a million finished jobs).
    WITH open_jobs AS (
        SELECT j.queue, j.job_type, j.status, j.run_at
        FROM pgrun.jobs AS j
        CROSS JOIN pgrun._caller_scope(queue_depth.organization_id) AS c
        WHERE j.status = 'queued'
            AND pgrun._in_scope(j.organization_id, c.all_organizations, c.organization_ids, c.untenanted)
        UNION ALL
        SELECT j.queue, j.job_type, j.status, j.run_at
        FROM pgrun.jobs AS j
        CROSS JOIN pgrun._caller_scope(queue_depth.organization_id) AS c
        WHERE j.status = 'running'
            AND pgrun._in_scope(j.organization_id, c.all_organizations, c.organization_ids, c.untenanted)
    )

    SELECT
        o.queue,
        o.job_type,
        count(*) FILTER (WHERE o.status = 'queued' AND o.run_at <= pgrun.now()),
        count(*) FILTER (WHERE o.status = 'queued' AND o.run_at > pgrun.now()),
        count(*) FILTER (WHERE o.status = 'running'),
        pgrun.now() - min(o.run_at) FILTER (WHERE o.status = 'queued' AND o.run_at <= pgrun.now()),
        coalesce(bool_or(rc.paused), FALSE),
        max(rc.max_concurrency)
    FROM open_jobs AS o
    LEFT JOIN pgrun.job_runtime_configs AS rc ON o.job_type = rc.job_type
    GROUP BY o.queue, o.job_type
    ORDER BY o.queue, o.job_type
$$;

COMMENT ON FUNCTION pgrun.queue_depth(uuid) IS
'Per queue and job type with queued or running jobs the caller may see: ready (queued, run_at reached), '
'delayed (queued, run_at in the future), running, oldest_ready_age (how long the oldest ready job has '
'waited past its run_at; NULL when none is ready), and the type''s runtime switches (paused, '
'max_concurrency). With organization_id, that organization''s jobs only; without it, an admin sees every '
'organization and any other role its own (or the work without an organization). Reads only queued and '
'running rows.';

CREATE OR REPLACE FUNCTION pgrun.job_metrics(organization_id uuid DEFAULT NULL)
RETURNS TABLE (
    job_type text,
    queue text,
    queued bigint,
    running bigint,
    succeeded bigint,
    dead bigint,
    cancelled bigint,
    window_start timestamptz,
    succeeded_per_minute numeric,
    latency_p50_seconds double precision,
    latency_p95_seconds double precision,
    duration_p50_seconds double precision,
    duration_p95_seconds double precision,
    crashed bigint,
    lease_expired bigint
)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    WITH w AS (
        SELECT pgrun.now() - interval '5 minutes' AS window_start
    ),

    scope AS (
        SELECT c.all_organizations, c.organization_ids, c.untenanted
        FROM pgrun._caller_scope(job_metrics.organization_id) AS c
    ),

    per_type AS (
        SELECT
            j.job_type,
            j.queue,
            count(*) FILTER (WHERE j.status = 'queued') AS queued,
            count(*) FILTER (WHERE j.status = 'running') AS running,
            count(*) FILTER (WHERE j.status = 'succeeded') AS succeeded,
            count(*) FILTER (WHERE j.status = 'dead') AS dead,
            count(*) FILTER (WHERE j.status = 'cancelled') AS cancelled,
            round(
                count(*) FILTER (WHERE j.status = 'succeeded' AND j.finished_at >= w.window_start) / 5.0, 2
            ) AS succeeded_per_minute,
            percentile_cont(0.5) WITHIN GROUP (
                ORDER BY greatest(extract(EPOCH FROM j.started_at - j.run_at), 0)
            ) FILTER (WHERE j.started_at >= w.window_start AND j.status <> 'queued') AS latency_p50_seconds,
            percentile_cont(0.95) WITHIN GROUP (
                ORDER BY greatest(extract(EPOCH FROM j.started_at - j.run_at), 0)
            ) FILTER (WHERE j.started_at >= w.window_start AND j.status <> 'queued') AS latency_p95_seconds,
            percentile_cont(0.5) WITHIN GROUP (
                ORDER BY extract(EPOCH FROM j.finished_at - j.started_at)
            ) FILTER (
                WHERE j.finished_at >= w.window_start AND j.started_at IS NOT NULL
            ) AS duration_p50_seconds,
            percentile_cont(0.95) WITHIN GROUP (
                ORDER BY extract(EPOCH FROM j.finished_at - j.started_at)
            ) FILTER (
                WHERE j.finished_at >= w.window_start AND j.started_at IS NOT NULL
            ) AS duration_p95_seconds
        FROM pgrun.jobs AS j
        CROSS JOIN w
        CROSS JOIN scope AS c
        WHERE pgrun._in_scope(j.organization_id, c.all_organizations, c.organization_ids, c.untenanted)
        GROUP BY j.job_type, j.queue
    ),

    crashes AS (
        SELECT
            j.job_type,
            j.queue,
            count(*) FILTER (WHERE a.outcome = 'crashed') AS crashed,
            count(*) FILTER (WHERE a.outcome = 'lease_expired') AS lease_expired
        FROM pgrun.job_events AS a
        INNER JOIN pgrun.jobs AS j ON a.job_id = j.id
        CROSS JOIN w
        CROSS JOIN scope AS c
        WHERE a.outcome IN ('crashed', 'lease_expired') AND a.created_at >= w.window_start
            AND pgrun._in_scope(j.organization_id, c.all_organizations, c.organization_ids, c.untenanted)
        GROUP BY j.job_type, j.queue
    )

    SELECT
        p.job_type,
        p.queue,
        p.queued,
        p.running,
        p.succeeded,
        p.dead,
        p.cancelled,
        w.window_start,
        p.succeeded_per_minute,
        p.latency_p50_seconds,
        p.latency_p95_seconds,
        p.duration_p50_seconds,
        p.duration_p95_seconds,
        coalesce(c.crashed, 0),
        coalesce(c.lease_expired, 0)
    FROM per_type AS p
    CROSS JOIN w
    LEFT JOIN crashes AS c ON p.job_type = c.job_type AND p.queue = c.queue
    ORDER BY p.queue, p.job_type
$$;

COMMENT ON FUNCTION pgrun.job_metrics(uuid) IS
'Health per job type and queue, over the jobs the caller may see (organization_id as for queue_depth): '
'counts by status (queued, running, succeeded, dead, cancelled) over all rows still in jobs; and over the '
'last 5 minutes (from window_start, by pgrun.now()): succeeded_per_minute, start latency p50/p95 in '
'seconds (started_at - run_at of jobs started in the window), duration p50/p95 in seconds (finished_at - '
'started_at of jobs finished in the window), and attempts that ended crashed or lease_expired. Scans the '
'whole jobs table: poll it, do not call it from hot paths.';

-- The query behind count_jobs (plpgsql for the checks and the dynamic SQL; the public
-- function is SQL because its parameter status and its result column status share a name).
CREATE OR REPLACE FUNCTION pgrun._job_count(
    p_status text,
    p_job_type text,
    p_queue text,
    p_organization_id uuid,
    p_workflow_run_id uuid
)
RETURNS TABLE (job_status text, job_count bigint)
LANGUAGE plpgsql
STABLE
AS $$
DECLARE
    v_where text[];
    v_ids uuid[];
    v_untenanted boolean;
    v_query text;
BEGIN
    PERFORM pgrun._job_check_status(p_status);

    SELECT f.conditions, f.organization_ids, f.untenanted INTO v_where, v_ids, v_untenanted
    FROM pgrun._job_filter(p_status, p_job_type, p_queue, p_organization_id, p_workflow_run_id, '$6', '$7') AS f;

    IF p_status IS NOT NULL THEN
        -- One status: a bare count(*), so that for queued and running the partial index alone
        -- answers it (an index-only scan needs no column of the row).
        v_query := format('SELECT $1, count(*) FROM pgrun.jobs AS j WHERE %s', array_to_string(v_where, ' AND '));
    ELSE
        v_query := format(
            'SELECT s.status, coalesce(c.jobs, 0)
             FROM unnest(ARRAY[''queued'', ''running'', ''succeeded'', ''dead'', ''cancelled''])
                 WITH ORDINALITY AS s (status, ordinal)
             LEFT JOIN (
                 SELECT j.status, count(*) AS jobs FROM pgrun.jobs AS j WHERE %s GROUP BY j.status
             ) AS c ON c.status = s.status
             ORDER BY s.ordinal',
            array_to_string(v_where, ' AND ')
        );
    END IF;
    -- At most five rows: the loop names the OUT columns it fills.
    FOR job_status, job_count IN EXECUTE v_query
        USING p_status, p_job_type, p_queue, p_organization_id,
            p_workflow_run_id, v_ids, v_untenanted
    LOOP
        RETURN NEXT;
    END LOOP;
END;
$$;

REVOKE EXECUTE ON FUNCTION pgrun._job_count(text, text, text, uuid, uuid) FROM public;

COMMENT ON FUNCTION pgrun._job_count(text, text, text, uuid, uuid) IS
'Private: validates count_jobs'' arguments and runs its count with a plan for the filters given.';

CREATE OR REPLACE FUNCTION pgrun.count_jobs(
    status text DEFAULT NULL,
    job_type text DEFAULT NULL,
    queue text DEFAULT NULL,
    organization_id uuid DEFAULT NULL,
    workflow_run_id uuid DEFAULT NULL
)
RETURNS TABLE (status text, jobs bigint)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT c.job_status, c.job_count
    FROM pgrun._job_count(
        count_jobs.status, count_jobs.job_type, count_jobs.queue, count_jobs.organization_id,
        count_jobs.workflow_run_id
    ) WITH ORDINALITY AS c (job_status, job_count, ordinal)
    ORDER BY c.ordinal
$$;

COMMENT ON FUNCTION pgrun.count_jobs(text, text, text, uuid, uuid) IS
'How many jobs are in each status, over the jobs the caller may see (its organizations; an admin: all): '
'one row per status in lifecycle order (queued, running, succeeded, dead, cancelled), zeros included; '
'with status given, that one row. Filters as list_jobs (NULL = any): status, job_type, queue, '
'organization_id (one of the caller''s organizations), workflow_run_id. Cost: queued and running are '
'read from their partial indexes (they grow with those jobs only); succeeded, dead, cancelled and no '
'status scan the whole jobs table: poll those, do not call them from hot paths. Errors: '
'job.invalid_status (RQ003).';
