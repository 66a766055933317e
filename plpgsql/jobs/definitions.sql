-- Job definitions and runtime configs: the per-type settings around the queue.
--
-- upsert_job_definition(job_type, ...) states the whole definition of a job type:
-- the defaults enqueue_job copies onto each new job (queue, priority, max_attempts,
-- timeout) and the retry policy fail_job and the reaper apply (backoff base, cap and
-- jitter). Every argument left out takes the built-in default, so a call is a full
-- replace, never a merge; jobs already enqueued keep the values they were given.
-- max_result_bytes is the one setting read at the write it limits, not copied: the largest
-- result (complete_job) or state (continue_job) a job of the type may store, in bytes of
-- jsonb, 1 KiB..16 MiB (NULL = 1 MiB, pgrun._job_result_cap), for jobs already enqueued too.
-- A NULL argument means the same as leaving it out (timeout_seconds NULL = no timeout).
--
-- set_job_runtime_config(job_type, paused, max_concurrency, clear_max_concurrency)
-- is the operator's switchboard, kept apart from definitions so a deploy that
-- re-states definitions never resumes a paused type. Here NULL means "leave as is":
-- set only what you pass. claim_jobs skips paused types and never runs more than
-- max_concurrency jobs of a type at once.
--
-- Neither function needs the job type to exist anywhere else first.
--
-- _job_defaults() is THE home of the built-in defaults: what a job gets when neither the
-- request nor its type's definition says (queue 'default', priority 100, max_attempts 20,
-- no timeout, backoff 2 s / 3600 s / 0.2). upsert_job_definition fills a definition's
-- omitted fields from it, and _new_job_row (below; read by pgrun._enqueue_insert_jobs,
-- jobs/_insert.sql, directly for one job and through _new_job_rows for several) resolves
-- every new job's settings against its type's definition and it.
-- An IMMUTABLE SQL function returning one row, with no SET clause: the planner inlines it
-- into the insert and folds its values into constants, so the hot insert pays no call per
-- row (EXPLAIN VERBOSE shows the literals). The column
-- defaults of job_definitions (sql/0002_jobs.sql) and upsert_job_definition's parameter
-- defaults say the same for readers of the signature; the function decides.
--
-- Locks: one row of job_definitions or job_runtime_configs, via INSERT ... ON CONFLICT
-- DO UPDATE (concurrent calls for one type serialize on that row; last writer wins).
--
-- Who: admins, and workers for the job types they run (within their role's queue / job type
-- scope: access.queue_denied / access.job_type_denied, 42501); set_job_runtime_config is an
-- admin's only. A definition that changed, and every runtime switch, leaves an audit_log row
-- with the login role; restating a definition unchanged (workers do so at every start)
-- writes nothing.
--
-- Errors (all RQ003, checked before anything is written): job.invalid_type,
-- job.invalid_queue, job.invalid_priority, job.invalid_max_attempts,
-- job.invalid_timeout, job.invalid_backoff, job.invalid_max_result_bytes,
-- job.invalid_max_concurrency.

CREATE OR REPLACE FUNCTION pgrun._job_defaults()
RETURNS TABLE (
    queue text,
    priority integer,
    max_attempts integer,
    timeout_seconds integer,
    backoff_base_seconds double precision,
    backoff_max_seconds double precision,
    backoff_jitter double precision
)
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
ROWS 1
AS $$
    SELECT
        'default'::pg_catalog.text,
        100,
        20,
        NULL::pg_catalog.int4,
        2::pg_catalog.float8,
        3600::pg_catalog.float8,
        0.2::pg_catalog.float8
$$;

REVOKE EXECUTE ON FUNCTION pgrun._job_defaults() FROM public;

COMMENT ON FUNCTION pgrun._job_defaults() IS
'Private: the built-in job settings (queue, priority, max_attempts, timeout_seconds, backoff base, max, '
'jitter) a job gets when neither its request nor its type''s definition gives one; one row.';

-- THE row of a new job, from what its door decided (p_job) and its type's definition (the
-- p_def_* values; NULL when the type has none): queue, priority, max_attempts and timeout are
-- the request, else the definition, else pgrun._job_defaults(); the backoff the definition,
-- else the default; created_at and updated_at p_now. The definition comes as its values, not
-- as a row, so that the set form below passes a join's columns and the planner folds the
-- whole function away (an inlined STABLE sql function without a SET clause and without a
-- FROM of its own beyond the inlined defaults: one Result node, no call per row).
-- pgrun._enqueue_insert_jobs inserts one job straight from it (its definition read by the
-- primary key first): a single enqueue then runs a one-row INSERT ... SELECT instead of the
-- set form's plan (~10 % less of a single enqueue, docs/performance.md).
CREATE OR REPLACE FUNCTION pgrun._new_job_row(
    p_job pgrun._new_job,
    p_def_queue text,
    p_def_priority integer,
    p_def_max_attempts integer,
    p_def_timeout_seconds integer,
    p_def_backoff_base_seconds double precision,
    p_def_backoff_max_seconds double precision,
    p_def_backoff_jitter double precision,
    p_now timestamptz
)
RETURNS TABLE (
    id uuid, job_type text, queue text, priority integer, status text, payload jsonb,
    run_at timestamptz, max_attempts integer, timeout_seconds integer,
    backoff_base_seconds double precision, backoff_max_seconds double precision,
    backoff_jitter double precision, organization_id uuid, idempotency_key text,
    enqueue_request jsonb, workflow_run_id uuid, workflow_step_key text, schedule_id uuid,
    created_at timestamptz, updated_at timestamptz
)
LANGUAGE sql
STABLE
ROWS 1
AS $$
    SELECT
        (p_job).id,
        (p_job).job_type,
        coalesce((p_job).queue, p_def_queue, b.queue),
        coalesce((p_job).priority, p_def_priority, b.priority),
        'queued',
        (p_job).payload,
        (p_job).run_at,
        coalesce((p_job).max_attempts, p_def_max_attempts, b.max_attempts),
        coalesce((p_job).timeout_seconds, p_def_timeout_seconds, b.timeout_seconds),
        coalesce(p_def_backoff_base_seconds, b.backoff_base_seconds),
        coalesce(p_def_backoff_max_seconds, b.backoff_max_seconds),
        coalesce(p_def_backoff_jitter, b.backoff_jitter),
        (p_job).organization_id,
        (p_job).idempotency_key,
        (p_job).enqueue_request,
        (p_job).workflow_run_id,
        (p_job).workflow_step_key,
        (p_job).schedule_id,
        p_now,
        p_now
    FROM pgrun._job_defaults() AS b
$$;

REVOKE EXECUTE ON FUNCTION pgrun._new_job_row(
    pgrun._new_job, text, integer, integer, integer, double precision, double precision, double precision,
    timestamptz
) FROM public;

COMMENT ON FUNCTION pgrun._new_job_row(
    pgrun._new_job, text, integer, integer, integer, double precision, double precision, double precision,
    timestamptz
) IS
'Private: the row of one new job, settings resolved as request, definition (the p_def_* values, NULL when '
'the type has none), built-in default; the insert of new jobs reads it, for several jobs through _new_job_rows.';

-- The rows of several new jobs (pgrun._enqueue_insert_jobs, jobs/_insert.sql), one per
-- element of p_jobs and in its order: pgrun._new_job_row over each element and its type's
-- definition. p_types holds the job types of p_jobs: only their definitions are read (by the
-- primary key), so an enqueue costs about the same with 1 or 500 job types defined (1.02-1.03x;
-- the hash of the whole table it replaces made it 1.25x). The set-returning functions in the
-- select list, not in FROM: there unnest() fills a tuplestore first (the old fourteen-array
-- form measured ~50 us of a single enqueue in FROM, ~15 us in the select list). Inlined into
-- the insert that reads it (STABLE sql without a SET clause), with _new_job_row inlined into
-- it: the plan is the one the row expressions written out here had (EXPLAIN VERBOSE).
CREATE OR REPLACE FUNCTION pgrun._new_job_rows(
    p_jobs pgrun._new_job[],
    p_types text[],
    p_now timestamptz
)
RETURNS TABLE (
    id uuid, job_type text, queue text, priority integer, status text, payload jsonb,
    run_at timestamptz, max_attempts integer, timeout_seconds integer,
    backoff_base_seconds double precision, backoff_max_seconds double precision,
    backoff_jitter double precision, organization_id uuid, idempotency_key text,
    enqueue_request jsonb, workflow_run_id uuid, workflow_step_key text, schedule_id uuid,
    created_at timestamptz, updated_at timestamptz
)
LANGUAGE sql
STABLE
AS $$
    -- the definitions of the call's types: a probe of the primary key per type, whatever the
    -- statistics say (a join, or a filter on job_type = ANY (p_types), read or hashed the
    -- whole table; LIMIT 1 keeps each probe a subquery of its own, which the planner does not
    -- turn into such a join), then hashed for the join below, which streams the jobs in
    -- array order (MATERIALIZED: inlined, the planner hashed the jobs instead)
    WITH d AS MATERIALIZED (
        SELECT y.*
        FROM (SELECT pg_catalog.unnest(p_types) AS job_type) AS t
        CROSS JOIN LATERAL (
            SELECT x.* FROM pgrun.job_definitions AS x
            WHERE x.job_type OPERATOR(pg_catalog.=) t.job_type
            LIMIT 1
        ) AS y
    )
    SELECT n.*
    -- the outer subquery is pulled up, so each field of r.job is read in place
    FROM (
        SELECT e.ord, e.job, (e.job).job_type
        FROM (
            SELECT pg_catalog.generate_subscripts(p_jobs, 1) AS ord, pg_catalog.unnest(p_jobs) AS job
        ) AS e
    ) AS r
    LEFT JOIN d ON d.job_type OPERATOR(pg_catalog.=) r.job_type
    CROSS JOIN LATERAL pgrun._new_job_row(
        r.job, d.queue, d.priority, d.max_attempts, d.timeout_seconds,
        d.backoff_base_seconds, d.backoff_max_seconds, d.backoff_jitter, p_now
    ) AS n
    -- array order decides which of several same-key elements creates the job, and ids ascend
    -- in it: the rows and index entries go in in id order
    ORDER BY r.ord
$$;

REVOKE EXECUTE ON FUNCTION pgrun._new_job_rows(pgrun._new_job[], text[], timestamptz) FROM public;

COMMENT ON FUNCTION pgrun._new_job_rows(pgrun._new_job[], text[], timestamptz) IS
'Private: the rows of new jobs in array order (pgrun._new_job_row each), settings resolved as request, '
'definition (of the types in p_types), built-in default; read by the one insert of new jobs.';

CREATE OR REPLACE FUNCTION pgrun.upsert_job_definition(
    job_type text,
    queue text DEFAULT 'default',
    priority integer DEFAULT 100,
    max_attempts integer DEFAULT 20,
    timeout_seconds integer DEFAULT NULL,
    backoff_base_seconds double precision DEFAULT 2,
    backoff_max_seconds double precision DEFAULT 3600,
    backoff_jitter double precision DEFAULT 0.2,
    max_result_bytes integer DEFAULT NULL
)
RETURNS pgrun.job_definitions
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_queue text;
    v_priority integer;
    v_max_attempts integer;
    v_base double precision;
    v_max double precision;
    v_jitter double precision;
    v_row pgrun.job_definitions;
    v_old pgrun.job_definitions;
BEGIN
    SELECT
        coalesce(upsert_job_definition.queue, b.queue),
        coalesce(upsert_job_definition.priority, b.priority),
        coalesce(upsert_job_definition.max_attempts, b.max_attempts),
        coalesce(upsert_job_definition.backoff_base_seconds, b.backoff_base_seconds),
        coalesce(upsert_job_definition.backoff_max_seconds, b.backoff_max_seconds),
        coalesce(upsert_job_definition.backoff_jitter, b.backoff_jitter)
    INTO v_queue, v_priority, v_max_attempts, v_base, v_max, v_jitter
    FROM pgrun._job_defaults() AS b;
    -- The job type rule is the one job_definitions' CHECK constraint calls (sql/0015).
    IF upsert_job_definition.job_type IS NULL OR NOT pgrun._valid_job_type(upsert_job_definition.job_type) THEN
        PERFORM pgrun._job_raise_invalid_type(
            format('job_type %s is not a valid job type', pgrun._shown(upsert_job_definition.job_type))
        );
    END IF;
    IF NOT pgrun._valid_queue(v_queue) THEN
        PERFORM pgrun._raise(
            'job.invalid_queue',
            format('queue %s is not a valid queue name', pgrun._shown(v_queue)),
            'Use at most 64 characters: a lowercase letter, then lowercase letters, '
                'digits, "_", ".", ":" or "-".'
        );
    END IF;
    IF v_priority NOT BETWEEN 0 AND 32767 THEN
        PERFORM pgrun._raise(
            'job.invalid_priority',
            format('priority %s is outside 0..32767', v_priority),
            'Lower numbers run first; the default is 100.'
        );
    END IF;
    IF v_max_attempts NOT BETWEEN 1 AND 1000 THEN
        PERFORM pgrun._raise(
            'job.invalid_max_attempts',
            format('max_attempts %s is outside 1..1000', v_max_attempts),
            'max_attempts counts every try, the first included; the default is 20.'
        );
    END IF;
    IF upsert_job_definition.timeout_seconds <= 0 THEN
        PERFORM pgrun._raise(
            'job.invalid_timeout',
            format('timeout_seconds %s is not positive', upsert_job_definition.timeout_seconds),
            'Pass a positive number of seconds, or NULL for no timeout.'
        );
    END IF;
    -- NaN compares greater than every number in PostgreSQL, so bound from above too.
    IF NOT (v_base >= 0 AND v_base <= v_max AND v_max < 'Infinity'::double precision)
        OR NOT (v_jitter >= 0 AND v_jitter < 1) THEN
        PERFORM pgrun._raise(
            'job.invalid_backoff',
            format(
                'backoff_base_seconds %s, backoff_max_seconds %s, backoff_jitter %s',
                v_base, v_max, v_jitter
            ),
            'Need 0 <= backoff_base_seconds <= backoff_max_seconds (finite) '
                'and 0 <= backoff_jitter < 1.'
        );
    END IF;

    -- NULL = the built-in 1 MiB; a type may set 1 KiB..16 MiB, never unbounded.
    IF upsert_job_definition.max_result_bytes NOT BETWEEN 1024 AND 16777216 THEN
        PERFORM pgrun._raise(
            'job.invalid_max_result_bytes',
            format('max_result_bytes %s is outside 1024..16777216', upsert_job_definition.max_result_bytes),
            'Pass the largest result or state, in bytes of jsonb, a job of the type may store '
                '(1 KiB to 16 MiB), or NULL for the built-in 1 MiB.'
        );
    END IF;

    -- A worker declares the types it runs: within its scope only (util/_access.sql).
    PERFORM pgrun._caller_check_scope(ARRAY[v_queue], ARRAY[upsert_job_definition.job_type]);

    SELECT d.* INTO v_old FROM pgrun.job_definitions AS d WHERE d.job_type = upsert_job_definition.job_type;
    IF FOUND AND (v_old.queue, v_old.priority, v_old.max_attempts, v_old.timeout_seconds,
        v_old.backoff_base_seconds, v_old.backoff_max_seconds, v_old.backoff_jitter, v_old.max_result_bytes)
        IS NOT DISTINCT FROM (v_queue, v_priority, v_max_attempts, upsert_job_definition.timeout_seconds,
        v_base, v_max, v_jitter, upsert_job_definition.max_result_bytes) THEN
        RETURN v_old;  -- restating the definition changes nothing (workers do so at every start)
    END IF;

    INSERT INTO pgrun.job_definitions AS d (
        job_type, queue, priority, max_attempts, timeout_seconds,
        backoff_base_seconds, backoff_max_seconds, backoff_jitter, max_result_bytes, created_at, updated_at
    )
    VALUES (
        upsert_job_definition.job_type, v_queue, v_priority, v_max_attempts,
        upsert_job_definition.timeout_seconds, v_base, v_max, v_jitter,
        upsert_job_definition.max_result_bytes, pgrun.now(), pgrun.now()
    )
    ON CONFLICT ON CONSTRAINT job_definitions_pkey DO UPDATE
        SET queue = excluded.queue,
            priority = excluded.priority,
            max_attempts = excluded.max_attempts,
            timeout_seconds = excluded.timeout_seconds,
            backoff_base_seconds = excluded.backoff_base_seconds,
            backoff_max_seconds = excluded.backoff_max_seconds,
            backoff_jitter = excluded.backoff_jitter,
            max_result_bytes = excluded.max_result_bytes,
            updated_at = excluded.updated_at
    RETURNING d.* INTO v_row;
    PERFORM pgrun._audit(
        'job_definition.upserted', NULL, v_row.job_type,
        to_jsonb(v_row) - 'job_type' - 'created_at' - 'updated_at'
    );
    RETURN v_row;
END;
$$;

COMMENT ON FUNCTION pgrun.upsert_job_definition(
    text, text, integer, integer, integer, double precision, double precision, double precision, integer
) IS
'Create or replace the definition of a job type: the queue, priority (0..32767, lower runs first), '
'max_attempts (1..1000), timeout_seconds (NULL = none) new jobs of the type get, and the retry backoff '
'fail_job and the reaper apply (exponential from backoff_base_seconds, capped at backoff_max_seconds, '
'spread by the backoff_jitter fraction), and max_result_bytes, the largest result (complete_job) or '
'state (continue_job) its jobs may store in bytes of jsonb (1024..16777216; NULL = 1 MiB; applies to '
'jobs already enqueued too). '
'Omitted or NULL arguments take the built-in defaults (default, 100, 20, none, 2, 3600, 0.2, 1 MiB): each call '
'states the whole definition. Existing jobs keep their values; an unchanged restatement writes nothing, '
'a change leaves an audit_log row. Returns the stored row. A worker role declares only the job types and '
'queues of its scope. Errors: job.invalid_type, job.invalid_queue, job.invalid_priority, '
'job.invalid_max_attempts, job.invalid_timeout, job.invalid_backoff, job.invalid_max_result_bytes (RQ003); '
'access.queue_denied, '
'access.job_type_denied (42501).';

CREATE OR REPLACE FUNCTION pgrun.set_job_runtime_config(
    job_type text,
    paused boolean DEFAULT NULL,
    max_concurrency integer DEFAULT NULL,
    clear_max_concurrency boolean DEFAULT FALSE
)
RETURNS pgrun.job_runtime_configs
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
-- The queues' loose scan below (pgrun._queued_pairs) walks jobs_claim_type_idx whatever the
-- statistics say (an empty table's would make a scan of every job look cheaper); its other
-- statements are primary-key writes either way.
SET enable_seqscan = off
SET enable_bitmapscan = off
AS $$
DECLARE
    v_row pgrun.job_runtime_configs;
    v_queues text[];
BEGIN
    IF set_job_runtime_config.job_type IS NULL OR NOT pgrun._valid_job_type(set_job_runtime_config.job_type) THEN
        PERFORM pgrun._job_raise_invalid_type(
            format('job_type %s is not a valid job type', pgrun._shown(set_job_runtime_config.job_type))
        );
    END IF;
    IF set_job_runtime_config.max_concurrency <= 0 THEN
        PERFORM pgrun._raise(
            'job.invalid_max_concurrency',
            format('max_concurrency %s is not positive', set_job_runtime_config.max_concurrency),
            'Pass a positive cap, or clear_max_concurrency => true to remove the cap '
                '(pause the type to stop claiming it altogether).'
        );
    END IF;
    IF set_job_runtime_config.max_concurrency IS NOT NULL
        AND coalesce(set_job_runtime_config.clear_max_concurrency, false) THEN
        PERFORM pgrun._raise(
            'job.invalid_max_concurrency',
            format(
                'max_concurrency %s and clear_max_concurrency => true contradict each other',
                set_job_runtime_config.max_concurrency
            ),
            'Pass either a new cap or clear_max_concurrency => true, not both.'
        );
    END IF;

    INSERT INTO pgrun.job_runtime_configs AS c (job_type, paused, max_concurrency, updated_at)
    VALUES (
        set_job_runtime_config.job_type,
        coalesce(set_job_runtime_config.paused, false),
        set_job_runtime_config.max_concurrency,
        pgrun.now()
    )
    ON CONFLICT ON CONSTRAINT job_runtime_configs_pkey DO UPDATE
        SET paused = coalesce(set_job_runtime_config.paused, c.paused),
            max_concurrency = CASE
                WHEN coalesce(set_job_runtime_config.clear_max_concurrency, false) THEN NULL
                ELSE coalesce(set_job_runtime_config.max_concurrency, c.max_concurrency)
            END,
            updated_at = excluded.updated_at
    RETURNING c.* INTO v_row;
    PERFORM pgrun._audit(
        'job_runtime_config.set', NULL, v_row.job_type,
        jsonb_build_object(
            'paused', set_job_runtime_config.paused,
            'max_concurrency', set_job_runtime_config.max_concurrency,
            'clear_max_concurrency', set_job_runtime_config.clear_max_concurrency,
            'now', jsonb_build_object('paused', v_row.paused, 'max_concurrency', v_row.max_concurrency)
        )
    );
    -- A type left claimable may have queued jobs that idle workers passed over (paused, or
    -- at its cap) and would find only at their poll: wake the queues that hold them, once
    -- each, as an enqueue does (pgrun._queued_pairs: one index descent per queue).
    IF NOT v_row.paused THEN
        SELECT array_agg(p.queue) INTO v_queues
        FROM pgrun._queued_pairs(ARRAY[v_row.job_type], '{}') AS p;
        IF v_queues IS NOT NULL THEN
            PERFORM pgrun._enqueue_notify_queues(v_queues);
        END IF;
    END IF;
    RETURN v_row;
END;
$$;

COMMENT ON FUNCTION pgrun.set_job_runtime_config(text, boolean, integer, boolean) IS
'Operator switches for a job type: paused => true stops claim_jobs from taking its jobs (enqueue still '
'works), paused => false resumes; max_concurrency caps how many of its jobs run at once; '
'clear_max_concurrency => true removes the cap. NULL arguments leave the current setting as it is '
'(a new type starts unpaused and uncapped). Each call leaves an audit_log row naming the login role. '
'A call that leaves the type unpaused notifies channel pgrun_jobs once per queue holding its queued jobs, as '
'an enqueue does, so idle workers take what resuming it or raising its cap made claimable at once. '
'Returns the stored row. Errors: job.invalid_type, job.invalid_max_concurrency (RQ003).';
