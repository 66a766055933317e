-- heartbeat_jobs, report_progress, append_job_log: what a worker writes while a job runs.
-- None of them is a transition: they write no job_events row.
--
-- heartbeat_jobs(worker_id, lease_seconds, job_ids, lease_tokens) renews, in one
-- statement, every lease in the batch that this worker still owns: same job id, same
-- lease token, same worker_id, status running and lease_expires_at > pgrun.now(). The new
-- expiry is now + lease_seconds. It returns one row per input job, in input order:
-- renewed = false for a lost lease (unknown job, another token, another worker, expired,
-- no longer running) — the worker should abandon those jobs — and cancel_requested = true
-- when cancel_job asked a running job to stop (the worker should stop it and then write
-- complete/fail/continue, which ends the job as cancelled). An expired lease is not
-- revived: there is no grace period.
--
-- report_progress(job_id, lease_token, progress) stores the handler's progress (a JSON
-- object of at most 64 KiB, nested at most 100 levels: pgrun._json_depth_ok) and returns
-- whether a cancel was requested.
-- append_job_log(job_id, lease_token, message, level, fields) adds a log line to the
-- current attempt and returns its id; messages over 8192 characters are truncated, fields
-- are NULL or an object as bounded as progress. An
-- attempt keeps its first 1,000 lines: later ones are not stored but counted
-- (job_log_counts; get_job shows each attempt's log_lines and log_lines_dropped), and the
-- call returns NULL for them.
--
-- Locks: heartbeat_jobs locks the batch's job rows in id order (FOR UPDATE) before updating
-- them; report_progress updates its one job row; append_job_log holds its job row in
-- FOR SHARE while it counts and inserts, so it cannot interleave with a transition of that
-- job, then the attempt's job_log_counts row (concurrent lines of one attempt queue there).
--
-- Errors: job.lease_lost (RQ004; report_progress and append_job_log, with a DETAIL saying
-- which check failed; nothing is written); job.invalid_worker_id,
-- job.invalid_lease_seconds, job.invalid_batch, job.invalid_argument (NULL job_id or
-- lease_token), job.invalid_progress, job.invalid_log_entry (RQ003).

CREATE OR REPLACE FUNCTION pgrun.heartbeat_jobs(
    worker_id text,
    lease_seconds integer,
    job_ids uuid[],
    lease_tokens uuid[]
)
RETURNS TABLE (
    job_id uuid,
    renewed boolean,
    lease_expires_at timestamptz,
    cancel_requested boolean
)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
-- Plan stability: every join here is a lookup by primary key, whatever the batch size and
-- however stale the statistics; never a scan of all running jobs. The plan is built once
-- per session. Measurements: docs/lease-machine.md.
SET enable_seqscan = off
SET enable_bitmapscan = off
SET enable_hashjoin = off
SET enable_mergejoin = off
SET jit = off
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    v_now timestamptz := pgrun.now();
BEGIN
    PERFORM pgrun._lease_check_worker(heartbeat_jobs.worker_id, heartbeat_jobs.lease_seconds);
    PERFORM pgrun._lease_check_batch(heartbeat_jobs.job_ids, heartbeat_jobs.lease_tokens);

    RETURN QUERY
    WITH input AS (
        SELECT i.id, i.token, i.ord
        FROM unnest(heartbeat_jobs.job_ids, heartbeat_jobs.lease_tokens) WITH ORDINALITY AS i (id, token, ord)
    ),

    owned AS MATERIALIZED (
        SELECT j.id, i.ord
        FROM input AS i
        JOIN pgrun.jobs AS j ON j.id = i.id
        WHERE j.lease_token = i.token
          AND j.worker_id = heartbeat_jobs.worker_id
          AND j.lease_expires_at > v_now
        ORDER BY j.id
        FOR UPDATE OF j
    ),

    renewal AS (
        UPDATE pgrun.jobs AS j
        SET lease_expires_at = v_now + make_interval(secs => heartbeat_jobs.lease_seconds),
            heartbeat_at = v_now
        FROM owned AS o
        WHERE j.id = o.id
        RETURNING j.id, j.lease_expires_at, j.cancel_requested_at IS NOT NULL AS cancel_requested, o.ord
    )

    -- No CTE-to-CTE join (their row estimates are guesses, and a nested loop over two
    -- CTEs is quadratic): renewed rows come from the UPDATE, lost ones via a hashed NOT IN.
    SELECT u.id, u.renewed, u.lease_expires_at, u.cancel_requested
    FROM (
        SELECT r.id, true AS renewed, r.lease_expires_at, r.cancel_requested, r.ord
        FROM renewal AS r
        UNION ALL
        SELECT i.id, false, NULL, false, i.ord
        FROM input AS i
        WHERE i.id NOT IN (SELECT r.id FROM renewal AS r)
    ) AS u
    ORDER BY u.ord;
END;
$$;

COMMENT ON FUNCTION pgrun.heartbeat_jobs(text, integer, uuid[], uuid[]) IS
'Renew, in one statement, the leases of the given jobs (parallel arrays job_ids and lease_tokens) that '
'worker_id still owns: same token, still running, lease not yet expired. Each renewed lease now ends '
'lease_seconds (1..86400) from now. Returns one row per input job in input order: renewed (false = '
'the lease is lost, stop working on the job), the new lease_expires_at, and cancel_requested (true = '
'cancel_job asked the job to stop; finish with complete/fail/continue and it ends cancelled). An '
'expired lease is never revived. Writes no job_events row. '
'Errors: job.invalid_worker_id, job.invalid_lease_seconds, job.invalid_batch (RQ003).';

CREATE OR REPLACE FUNCTION pgrun.report_progress(job_id uuid, lease_token uuid, progress jsonb)
RETURNS boolean
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_now timestamptz := pgrun.now();
    v_cancel_requested boolean;
BEGIN
    IF report_progress.job_id IS NULL OR report_progress.lease_token IS NULL THEN
        PERFORM pgrun._raise(
            'job.invalid_argument',
            'job_id and lease_token must not be NULL',
            'Pass the job_id and lease_token claim_jobs returned.'
        );
    END IF;
    IF report_progress.progress IS NULL
        OR jsonb_typeof(report_progress.progress) <> 'object'
        OR octet_length(report_progress.progress::text) > 65536
        OR NOT pgrun._json_depth_ok(report_progress.progress) THEN
        PERFORM pgrun._raise(
            'job.invalid_progress',
            format(
                'progress is %s',
                CASE
                    WHEN report_progress.progress IS NULL THEN 'NULL'
                    WHEN jsonb_typeof(report_progress.progress) <> 'object'
                        THEN 'a JSON ' || jsonb_typeof(report_progress.progress)
                    WHEN octet_length(report_progress.progress::text) > 65536
                        THEN octet_length(report_progress.progress::text) || ' bytes (at most 65536)'
                    ELSE 'nested more than 100 levels deep (arrays and objects)'
                END
            ),
            'Report progress as a small, flat JSON object, e.g. {"done": 3, "total": 10}.'
        );
    END IF;

    UPDATE pgrun.jobs AS j
    SET progress = report_progress.progress,
        updated_at = v_now
    WHERE j.id = report_progress.job_id
      AND j.lease_token = report_progress.lease_token
      AND j.lease_expires_at > v_now
    RETURNING j.cancel_requested_at IS NOT NULL INTO v_cancel_requested;

    IF NOT FOUND THEN
        PERFORM pgrun._lease_raise_lost(report_progress.job_id, report_progress.lease_token);
    END IF;
    RETURN v_cancel_requested;
END;
$$;

COMMENT ON FUNCTION pgrun.report_progress(uuid, uuid, jsonb) IS
'Store the running job''s progress (a JSON object of at most 64 KiB, nested at most 100 levels, replacing '
'the previous one) under '
'its lease. Returns true when a cancel was requested (stop the handler). Writes no job_events row. '
'Errors: job.lease_lost (RQ004: unknown job, token mismatch, not running or lease expired; nothing is '
'written), job.invalid_argument, job.invalid_progress (RQ003).';

CREATE OR REPLACE FUNCTION pgrun.append_job_log(
    job_id uuid,
    lease_token uuid,
    message text,
    level text DEFAULT 'info',
    fields jsonb DEFAULT NULL
)
RETURNS bigint
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    c_max_lines CONSTANT integer := 1000;
    v_now timestamptz := pgrun.now();
    v_level text := coalesce(append_job_log.level, 'info');
    v_log_id bigint;
    v_attempt integer;
    v_keep boolean;
BEGIN
    IF append_job_log.job_id IS NULL OR append_job_log.lease_token IS NULL OR append_job_log.message IS NULL THEN
        PERFORM pgrun._raise(
            'job.invalid_argument',
            'job_id, lease_token and message must not be NULL',
            'Pass the job_id and lease_token claim_jobs returned, and a message.'
        );
    END IF;
    IF v_level NOT IN ('debug', 'info', 'warning', 'error')
        OR jsonb_typeof(append_job_log.fields) <> 'object'
        OR octet_length(append_job_log.fields::text) > 65536
        OR NOT pgrun._json_depth_ok(append_job_log.fields) THEN
        PERFORM pgrun._raise(
            'job.invalid_log_entry',
            CASE
                WHEN v_level NOT IN ('debug', 'info', 'warning', 'error')
                    THEN format('level %s is not one of debug, info, warning, error', pgrun._shown(v_level))
                WHEN jsonb_typeof(append_job_log.fields) <> 'object'
                    THEN 'fields is a JSON ' || jsonb_typeof(append_job_log.fields) || ', not an object'
                WHEN octet_length(append_job_log.fields::text) > 65536
                    THEN format('fields is %s bytes (at most 65536)', octet_length(append_job_log.fields::text))
                ELSE 'fields is nested more than 100 levels deep (arrays and objects)'
            END,
            'level is debug, info (the default), warning or error; fields is NULL or a JSON '
                'object of at most 64 KiB, nested at most 100 levels.'
        );
    END IF;

    -- Count the line for its attempt, under the job row's share lock: the first c_max_lines
    -- of an attempt are stored, later ones only counted (dropped stays 0 until the cap).
    INSERT INTO pgrun.job_log_counts AS c (job_id, attempt, stored, dropped)
    SELECT j.id, j.total_attempts, 1, 0
    FROM pgrun.jobs AS j
    WHERE j.id = append_job_log.job_id
      AND j.lease_token = append_job_log.lease_token
      AND j.lease_expires_at > v_now
    FOR SHARE OF j
    ON CONFLICT ON CONSTRAINT job_log_counts_pkey DO UPDATE
        SET stored = c.stored + CASE WHEN c.stored < c_max_lines THEN 1 ELSE 0 END,
            dropped = c.dropped + CASE WHEN c.stored < c_max_lines THEN 0 ELSE 1 END
    RETURNING c.attempt, c.dropped = 0 INTO v_attempt, v_keep;

    IF NOT FOUND THEN
        PERFORM pgrun._lease_raise_lost(append_job_log.job_id, append_job_log.lease_token);
    END IF;
    IF NOT v_keep THEN
        RETURN NULL;
    END IF;

    INSERT INTO pgrun.job_logs (job_id, attempt, level, message, fields, created_at)
    VALUES (
        append_job_log.job_id, v_attempt, v_level, pgrun._clip(append_job_log.message, 8192),
        append_job_log.fields, v_now
    )
    RETURNING job_logs.id INTO v_log_id;
    RETURN v_log_id;
END;
$$;

COMMENT ON FUNCTION pgrun.append_job_log(uuid, uuid, text, text, jsonb) IS
'Append a log line to the running job''s current attempt, under its lease. level is debug, info '
'(default, also for NULL), warning or error; fields is NULL or a JSON object (at most 64 KiB, nested at most '
'100 levels); a message '
'over 8192 characters is truncated (it ends in " [truncated]"), never rejected. An attempt keeps its '
'first 1000 lines; later ones are counted (get_job: log_lines_dropped per attempt), not stored, and '
'return NULL. Returns the log line''s id. Writes no job_events row. '
'Errors: job.lease_lost (RQ004; nothing is written), job.invalid_argument, job.invalid_log_entry (RQ003).';
