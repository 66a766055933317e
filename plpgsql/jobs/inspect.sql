-- Inspection: read one job in full, or page through many. Read-only, no locks beyond
-- the snapshot.
--
-- get_job(job_id, organization_id) returns the job as one jsonb object: every column of
-- jobs except lease_token, plus "error_message", "attempts" (job_attempts rows, by
-- attempt, without their lease_token, each with log_lines and log_lines_dropped from
-- job_log_counts) and "dead_letters" (job_dead_letters rows, oldest first, each with its
-- error_message). An error message is stored once, on the event that ended its attempt;
-- the job (error_attempt) and each dead letter (attempt) point at it. The
-- lease token is the worker's only credential for writing to the job, so inspection
-- never hands it out.
--
-- list_jobs(...) pages through jobs in ascending id order, oldest first (ids are
-- UUIDv7, so this is creation order): pass the last id of one page as after_id to get
-- the next. Jobs created while you page appear on later pages, never skipped. Filters
-- combine with AND; NULL means no filter. Rows carry the scheduling, lease and outcome
-- columns but not the blobs (payload, state, progress, result, enqueue_request):
-- get_job has those. count_jobs (jobs/metrics.sql) counts by status with the same filters,
-- the same checks (_job_check_status) and the same filters and tenancy (_job_filter).
--
-- Names: the job's id is job_id, as every function that takes or returns one calls it.
-- list_jobs rows (last column) and get_job's object also keep "id", the same value, for
-- the clients written before job_id was added; new code reads job_id.
--
-- Tenancy (util/_access.sql): both see only the jobs of the organizations the caller acts
-- for; organization_id narrows that to one. Another organization's job is job.not_found,
-- exactly like a missing one. For an admin (operators) a NULL organization_id means every
-- job; for anyone else it never means every tenant.
--
-- Errors: job.not_found (RQ002); job.invalid_status, job.invalid_max_rows (RQ003).

CREATE OR REPLACE FUNCTION pgrun.get_job(job_id uuid, organization_id uuid DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_scope record;
    v_job jsonb;
BEGIN
    SELECT c.all_organizations, c.organization_ids, c.untenanted INTO v_scope
    FROM pgrun._caller_scope(get_job.organization_id) AS c;

    SELECT
        (to_jsonb(j) - 'lease_token')
        || jsonb_build_object(
            'job_id', j.id,
            'error_message', pgrun._job_attempt_error_message(j.id, j.error_attempt),
            'attempts',
            coalesce(
                (SELECT jsonb_agg(
                    to_jsonb(a) - 'job_id' - 'lease_token'
                    || jsonb_build_object(
                        'log_lines', coalesce(c.stored, 0), 'log_lines_dropped', coalesce(c.dropped, 0)
                    )
                    ORDER BY a.attempt
                 )
                 FROM pgrun.job_attempts AS a
                 LEFT JOIN pgrun.job_log_counts AS c ON c.job_id = a.job_id AND c.attempt = a.attempt
                 WHERE a.job_id = j.id),
                '[]'::jsonb
            ),
            'dead_letters',
            coalesce(
                (SELECT jsonb_agg(
                    to_jsonb(d) - 'job_id'
                    || jsonb_build_object('error_message', pgrun._job_attempt_error_message(d.job_id, d.attempt))
                    ORDER BY d.id
                 )
                 FROM pgrun.job_dead_letters AS d
                 WHERE d.job_id = j.id),
                '[]'::jsonb
            )
        )
    INTO v_job
    FROM pgrun.jobs AS j
    WHERE j.id = get_job.job_id
        AND pgrun._in_scope(j.organization_id, v_scope.all_organizations, v_scope.organization_ids, v_scope.untenanted);

    IF v_job IS NULL THEN
        PERFORM pgrun._job_raise_not_found(get_job.job_id, get_job.organization_id);
    END IF;
    RETURN v_job;
END;
$$;

COMMENT ON FUNCTION pgrun.get_job(uuid, uuid) IS
'One job as jsonb: all its columns (lease_token omitted) with job_id (the job''s id; "id" holds the same '
'value, kept for older clients) and error_message, plus "attempts" (one '
'object per claim, in order, with log_lines kept and log_lines_dropped over the 1000-line cap) and '
'"dead_letters" (oldest first). Only jobs of the organizations the caller acts for are '
'visible (organization_id names one). Errors: job.not_found (RQ002) when there is no such job or the caller '
'may not see it.';

-- The error message of one attempt of a job: it is stored once, on the event that ended
-- the attempt; jobs.error_attempt and job_dead_letters.attempt point at it. NULL for a NULL
-- attempt. A probe of the job's events (primary key (job_id, id)).
CREATE OR REPLACE FUNCTION pgrun._job_attempt_error_message(p_job_id uuid, p_attempt integer)
RETURNS text
LANGUAGE sql
STABLE
AS $$
    SELECT e.error_message
    FROM pgrun.job_events AS e
    WHERE e.job_id OPERATOR(pg_catalog.=) p_job_id
      AND e.attempt OPERATOR(pg_catalog.=) p_attempt
      AND e.outcome IS NOT NULL
    LIMIT 1
$$;

REVOKE EXECUTE ON FUNCTION pgrun._job_attempt_error_message(uuid, integer) FROM public;

COMMENT ON FUNCTION pgrun._job_attempt_error_message(uuid, integer) IS
'Private: the error message of a job''s attempt, from the event that ended it (the one place it is stored).';

-- The status argument of list_jobs and count_jobs: NULL (every status) or one of the jobs
-- table's CHECK (jobs_status_check), else job.invalid_status.
CREATE OR REPLACE FUNCTION pgrun._job_check_status(p_status text)
RETURNS void
LANGUAGE plpgsql
STABLE
AS $$
BEGIN
    IF p_status IS NOT NULL
        AND p_status NOT IN ('queued', 'running', 'succeeded', 'dead', 'cancelled') THEN
        PERFORM pgrun._raise(
            'job.invalid_status',
            format('status %s is not a job status', pgrun._shown(p_status)),
            'Use one of queued, running, succeeded, dead, cancelled, or NULL for all.'
        );
    END IF;
END;
$$;

REVOKE EXECUTE ON FUNCTION pgrun._job_check_status(text) FROM public;

COMMENT ON FUNCTION pgrun._job_check_status(text) IS
'Private: raises job.invalid_status unless the status argument is NULL or a job status.';

-- The filters list_jobs and count_jobs share, as conditions on "j" (pgrun.jobs) for their
-- dynamic SQL (joined with AND): status $1, job_type $2, queue $3, workflow_run_id $5 (each
-- only when given, so each combination is planned on its own), and the caller's tenancy, whose
-- organization ids and untenanted flag (returned) the caller binds to the placeholders
-- p_ids_param and p_untenanted_param. One organization is a probe of jobs_organization_idx; several, or work
-- without an organization, a filter on whatever walk the other conditions choose; an admin's
-- every organization, none. Errors: those of pgrun._caller_scope (access.*).
CREATE OR REPLACE FUNCTION pgrun._job_filter(
    p_status text,
    p_job_type text,
    p_queue text,
    p_organization_id uuid,
    p_workflow_run_id uuid,
    p_ids_param text,
    p_untenanted_param text,
    OUT conditions text[],
    OUT organization_ids uuid[],
    OUT untenanted boolean
)
LANGUAGE plpgsql
STABLE
AS $$
DECLARE
    v_where text[] := ARRAY['true'];
    v_all boolean;
BEGIN
    IF p_status IS NOT NULL THEN
        v_where := v_where || 'j.status = $1'::text;
    END IF;
    IF p_job_type IS NOT NULL THEN
        v_where := v_where || 'j.job_type = $2'::text;
    END IF;
    IF p_queue IS NOT NULL THEN
        v_where := v_where || 'j.queue = $3'::text;
    END IF;
    SELECT c.all_organizations, c.organization_ids, c.untenanted INTO v_all, organization_ids, untenanted
    FROM pgrun._caller_scope(p_organization_id) AS c;
    v_where := v_where || CASE
        WHEN v_all THEN 'true'
        WHEN cardinality(organization_ids) = 1 AND NOT untenanted
            THEN format('j.organization_id = (%s)[1]', p_ids_param)
        WHEN cardinality(organization_ids) = 0 AND untenanted
            THEN 'j.organization_id IS NULL'
        ELSE format('pgrun._in_scope(j.organization_id, false, %s, %s)', p_ids_param, p_untenanted_param)
    END;
    IF p_workflow_run_id IS NOT NULL THEN
        v_where := v_where || 'j.workflow_run_id = $5'::text;
    END IF;
    conditions := v_where;
END;
$$;

REVOKE EXECUTE ON FUNCTION pgrun._job_filter(text, text, text, uuid, uuid, text, text) FROM public;

COMMENT ON FUNCTION pgrun._job_filter(text, text, text, uuid, uuid, text, text) IS
'Private: the filters and tenancy of list_jobs and count_jobs as SQL conditions on alias j, '
'with the scope values their dynamic queries bind.';

-- The query behind list_jobs; plpgsql only so that each filter combination gets its
-- own plan (dynamic SQL) instead of a generic one full of "param IS NULL OR ...".
CREATE OR REPLACE FUNCTION pgrun._job_list(
    p_status text,
    p_job_type text,
    p_queue text,
    p_organization_id uuid,
    p_workflow_run_id uuid,
    p_after_id uuid,
    p_max_rows integer
)
RETURNS SETOF pgrun.jobs
LANGUAGE plpgsql
STABLE
AS $$
DECLARE
    v_limit integer := coalesce(p_max_rows, 50);
    v_where text[];
    v_ids uuid[];
    v_untenanted boolean;
BEGIN
    PERFORM pgrun._job_check_status(p_status);
    IF v_limit NOT BETWEEN 1 AND 1000 THEN
        PERFORM pgrun._raise(
            'job.invalid_max_rows',
            format('max_rows %s is outside 1..1000', v_limit),
            'Page with after_id instead of asking for more rows at once.'
        );
    END IF;

    SELECT f.conditions, f.organization_ids, f.untenanted INTO v_where, v_ids, v_untenanted
    FROM pgrun._job_filter(p_status, p_job_type, p_queue, p_organization_id, p_workflow_run_id, '$8', '$9') AS f;
    IF p_after_id IS NOT NULL THEN
        v_where := v_where || 'j.id > $6'::text;
    END IF;

    RETURN QUERY EXECUTE format(
        'SELECT j.* FROM pgrun.jobs AS j WHERE %s ORDER BY j.id LIMIT $7', array_to_string(v_where, ' AND ')
    )
    USING p_status, p_job_type, p_queue, p_organization_id,
        p_workflow_run_id, p_after_id, v_limit, v_ids, v_untenanted;
END;
$$;

REVOKE EXECUTE ON FUNCTION pgrun._job_list(text, text, text, uuid, uuid, uuid, integer) FROM public;

COMMENT ON FUNCTION pgrun._job_list(text, text, text, uuid, uuid, uuid, integer) IS
'Private: validates list_jobs'' arguments and runs its query with a plan for the filters given.';

CREATE OR REPLACE FUNCTION pgrun.list_jobs(
    status text DEFAULT NULL,
    job_type text DEFAULT NULL,
    queue text DEFAULT NULL,
    organization_id uuid DEFAULT NULL,
    workflow_run_id uuid DEFAULT NULL,
    after_id uuid DEFAULT NULL,
    max_rows integer DEFAULT 50
)
RETURNS TABLE (
    id uuid,
    job_type text,
    queue text,
    priority integer,
    status text,
    run_at timestamptz,
    attempt integer,
    total_attempts integer,
    max_attempts integer,
    timeout_seconds integer,
    worker_id text,
    lease_expires_at timestamptz,
    heartbeat_at timestamptz,
    cancel_requested_at timestamptz,
    cancel_reason text,
    step text,
    error_code text,
    error_message text,
    organization_id uuid,
    idempotency_key text,
    workflow_run_id uuid,
    workflow_step_key text,
    schedule_id uuid,
    created_at timestamptz,
    updated_at timestamptz,
    started_at timestamptz,
    finished_at timestamptz,
    job_id uuid
)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT
        j.id, j.job_type, j.queue, j.priority, j.status, j.run_at, j.attempt, j.total_attempts,
        j.max_attempts, j.timeout_seconds, j.worker_id, j.lease_expires_at, j.heartbeat_at,
        j.cancel_requested_at, j.cancel_reason, j.step, j.error_code,
        -- a function call per row (a read of job_events, not inlinable): only for jobs that failed
        CASE WHEN j.error_attempt IS NOT NULL THEN pgrun._job_attempt_error_message(j.id, j.error_attempt) END,
        j.organization_id, j.idempotency_key, j.workflow_run_id, j.workflow_step_key, j.schedule_id,
        j.created_at, j.updated_at, j.started_at, j.finished_at, j.id
    FROM pgrun._job_list(
        list_jobs.status, list_jobs.job_type, list_jobs.queue, list_jobs.organization_id,
        list_jobs.workflow_run_id, list_jobs.after_id, list_jobs.max_rows
    ) AS j
    ORDER BY j.id
$$;

COMMENT ON FUNCTION pgrun.list_jobs(text, text, text, uuid, uuid, uuid, integer) IS
'A page of jobs in ascending id (= creation) order, oldest first: pass the last id you got as after_id '
'for the next page. Only jobs the caller may see (its organizations; an admin: all). Filters (NULL = any): '
'status, job_type, queue, organization_id (one of the caller''s organizations), '
'workflow_run_id. max_rows 1..1000, default 50. Returns the scheduling, lease and outcome columns, not '
'payload/state/progress/result (use get_job); the job''s id is job_id (the last column) and also id (the '
'first), kept for older clients. To count, use count_jobs. Errors: job.invalid_status, '
'job.invalid_max_rows (RQ003).';
