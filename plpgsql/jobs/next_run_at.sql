-- next_run_at: when the next delayed job a worker may claim comes due.
--
-- An enqueue's NOTIFY carries the due time of the delayed jobs it queued, and an idle worker
-- sets a timer for it. A worker that was not listening when such a job was enqueued (it had
-- not started yet, or its listening connection was lost) never got that time: it asks here
-- once it listens again, and sets its timer from the answer instead of waiting for its poll.
--
-- The answer is the earliest run_at after now among queued jobs inside the filters (NULL =
-- any, an empty array = none) and, for a worker role with a scope, inside the scope (as in
-- claim_jobs). Paused types and capped types count: the timer then wakes a claim that takes
-- nothing, which costs one call; leaving them out would need their configuration read on
-- every call for a case that rarely matters. Reads only; a walk of the queued entries of
-- the named types (jobs_claim_type_idx) or of every queued entry (jobs_claim_idx), so its
-- cost grows with the queue: a worker calls it when it starts listening, not per claim.

CREATE OR REPLACE FUNCTION pgrun.next_run_at(
    queues text[] DEFAULT NULL,
    job_types text[] DEFAULT NULL
)
RETURNS timestamptz
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
-- Plan stability, as in claim_jobs: an index walk whatever the statistics.
SET enable_seqscan = off
SET enable_bitmapscan = off
SET jit = off
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    v_now timestamptz := pgrun.now();
    v_queues text[];
    v_job_types text[];
BEGIN
    -- a scoped worker role: NULL filters become its scope, a filter outside it is refused;
    -- any other caller keeps its filters
    SELECT c.queues, c.job_types INTO v_queues, v_job_types
    FROM pgrun._caller_check_scope(next_run_at.queues, next_run_at.job_types) AS c;

    IF v_job_types IS NULL THEN
        RETURN (
            SELECT min(j.run_at)
            FROM pgrun.jobs AS j
            WHERE j.status = 'queued' AND j.run_at > v_now
              AND (v_queues IS NULL OR j.queue = ANY(v_queues))
        );
    END IF;
    -- One walk per named type on jobs_claim_type_idx (its rows: queued jobs).
    RETURN (
        SELECT min(f.run_at)
        FROM unnest(v_job_types) AS t (job_type)
        CROSS JOIN LATERAL (
            SELECT min(j.run_at) AS run_at
            FROM pgrun.jobs AS j
            WHERE j.job_type = t.job_type
              AND j.status <> 'running' AND j.finished_at IS NULL
              AND j.run_at > v_now
              AND (v_queues IS NULL OR j.queue = ANY(v_queues))
        ) AS f
    );
END;
$$;

COMMENT ON FUNCTION pgrun.next_run_at(text[], text[]) IS
'When the next delayed job a worker may claim comes due: the earliest run_at after now among queued jobs '
'of the given queues and job types (NULL = any, an empty array = none), NULL when there is none. A worker '
'calls it when it starts listening for enqueues (at start, and after its listening connection was lost) '
'and sets a timer for the answer: the due times of delayed jobs enqueued while it was not listening '
'reached it in no notification. Paused and capped types count (their due time wakes a claim that may '
'take nothing). A worker role limited to queues or job types asks inside its scope (NULL filters = the '
'scope). Reads only; its cost grows with the queued jobs it walks, so it is not a per-claim call. '
'Errors: access.queue_denied, access.job_type_denied (42501: a filter outside the role''s scope).';
