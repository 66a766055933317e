-- purge_finished_jobs: retention. Delete finished jobs and their history.
--
-- Jobs with status succeeded, dead or cancelled whose finished_at is older than
-- pgrun.now() - older_than are deleted, oldest first, at most max_jobs per call, together
-- with their job_events (the finished attempts among them), job_logs, job_log_counts and
-- job_dead_letters rows (the history tables carry no foreign keys, so this function is what keeps them
-- consistent). Queued and running jobs are never touched, however old. With
-- organization_id given, only that organization's jobs are purged. Admins only (the role
-- matrix); each call that deleted something leaves an audit_log row 'jobs.purged' with the
-- counts (jobs, events, logs, dead letters), the cutoff and who. A purged job's
-- idempotency key is free again.
-- Returns the number of jobs deleted; call again while it returns max_jobs.
--
-- Locks: the chosen job rows in id order, FOR UPDATE SKIP LOCKED (a job being requeued at
-- this instant is skipped, never waited for), then their history rows by job id.
-- Candidates come from jobs_finished_idx in finished_at order.
--
-- Errors: job.invalid_older_than (NULL, or outside 0 s..100 years: the time-argument rule
-- of pgrun._check_time), job.invalid_max_jobs (outside 1..100000) (RQ003).

CREATE OR REPLACE FUNCTION pgrun.purge_finished_jobs(
    older_than interval,
    max_jobs integer DEFAULT 10000,
    organization_id uuid DEFAULT NULL
)
RETURNS bigint
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
-- Plan stability: candidates come from the partial index in its order, every other join
-- is a lookup by key, whatever the statistics say; the plan is built once per session.
SET enable_seqscan = off
SET enable_bitmapscan = off
SET enable_hashjoin = off
SET enable_mergejoin = off
SET jit = off
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    v_cutoff timestamptz;
    v_purged bigint;
    v_history jsonb;
BEGIN
    IF purge_finished_jobs.older_than IS NULL THEN
        PERFORM pgrun._raise(
            'job.invalid_older_than',
            'older_than is NULL',
            'Pass the retention period, e.g. interval ''7 days''.'
        );
    END IF;
    PERFORM pgrun._check_time('job.invalid_older_than', 'older_than', purge_finished_jobs.older_than);
    IF purge_finished_jobs.max_jobs IS NULL OR purge_finished_jobs.max_jobs NOT BETWEEN 1 AND 100000 THEN
        PERFORM pgrun._raise(
            'job.invalid_max_jobs',
            format(
                'max_jobs %s is outside 1..100000', coalesce(purge_finished_jobs.max_jobs::text, 'NULL')
            ),
            'Purge in bounded batches and call again while a batch comes back full.'
        );
    END IF;
    v_cutoff := pgrun.now() - purge_finished_jobs.older_than;

    WITH doomed AS MATERIALIZED (
        SELECT j.id
        FROM pgrun.jobs AS j
        WHERE j.id IN (
            SELECT x.id
            FROM pgrun.jobs AS x
            WHERE x.finished_at < v_cutoff
              AND x.status IN ('succeeded', 'dead', 'cancelled')
              AND (purge_finished_jobs.organization_id IS NULL
                  OR x.organization_id = purge_finished_jobs.organization_id)
            ORDER BY x.finished_at
            LIMIT purge_finished_jobs.max_jobs
        )
          AND j.finished_at < v_cutoff
          AND j.status IN ('succeeded', 'dead', 'cancelled')
        ORDER BY j.id
        FOR UPDATE OF j SKIP LOCKED
    ),

    events AS (
        DELETE FROM pgrun.job_events AS e
        USING doomed AS d
        WHERE e.job_id = d.id
        RETURNING 1
    ),

    logs AS (
        DELETE FROM pgrun.job_logs AS l
        USING doomed AS d
        WHERE l.job_id = d.id
        RETURNING 1
    ),

    log_counts AS (
        DELETE FROM pgrun.job_log_counts AS c
        USING doomed AS d
        WHERE c.job_id = d.id
    ),

    letters AS (
        DELETE FROM pgrun.job_dead_letters AS dl
        USING doomed AS d
        WHERE dl.job_id = d.id
        RETURNING 1
    ),

    purged AS (
        DELETE FROM pgrun.jobs AS j
        USING doomed AS d
        WHERE j.id = d.id
        RETURNING j.id
    )

    SELECT
        (SELECT count(*) FROM purged),
        jsonb_build_object(
            'events', (SELECT count(*) FROM events),
            'logs', (SELECT count(*) FROM logs),
            'dead_letters', (SELECT count(*) FROM letters)
        )
    INTO v_purged, v_history;

    -- What was deleted, by whom: one audit row per call that deleted something.
    IF v_purged > 0 THEN
        PERFORM pgrun._audit(
            'jobs.purged', purge_finished_jobs.organization_id, NULL,
            jsonb_build_object(
                'jobs', v_purged, 'cutoff', v_cutoff, 'older_than', purge_finished_jobs.older_than,
                'max_jobs', purge_finished_jobs.max_jobs
            ) || v_history
        );
    END IF;
    RETURN v_purged;
END;
$$;

COMMENT ON FUNCTION pgrun.purge_finished_jobs(interval, integer, uuid) IS
'Delete up to max_jobs (1..100000, default 10000) finished jobs (succeeded, dead, cancelled) whose '
'finished_at is older than now - older_than, oldest first, with their attempts, events, logs and dead '
'letters. Queued and running jobs are never deleted. Admins only; a call that deleted something records '
'who deleted what in audit_log (jobs.purged). With organization_id, only that organization''s '
'jobs. Jobs locked by a concurrent write are skipped. Returns how many jobs were deleted; call again '
'while it returns max_jobs. older_than: 0 s..100 years. '
'Errors: job.invalid_older_than, job.invalid_max_jobs (RQ003).';
