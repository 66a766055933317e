-- The stale re-entry rule, as a hook of reap_expired_leases (plpgsql/jobs/reap.sql calls it
-- once, in its own transaction, just before its own statement).
--
-- A schedule with forbid_stale_reentry = true is for work that must not run twice. When a
-- job it made loses its lease (the worker crashed or stopped renewing), the reaper would
-- queue it again. The hook stops that without a second copy of the reaper's writes: for
-- each such expired job it
--   * returns its id: the reaper decides on it as if its attempt budget were used up (the
--     attempts it has used count as its max_attempts for that one decision), so its own rule
--     (_lease_retry_decision) declares it dead in the very next statement: attempt outcome
--     'lease_expired', a 'dead' event, a job_dead_letters row with reason 'lease_expired', all
--     written by the reaper as for any job. The job's declared max_attempts is not touched:
--     a later requeue_job gives it its whole budget again;
--   * marks the job's tick 'failed' with error_code 'stale_reentry_forbidden'.
-- The job rows stay locked until the reaper's transaction ends, and an expired lease can no
-- longer be written by its worker, so the job cannot slip back into running.
--
-- Not covered, on purpose: a job with a pending cancel request (the reaper cancels it; it
-- does not run again either); jobs of other schedules, or of a schedule since deleted
-- (ordinary jobs, retried); an explicit fail_job (a reported failure is not a lease loss:
-- a schedule's job retries after it like any job).
--
-- Candidates are the reaper's (p_candidates: the first max_jobs expired leases in expiry
-- order, which it reads once for both); only jobs of forbidding schedules among them are
-- touched.
--
-- Locks: those job rows in id order, FOR UPDATE SKIP LOCKED (the reaper's rule: a job being
-- written right now is left for the next pass), then their ticks. Errors: none of its own.

CREATE OR REPLACE FUNCTION pgrun._schedule_forbid_reentry(p_now timestamptz, p_candidates uuid[])
RETURNS uuid[]
LANGUAGE plpgsql
VOLATILE
AS $$
DECLARE
    v_stale uuid[];
BEGIN
    WITH stale AS MATERIALIZED (
        SELECT j.id
        FROM pgrun.jobs AS j
        -- Each candidate by primary key (as reap_expired_leases takes them, and for the same
        -- reason), and each one's schedule by its key: a join with job_schedules let the
        -- planner start from the forbidding schedules and read every job they ever made
        -- (jobs_schedule_idx), on every pass of the reaper.
        WHERE j.id = ANY (p_candidates)
            AND j.lease_expires_at <= p_now
            AND j.cancel_requested_at IS NULL
            -- (a job of no schedule finds none; "schedule_id IS NOT NULL" would let the planner
            -- read every scheduled job on jobs_schedule_idx instead)
            AND coalesce((
                SELECT s.forbid_stale_reentry FROM pgrun.job_schedules AS s WHERE s.id = j.schedule_id
            ), false)
        ORDER BY j.id
        FOR UPDATE OF j SKIP LOCKED
    ),

    failed AS (
        UPDATE pgrun.schedule_ticks AS t
        SET status = 'failed',
            error_code = 'stale_reentry_forbidden',
            updated_at = p_now
        FROM stale AS st
        WHERE t.job_id = st.id AND t.status = 'fired'
    )

    SELECT coalesce(array_agg(st.id), '{}') INTO v_stale FROM stale AS st;
    RETURN v_stale;
END;
$$;

REVOKE EXECUTE ON FUNCTION pgrun._schedule_forbid_reentry(timestamptz, uuid[]) FROM public;

COMMENT ON FUNCTION pgrun._schedule_forbid_reentry(timestamptz, uuid[]) IS
'Private: reap_expired_leases'' hook: the expired jobs of schedules that forbid stale re-entry (the '
'reaper kills them instead of retrying; their max_attempts stays as declared), their ticks marked failed.';
