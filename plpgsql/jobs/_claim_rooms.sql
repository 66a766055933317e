-- _claim_type_configs(job_types): claim_jobs' step 1 (plpgsql/jobs/claim.sql): of the types
-- job_types names (NULL: every type), those paused (excluded) and those with a
-- max_concurrency that are not paused (capped), from job_runtime_configs; empty arrays when
-- none. SQL, inlined into the statement that asks (claim_jobs reads it with the caller's
-- access in one statement).
--
-- _lease_pick_by_room: claim_jobs' per-type caps on what it found (plpgsql/jobs/claim.sql,
-- step 4). claim_jobs calls it only when some capped job type has room in this call
-- (job_runtime_configs.max_concurrency, steps 2 and 3 there): of the candidate rows p_tids
-- (which the claim's walk locked), every row of a type without a cap, and of each capped
-- type p_room_types[i] the first p_rooms[i] in claim order (priority, run_at, id), in any
-- order the candidates come. Returns their tuple ids; claim_jobs updates those. The surplus
-- of a capped type stays queued (its rows stay locked until the claim's transaction ends).
--
-- A function, called only when a cap is in play: when the claim was one statement, the
-- ranking's plan (a window over a sort, joined with the rooms) was set up by every claim,
-- ~50 us of a claim of one job of no capped type.
--
-- The rows are read again by tuple id (a TID scan): the claim's transaction holds their
-- locks, so no other transaction can have moved them. Runs under claim_jobs' planner
-- settings (its SET clause). Locks: none of its own. Errors: none.

CREATE OR REPLACE FUNCTION pgrun._claim_type_configs(p_job_types text[])
RETURNS TABLE (excluded text[], capped text[])
LANGUAGE sql
STABLE
AS $$
    SELECT
        coalesce(pg_catalog.array_agg(rc.job_type) FILTER (WHERE rc.paused), '{}'),
        coalesce(
            pg_catalog.array_agg(rc.job_type) FILTER (WHERE NOT rc.paused AND rc.max_concurrency IS NOT NULL),
            '{}'
        )
    FROM pgrun.job_runtime_configs AS rc
    WHERE (rc.paused OR rc.max_concurrency IS NOT NULL)
      AND (p_job_types IS NULL OR rc.job_type OPERATOR(pg_catalog.=) ANY (p_job_types))
$$;

REVOKE EXECUTE ON FUNCTION pgrun._claim_type_configs(text[]) FROM public;

COMMENT ON FUNCTION pgrun._claim_type_configs(text[]) IS
'Private: of the given job types (NULL: all), the paused ones and the capped, not paused ones '
'(job_runtime_configs), for claim_jobs.';

CREATE OR REPLACE FUNCTION pgrun._lease_pick_by_room(
    p_tids tid[],
    p_room_types text[],
    p_rooms bigint[]
)
RETURNS TABLE (r_tid tid)
LANGUAGE plpgsql
VOLATILE
AS $$
BEGIN
    RETURN QUERY
    SELECT ranked.tid
    FROM (
        SELECT
            j.ctid AS tid,
            j.job_type,
            row_number() OVER (PARTITION BY j.job_type ORDER BY j.priority, j.run_at, j.id) AS n
        FROM pgrun.jobs AS j
        WHERE j.ctid = ANY(p_tids)
    ) AS ranked
    LEFT JOIN unnest(p_room_types, p_rooms) AS r (job_type, room) ON r.job_type = ranked.job_type
    WHERE r.room IS NULL OR ranked.n <= r.room;
END;
$$;

REVOKE EXECUTE ON FUNCTION pgrun._lease_pick_by_room(tid[], text[], bigint[]) FROM public;

COMMENT ON FUNCTION pgrun._lease_pick_by_room(tid[], text[], bigint[]) IS
'Private: claim_jobs'' per-type caps: of the candidate rows (tuple ids, locked by the claim), every row '
'of an uncapped type and of each capped type the first room in claim order; returns their tuple ids.';
