-- queue_depth and job_metrics: what is waiting, running and finishing, per queue and job type.
--
-- Both count only the jobs the caller may see (pgrun._caller_scope of organization_id: an
-- admin without one counts every organization, any other role its own organizations, or the
-- work without an organization), so a tenant's dashboard never shows another tenant's queue.
--
-- queue_depth reads only queued and running rows (the two partial indexes), so it stays cheap
-- however much finished history the table holds. job_metrics scans every row still in jobs
-- (counts by status over all of them; rates and percentiles over the last 5 minutes): poll it
-- for dashboards and alerts, never from a hot path. Times use pgrun.now().
--
-- Locks: none. Errors: none.

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
    SELECT
        j.queue,
        j.job_type,
        count(*) FILTER (WHERE j.status = 'queued' AND j.run_at <= pgrun.now()),
        count(*) FILTER (WHERE j.status = 'queued' AND j.run_at > pgrun.now()),
        count(*) FILTER (WHERE j.status = 'running'),
        pgrun.now() - min(j.run_at) FILTER (WHERE j.status = 'queued' AND j.run_at <= pgrun.now()),
        coalesce(bool_or(rc.paused), FALSE),
        max(rc.max_concurrency)
    FROM pgrun.jobs AS j
    CROSS JOIN pgrun._caller_scope(queue_depth.organization_id) AS c
    LEFT JOIN pgrun.job_runtime_configs AS rc ON j.job_type = rc.job_type
    WHERE j.status IN ('queued', 'running')
        AND pgrun._in_scope(j.organization_id, c.all_organizations, c.organization_ids, c.untenanted)
    GROUP BY j.queue, j.job_type
    ORDER BY j.queue, j.job_type
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
