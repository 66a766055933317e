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

-- _log_entry_problem(level, fields): THE rule for a log line's level and fields, which
-- append_job_log refuses with job.invalid_log_entry and append_job_logs marks a line invalid
-- for: what is wrong with them (the error's message), NULL when they are taken. level is
-- debug, info, warning or error (the callers have made a NULL level info); fields is NULL or
-- a JSON object of at most 64 KiB, nested at most 100 levels. SQL, inlined into the caller's
-- expression.

CREATE OR REPLACE FUNCTION pgrun._log_entry_problem(p_level text, p_fields jsonb)
RETURNS text
LANGUAGE sql
STABLE
PARALLEL SAFE
AS $$
    SELECT CASE
        WHEN p_level IS NULL OR NOT p_level OPERATOR(pg_catalog.=) ANY ('{debug,info,warning,error}'::text[])
            THEN pg_catalog.format('level %s is not one of debug, info, warning, error', pgrun._shown(p_level))
        WHEN p_fields IS NULL
            THEN NULL
        WHEN pg_catalog.jsonb_typeof(p_fields) OPERATOR(pg_catalog.<>) 'object'
            THEN pg_catalog.format('fields is a JSON %s, not an object', pg_catalog.jsonb_typeof(p_fields))
        WHEN pg_catalog.octet_length(p_fields::text) OPERATOR(pg_catalog.>) 65536
            THEN pg_catalog.format('fields is %s bytes (at most 65536)', pg_catalog.octet_length(p_fields::text))
        WHEN NOT pgrun._json_depth_ok(p_fields)
            THEN 'fields is nested more than 100 levels deep (arrays and objects)'
    END
$$;

REVOKE EXECUTE ON FUNCTION pgrun._log_entry_problem(text, jsonb) FROM public;

COMMENT ON FUNCTION pgrun._log_entry_problem(text, jsonb) IS
'Private: what is wrong with a log line''s level and fields (NULL when append_job_log and '
'append_job_logs take them): level one of debug, info, warning, error; fields NULL or a JSON object of '
'at most 64 KiB, nested at most 100 levels.';

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
    v_problem text;
BEGIN
    IF append_job_log.job_id IS NULL OR append_job_log.lease_token IS NULL OR append_job_log.message IS NULL THEN
        PERFORM pgrun._raise(
            'job.invalid_argument',
            'job_id, lease_token and message must not be NULL',
            'Pass the job_id and lease_token claim_jobs returned, and a message.'
        );
    END IF;
    v_problem := pgrun._log_entry_problem(v_level, append_job_log.fields);
    IF v_problem IS NOT NULL THEN
        PERFORM pgrun._raise(
            'job.invalid_log_entry',
            v_problem,
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

-- append_job_logs: append_job_log for many lines at once, of one job or several (the Python
-- worker sends the lines its handlers logged with its next flush of outcomes, before them).
-- One row per line, in input order: outcome 'logged' (stored; log_id), 'counted' (the attempt
-- holds its 1000 lines already: counted, not stored), 'lease_lost' (the pair holds no live
-- lease: nothing written for the line, and no reason given, as complete_jobs' lost_reason does
-- not to others either), 'invalid' (a level or fields append_job_log refuses with
-- job.invalid_log_entry: not written, not counted). A job's lines are stored and counted in
-- input order, so the first ones up to the cap are kept. Messages are clipped as
-- append_job_log clips them; NULL levels are 'info', NULL fields none.
--
-- Locks: the lines' jobs rows FOR SHARE (id order, as append_job_log: a completion waits for
-- the lines to commit), then their job_log_counts rows (an upsert each, (job, attempt) order).
-- Errors (RQ003, nothing written): job.invalid_batch (job_ids, lease_tokens or messages NULL,
-- holding a NULL, not one-dimensional, or lengths that differ, levels / fields not NULL and of
-- another length, more than 10000 lines).

CREATE OR REPLACE FUNCTION pgrun.append_job_logs(
    job_ids uuid[],
    lease_tokens uuid[],
    messages text[],
    levels text[] DEFAULT NULL,
    fields jsonb[] DEFAULT NULL
)
RETURNS TABLE (job_id uuid, log_id bigint, outcome text)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
-- Every table it reads it reads by primary key (jobs, job_log_counts): no seq or bitmap scan
-- whatever the statistics say (a fresh table looks empty). The lines are matched with each other
-- by hash joins (nested loops over two arrays grow with their product: 2,000 lines took 0.8 s);
-- JIT never pays off on statements this short.
SET enable_seqscan = off
SET enable_bitmapscan = off
SET jit = off
AS $$
DECLARE
    c_max_lines CONSTANT integer := 1000;
    v_now timestamptz := pgrun.now();
    v_lines integer := cardinality(append_job_logs.job_ids);
    v_problem text;
    v_jobs uuid[];
    v_tokens uuid[];
    v_attempts integer[];
    v_line_attempts integer[];
    v_valid boolean[];
    v_counted_jobs uuid[];
    v_before integer[];
    v_counted_lines integer[];
    v_outcomes text[];
    v_log_ids bigint[];
BEGIN
    v_problem := CASE
        WHEN append_job_logs.job_ids IS NULL OR append_job_logs.lease_tokens IS NULL
            OR append_job_logs.messages IS NULL
            THEN 'job_ids, lease_tokens and messages must not be NULL'
        WHEN coalesce(array_ndims(append_job_logs.job_ids), 1) <> 1
            OR coalesce(array_ndims(append_job_logs.lease_tokens), 1) <> 1
            OR coalesce(array_ndims(append_job_logs.messages), 1) <> 1
            OR coalesce(array_ndims(append_job_logs.levels), 1) <> 1
            OR coalesce(array_ndims(append_job_logs.fields), 1) <> 1
            THEN 'the arrays must be one-dimensional'
        WHEN cardinality(append_job_logs.lease_tokens) <> v_lines OR cardinality(append_job_logs.messages) <> v_lines
            OR cardinality(append_job_logs.levels) <> v_lines OR cardinality(append_job_logs.fields) <> v_lines
            THEN format('job_ids has %s elements and the other arrays not as many', v_lines)
        WHEN v_lines > 10000
            THEN format('%s lines in one batch (at most 10000)', v_lines)
        WHEN array_position(append_job_logs.job_ids, NULL) IS NOT NULL
            OR array_position(append_job_logs.lease_tokens, NULL) IS NOT NULL
            OR array_position(append_job_logs.messages, NULL) IS NOT NULL
            THEN 'job_ids, lease_tokens and messages must not contain NULL'
    END;
    IF v_problem IS NOT NULL THEN
        PERFORM pgrun._raise(
            'job.invalid_batch',
            v_problem,
            'Pass parallel one-dimensional arrays, one element per line (at most 10000); levels '
                'and fields are NULL or as long as job_ids.'
        );
    END IF;

    -- The lines' jobs that the given tokens hold live leases on, locked in id order: the
    -- attempt each line belongs to. One primary-key lookup per (job, token) pair (LATERAL:
    -- a nested loop whatever the statistics; a join the planner chose over the lines took
    -- time that grew with their square).
    SELECT
        coalesce(array_agg(l.id ORDER BY l.id), '{}'),
        coalesce(array_agg(l.token ORDER BY l.id), '{}'),
        coalesce(array_agg(l.attempt ORDER BY l.id), '{}')
    INTO v_jobs, v_tokens, v_attempts
    FROM (
        SELECT DISTINCT u.id, u.token
        FROM unnest(append_job_logs.job_ids, append_job_logs.lease_tokens) AS u (id, token)
        ORDER BY u.id, u.token
    ) AS u
    CROSS JOIN LATERAL (
        SELECT j.id, j.lease_token AS token, j.total_attempts AS attempt
        FROM pgrun.jobs AS j
        WHERE j.id = u.id AND j.lease_token = u.token AND j.lease_expires_at > v_now
        FOR SHARE OF j
    ) AS l;

    -- Per line, in input order: its attempt (NULL: no live lease) and whether
    -- append_job_log would take its level and fields.
    SELECT
        array_agg(l.attempt ORDER BY u.n),
        array_agg(
            pgrun._log_entry_problem(
                coalesce(append_job_logs.levels[u.n], 'info'), append_job_logs.fields[u.n]
            ) IS NULL
            ORDER BY u.n
        )
    INTO v_line_attempts, v_valid
    FROM unnest(append_job_logs.job_ids, append_job_logs.lease_tokens) WITH ORDINALITY AS u (id, token, n)
    LEFT JOIN unnest(v_jobs, v_tokens, v_attempts) AS l (id, token, attempt)
        ON l.id = u.id AND l.token = u.token;

    -- Each attempt's count, raised by its lines to write in one upsert per attempt, in
    -- (job, attempt) order (two calls meeting on the same rows cannot deadlock); the row
    -- stays locked until this call commits. Its value before them is what the attempt
    -- stored before this call (the lines beyond c_max_lines are moved to dropped below).
    WITH n AS (
        SELECT u.id, u.attempt, count(*)::integer AS lines
        FROM unnest(append_job_logs.job_ids, v_line_attempts, v_valid) AS u (id, attempt, valid)
        WHERE u.attempt IS NOT NULL AND u.valid
        GROUP BY u.id, u.attempt
    ), raised AS (
        INSERT INTO pgrun.job_log_counts AS c (job_id, attempt, stored)
        SELECT n.id, n.attempt, n.lines FROM n ORDER BY n.id, n.attempt
        ON CONFLICT ON CONSTRAINT job_log_counts_pkey DO UPDATE SET stored = c.stored + excluded.stored
        RETURNING c.job_id, c.attempt, c.stored
    )
    SELECT
        coalesce(array_agg(r.job_id ORDER BY r.job_id), '{}'),
        coalesce(array_agg(r.stored - n.lines ORDER BY r.job_id), '{}'),
        coalesce(array_agg(n.lines ORDER BY r.job_id), '{}')
    INTO v_counted_jobs, v_before, v_counted_lines
    FROM raised AS r
    JOIN n ON n.id = r.job_id AND n.attempt = r.attempt;

    -- Each written line's place among its attempt's lines: stored while the attempt holds
    -- fewer than c_max_lines, counted after. Stored lines get their ids in input order.
    SELECT array_agg(r.outcome ORDER BY r.n), array_agg(r.log_id ORDER BY r.n)
    INTO v_outcomes, v_log_ids
    FROM (
        SELECT
            w.n,
            CASE
                WHEN w.attempt IS NULL THEN 'lease_lost'
                WHEN NOT w.valid THEN 'invalid'
                WHEN w.before + w.k <= c_max_lines THEN 'logged'
                ELSE 'counted'
            END AS outcome,
            CASE WHEN w.attempt IS NOT NULL AND w.valid AND w.before + w.k <= c_max_lines
                THEN nextval('pgrun.job_logs_id_seq')
            END AS log_id
        FROM (
            SELECT
                u.n, u.attempt, u.valid, b.before,
                row_number() OVER (PARTITION BY u.id, u.attempt IS NOT NULL AND u.valid ORDER BY u.n) AS k
            FROM unnest(append_job_logs.job_ids, v_line_attempts, v_valid) WITH ORDINALITY AS u (id, attempt, valid, n)
            LEFT JOIN unnest(v_counted_jobs, v_before) AS b (id, before) ON b.id = u.id
        ) AS w
        ORDER BY w.n
    ) AS r;

    INSERT INTO pgrun.job_logs (id, job_id, attempt, level, message, fields, created_at)
    OVERRIDING SYSTEM VALUE
    SELECT
        u.log_id, u.id, u.attempt, coalesce(append_job_logs.levels[u.n], 'info'),
        pgrun._clip(u.message, 8192), append_job_logs.fields[u.n], v_now
    FROM unnest(append_job_logs.job_ids, v_line_attempts, append_job_logs.messages, v_log_ids)
        WITH ORDINALITY AS u (id, attempt, message, log_id, n)
    WHERE u.log_id IS NOT NULL;

    -- An attempt whose lines went past c_max_lines: those are dropped, not stored (rare: the
    -- upsert above counted them all as stored).
    IF EXISTS (
        SELECT 1 FROM unnest(v_before, v_counted_lines) AS b (before, lines)
        WHERE b.before + b.lines > c_max_lines
    ) THEN
        UPDATE pgrun.job_log_counts AS c
        SET stored = c.stored - o.over,
            dropped = c.dropped + o.over
        FROM (
            SELECT b.id, b.lines - greatest(0, least(b.lines, c_max_lines - b.before)) AS over
            FROM unnest(v_counted_jobs, v_before, v_counted_lines) AS b (id, before, lines)
        ) AS o
        JOIN unnest(v_jobs, v_attempts) AS l (id, attempt) ON l.id = o.id
        WHERE c.job_id = o.id AND c.attempt = l.attempt AND o.over > 0;
    END IF;

    RETURN QUERY
    SELECT u.id, u.log_id, u.outcome
    FROM unnest(append_job_logs.job_ids, v_log_ids, v_outcomes) WITH ORDINALITY AS u (id, log_id, outcome, n)
    ORDER BY u.n;
END;
$$;

COMMENT ON FUNCTION pgrun.append_job_logs(uuid[], uuid[], text[], text[], jsonb[]) IS
'append_job_log for many lines (of one job or several) in one call: one row per line, in input order, '
'with outcome logged (stored; log_id), counted (the attempt holds its 1000 lines: counted, not stored), '
'lease_lost (no live lease under that token: nothing written) or invalid (a level or fields '
'append_job_log refuses: not written). A job''s lines are kept in input order; messages are clipped as '
'append_job_log clips them; NULL levels are info, NULL fields none. Writes no job_events row. '
'Errors: job.invalid_batch (RQ003: NULL, NULL-holding or multi-dimensional arrays, lengths that differ, '
'more than 10000 lines).';
