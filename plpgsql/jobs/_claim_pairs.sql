-- _queued_pairs(job_types, excluded): the (job type, queue) pairs holding queued jobs (ready
-- or not yet due), of job_types (NULL: every type with queued jobs), the excluded types left
-- out. A loose index scan of jobs_claim_type_idx: one descent per type when job_types is
-- NULL, then one per pair. Used by _lease_lock_by_pair (below) and by
-- set_job_runtime_config (which queues to notify); runs under its caller's planner settings
-- and search_path. Errors: none.
CREATE OR REPLACE FUNCTION pgrun._queued_pairs(p_job_types text[], p_excluded text[])
RETURNS TABLE (job_type text, queue text)
LANGUAGE plpgsql
STABLE
AS $$
BEGIN
    RETURN QUERY
    WITH RECURSIVE

    -- Every type with queued jobs, when no type filter names them.
    every_type (job_type) AS (
        (
            SELECT x.job_type
            FROM pgrun.jobs AS x
            WHERE x.status <> 'running' AND x.finished_at IS NULL AND p_job_types IS NULL
            ORDER BY x.job_type
            LIMIT 1
        )
        UNION ALL
        SELECT n.job_type
        FROM every_type AS t
        CROSS JOIN LATERAL (
            SELECT x.job_type
            FROM pgrun.jobs AS x
            WHERE x.status <> 'running' AND x.finished_at IS NULL AND x.job_type > t.job_type
            ORDER BY x.job_type
            LIMIT 1
        ) AS n
    ),

    types (job_type) AS (
        SELECT DISTINCT f.job_type FROM unnest(p_job_types) AS f (job_type)
        UNION ALL
        SELECT t.job_type FROM every_type AS t
    ),

    -- The (job type, queue) pairs of those types with queued jobs, one descent each.
    pairs (job_type, queue) AS (
        SELECT f.job_type, f.queue
        FROM types AS t
        CROSS JOIN LATERAL (
            SELECT x.job_type, x.queue
            FROM pgrun.jobs AS x
            WHERE x.status <> 'running' AND x.finished_at IS NULL AND x.job_type = t.job_type
            ORDER BY x.queue
            LIMIT 1
        ) AS f
        WHERE t.job_type <> ALL(p_excluded)
        UNION ALL
        SELECT n.job_type, n.queue
        FROM pairs AS p
        CROSS JOIN LATERAL (
            SELECT x.job_type, x.queue
            FROM pgrun.jobs AS x
            WHERE x.status <> 'running' AND x.finished_at IS NULL
              AND x.job_type = p.job_type AND x.queue > p.queue
            ORDER BY x.queue
            LIMIT 1
        ) AS n
    )

    SELECT p.job_type, p.queue FROM pairs AS p;
END;
$$;

REVOKE EXECUTE ON FUNCTION pgrun._queued_pairs(text[], text[]) FROM public;

COMMENT ON FUNCTION pgrun._queued_pairs(text[], text[]) IS
'Private: the (job type, queue) pairs holding queued jobs, of the given types (NULL: every type with queued '
'jobs), the excluded types left out; a loose index scan of jobs_claim_type_idx.';

-- _lease_lock_by_pair: claim_jobs' second step (plpgsql/jobs/claim.sql, docs/lease-machine.md
-- "Ready jobs a claim passes over"). claim_jobs first walks jobs_claim_idx in claim order,
-- reading at most 4 x max_jobs + 100 entries; when that walk comes back short, stopped at
-- that bound, with a filter or a left-out type in play, it calls this for the rest: up to
-- p_want ready jobs the claimer may take, in claim order, none of p_taken (the rows the walk
-- locked), locked FOR UPDATE SKIP LOCKED. claim_jobs updates and returns them with the
-- walk's.
--
-- 1. The (job type, queue) pairs to look at (_queued_pairs, above): of p_job_types, else
--    every type with queued jobs, paused and full capped types (p_excluded) left out; in
--    p_queues when given.
-- 2. Of each pair, the first ready jobs in claim order, at most p_want, locked without
--    waiting: a walk of jobs_claim_type_idx that reads no job of another pair. The first
--    p_want of them all are returned. A pair's locked rows beyond those stay locked, not
--    claimed, until the claim's transaction ends: at most (pairs - 1) x p_want rows.
--
-- jobs_claim_type_idx's predicate says "queued" as "status <> 'running' AND finished_at IS
-- NULL" (the same rows, by jobs_finished_check), and these queries say it the same way:
-- PostgreSQL cannot prove status = 'queued' from it, so it never plans them as a walk of
-- jobs_claim_idx (every queued job), which an empty table's statistics make look cheap in the
-- plan a session keeps. Runs under claim_jobs' planner settings (its SET clause).
--
-- Locks: jobs rows, FOR UPDATE SKIP LOCKED, never waiting. Errors: none.

CREATE OR REPLACE FUNCTION pgrun._lease_lock_by_pair(
    p_now timestamptz,
    p_want integer,
    p_taken tid[],
    p_queues text[],
    p_job_types text[],
    p_excluded text[]
)
RETURNS TABLE (r_tid tid, r_job_type text, r_priority integer, r_run_at timestamptz, r_id uuid)
LANGUAGE plpgsql
VOLATILE
AS $$
BEGIN
    RETURN QUERY
    -- 2. Of each pair the claimer may take, its first ready jobs, locked without waiting.
    SELECT m.tid, m.job_type, m.priority, m.run_at, m.id
    FROM pgrun._queued_pairs(p_job_types, p_excluded) AS p
    CROSS JOIN LATERAL (
        SELECT j.ctid AS tid, j.job_type, j.priority, j.run_at, j.id
        FROM pgrun.jobs AS j
        WHERE j.status <> 'running' AND j.finished_at IS NULL
          AND j.job_type = p.job_type
          AND j.queue = p.queue
          AND j.run_at <= p_now
          AND j.ctid <> ALL(p_taken)
        ORDER BY j.priority, j.run_at, j.id
        LIMIT p_want
        FOR UPDATE OF j SKIP LOCKED
    ) AS m
    WHERE p_queues IS NULL OR p.queue = ANY(p_queues)
    ORDER BY m.priority, m.run_at, m.id
    LIMIT p_want;
END;
$$;

REVOKE EXECUTE ON FUNCTION pgrun._lease_lock_by_pair(
    timestamptz, integer, tid[], text[], text[], text[]
) FROM public;

COMMENT ON FUNCTION pgrun._lease_lock_by_pair(timestamptz, integer, tid[], text[], text[], text[]) IS
'Private: claim_jobs'' second step, when its walk of jobs_claim_idx stopped at its bound: up to p_want ready '
'jobs the claimer may take (queues, job types, none excluded or in p_taken), in claim order, from one walk of '
'jobs_claim_type_idx per (job type, queue), locked FOR UPDATE SKIP LOCKED.';
