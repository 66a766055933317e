-- The lease machine's shared rules: private helpers used by claim, heartbeat, complete,
-- fail, continue and the reaper. Loaded first in plpgsql/jobs/ (the name sorts first),
-- so SQL-language callers can reference them at creation time.
--
-- * _lease_lost_reason: why a (job_id, lease_token) pair no longer owns its job, in the
--   order the lifecycle writes check it: unknown_job, not_running, token_mismatch,
--   lease_expired; 'not_held' instead for a caller that never held the job and is not an
--   admin (no oracle for job ids). Batch writes put it in their per-row result; single
--   writes raise it.
-- * _lease_raise_lost: raises job.lease_lost (RQ004) with a DETAIL naming the reason.
-- * _lease_retry_decision: THE retry-or-dead rule. fail_job, fail_jobs and reap_expired_leases
--   all call it, so the backoff formula and its bounds live in one place.
-- * _job_result_cap: the largest result or state a job of a type may store (its definition's
--   max_result_bytes, else 1 MiB), for complete_job(s) and continue_job.
-- * _lease_check_worker, _lease_check_batch: input checks shared by claim/heartbeat and by the
--   batch writes.
-- * _lease_batch_values: a batch write's jobs as rows, with what the size and nesting rules
--   need of each one's JSON value (complete_jobs' results, continue_jobs' states).
-- * _lease_batch_left: the answer for the jobs such a write left unwritten: its value refused
--   (the batch still owns the job), else lease_lost with the reason.
-- (Free text a worker reports is cut by pgrun._clip, util/_limits.sql.)
--
-- The lease check every lifecycle write makes is: id = job_id AND lease_token = lease_token
-- AND lease_expires_at > pgrun.now(). "status = 'running'" is part of it without being
-- spelled out: jobs_lease_check makes (status = 'running') = (lease_expires_at IS NOT NULL)
-- (a succeeded job keeps its token, never its expiry). Spelled out, it lets the planner
-- match the partial index over running jobs (jobs_lease_idx), and with statistics taken
-- while few jobs ran it then walks every running job instead of one primary-key lookup.
-- tests_sql/jobs/lifecycle/test_lease_check_invariant.sql pins the constraint.
--
-- Locks: none (read-only, or pure). Errors: job.lease_lost (RQ004); job.invalid_worker_id,
-- job.invalid_lease_seconds, job.invalid_batch (RQ003).

-- Why the pair (job_id, lease_token) does not own a live lease now. The checks run in
-- the order the lifecycle writes apply them, so when a write found nothing to update and the
-- first three pass, the lease can only have expired.
--
-- No oracle: the precise reason says whether a job id exists and what its status is, so it
-- goes only to a caller that held the job (the token is the job's current one, the one a
-- succeeded job keeps, or one of its finished attempts' tokens, which their ending events
-- record) or to an admin. Anyone else gets 'not_held': this token holds no lease on that job
-- id, and nothing more.
CREATE OR REPLACE FUNCTION pgrun._lease_lost_reason(
    p_job_id uuid,
    p_lease_token uuid
)
RETURNS text
LANGUAGE plpgsql
STABLE
AS $$
DECLARE
    v_reason text;
    v_held boolean;
BEGIN
    SELECT
        CASE
            WHEN j.id IS NULL THEN 'unknown_job'
            WHEN j.status <> 'running' THEN 'not_running'
            WHEN j.lease_token IS DISTINCT FROM p_lease_token THEN 'token_mismatch'
            ELSE 'lease_expired'
        END,
        coalesce(j.lease_token = p_lease_token, FALSE)
    INTO v_reason, v_held
    FROM (SELECT p_job_id AS id) AS k
    LEFT JOIN pgrun.jobs AS j ON j.id = k.id;

    IF v_held
        OR pgrun._caller_is_admin()
        OR EXISTS (
            SELECT FROM pgrun.job_events AS e
            WHERE e.job_id = p_job_id AND e.lease_token = p_lease_token
        ) THEN
        RETURN v_reason;
    END IF;
    RETURN 'not_held';
END;
$$;

REVOKE EXECUTE ON FUNCTION pgrun._lease_lost_reason(uuid, uuid) FROM public;

COMMENT ON FUNCTION pgrun._lease_lost_reason(uuid, uuid) IS
'Private: why (job_id, lease_token) holds no live lease: unknown_job, not_running, token_mismatch, '
'lease_expired; not_held for a caller that never held the job and is not an admin.';

-- Raise job.lease_lost for one job. p_reason is what the write itself observed; when NULL
-- it is looked up now (_lease_lost_reason: 'not_held' unless the caller held the job or is
-- an admin, and then the DETAIL says nothing about the job either).
CREATE OR REPLACE FUNCTION pgrun._lease_raise_lost(
    p_job_id uuid,
    p_lease_token uuid,
    p_reason text DEFAULT NULL
)
RETURNS void
LANGUAGE plpgsql
STABLE
AS $$
DECLARE
    v_now timestamptz := pgrun.now();
    v_reason text := coalesce(p_reason, pgrun._lease_lost_reason(p_job_id, p_lease_token));
    v_status text;
    v_expires timestamptz;
BEGIN
    SELECT j.status, j.lease_expires_at INTO v_status, v_expires
    FROM pgrun.jobs AS j
    WHERE j.id = p_job_id AND v_reason <> 'not_held';

    PERFORM pgrun._raise(
        'job.lease_lost',
        format('job %s: ', p_job_id) || CASE v_reason
            WHEN 'not_held' THEN 'this lease token holds no lease on it'
            WHEN 'unknown_job' THEN 'unknown job (no such job id)'
            WHEN 'not_running' THEN format('not running (status %s)', coalesce(v_status, 'gone'))
            WHEN 'token_mismatch' THEN 'lease token mismatch (the job was claimed again under another token)'
            ELSE format('lease expired at %s (now %s); there is no grace period', v_expires, v_now)
        END,
        'This worker no longer owns the job: stop working on it and do not write to it '
            'again. The reaper or the new owner decides what happens next.'
    );
END;
$$;

REVOKE EXECUTE ON FUNCTION pgrun._lease_raise_lost(uuid, uuid, text) FROM public;

COMMENT ON FUNCTION pgrun._lease_raise_lost(uuid, uuid, text) IS
'Private: raises job.lease_lost (RQ004) for one job, with the reason the write observed (or looked up).';

-- The retry-or-dead decision for an attempt that did not succeed.
--
--   * not retryable                      -> dead, reason 'non_retryable'
--   * p_attempt >= p_max_attempts        -> dead, reason p_exhausted_reason
--                                           ('attempts_exhausted', or 'lease_expired' from the reaper)
--   * otherwise                          -> retry at p_now + delay, where delay is p_retry_delay
--                                           when given (no jitter), else
--       d     = least(backoff_max_seconds, backoff_base_seconds * 2^(p_attempt - 1))
--       delay = d * (1 + backoff_jitter * (2 * random() - 1))
--     so d * (1 - jitter) <= delay <= d * (1 + jitter): the first retry waits about
--     backoff_base_seconds, each later one twice as long, the cap applies before the jitter
--     (a capped delay may exceed backoff_max_seconds by the jitter fraction), and the
--     delay never exceeds 10 years whatever the definition says (an interval must stay
--     representable).
--
-- p_attempt is the attempt that just ended (1 for the first try). The callers pass the
-- budget and delay that hold for the job's current step: p_max_attempts is continue_job's
-- max_attempts for the step when it gave one (jobs.step_max_attempts), else the job's;
-- p_retry_delay is, in fail_jobs, the caller's retry_delay, else the step's
-- (jobs.step_retry_delay), and in the reaper the step's, else the reaper's own. Returns
-- retry_at (NULL when the job dies) and dead_reason (NULL when it is retried).
CREATE OR REPLACE FUNCTION pgrun._lease_retry_decision(
    p_attempt integer,
    p_max_attempts integer,
    p_retryable boolean,
    p_backoff_base_seconds double precision,
    p_backoff_max_seconds double precision,
    p_backoff_jitter double precision,
    p_retry_delay interval,
    p_now timestamptz,
    p_exhausted_reason text,
    OUT retry_at timestamptz,
    OUT dead_reason text
)
LANGUAGE plpgsql
VOLATILE
AS $$
BEGIN
    -- (PL/pgSQL rather than SQL: a SQL function returning a record is never inlined, and
    -- called per row it costs about twice as much.)
    IF NOT coalesce(p_retryable, true) THEN
        dead_reason := 'non_retryable';
    ELSIF p_attempt >= p_max_attempts THEN
        dead_reason := p_exhausted_reason;
    ELSIF p_retry_delay IS NOT NULL THEN
        retry_at := p_now + p_retry_delay;
    ELSE
        retry_at := p_now + make_interval(secs => least(
            315576000.0,
            least(
                p_backoff_max_seconds,
                p_backoff_base_seconds * power(2.0::double precision, least(greatest(p_attempt - 1, 0), 64))
            ) * (1 + p_backoff_jitter * (2 * random() - 1))
        ));
    END IF;
END;
$$;

REVOKE EXECUTE ON FUNCTION pgrun._lease_retry_decision(
    integer, integer, boolean, double precision, double precision, double precision,
    interval, timestamptz, text
) FROM public;

COMMENT ON FUNCTION pgrun._lease_retry_decision(
    integer, integer, boolean, double precision, double precision, double precision,
    interval, timestamptz, text
) IS
'Private: the retry-or-dead rule of fail_job(s) and the reaper: retry_at (the given delay, or the '
'jittered exponential backoff, at most 10 years) or dead_reason.';

-- The largest result or state, in bytes of jsonb, a job of the type may store: its
-- definition's max_result_bytes, else 1 MiB (sql/0010_limits.sql). complete_job(s) and
-- continue_job apply it; SQL without a SET clause, inlined into their statements, every
-- name schema-qualified.
CREATE OR REPLACE FUNCTION pgrun._job_result_cap(p_job_type text)
RETURNS integer
LANGUAGE sql
STABLE
PARALLEL SAFE
AS $$
    SELECT coalesce(
        (SELECT d.max_result_bytes
         FROM pgrun.job_definitions AS d
         WHERE d.job_type OPERATOR(pg_catalog.=) p_job_type),
        1048576
    )
$$;

REVOKE EXECUTE ON FUNCTION pgrun._job_result_cap(text) FROM public;

COMMENT ON FUNCTION pgrun._job_result_cap(text) IS
'Private: the largest result or state (bytes of jsonb) a job of the type may store: max_result_bytes, else 1 MiB.';

-- A batch write's jobs as rows, one per job in input order: its id, token and 1-based
-- position, and what the size and nesting rules need of its JSON value (complete_jobs'
-- result, continue_jobs' state): its size (bytes of jsonb, pg_column_size; NULL for none)
-- and whether its nesting is allowed (pgrun._json_depth_ok). SQL, inlined into both
-- statements of each batch write that reads the batch (the write, and the answer for the
-- jobs it left), so they judge a value alike. Every name is schema-qualified, as in
-- pgrun._clip.
CREATE OR REPLACE FUNCTION pgrun._lease_batch_values(
    p_job_ids uuid[], p_lease_tokens uuid[], p_values jsonb[]
)
RETURNS TABLE (id uuid, token uuid, ord bigint, value_bytes integer, value_ok boolean)
LANGUAGE sql
STABLE
AS $$
    SELECT
        i.id, i.token, i.ord, pg_catalog.pg_column_size(p_values[i.ord]),
        pgrun._json_depth_ok(p_values[i.ord])
    FROM ROWS FROM (pg_catalog.unnest(p_job_ids), pg_catalog.unnest(p_lease_tokens))
        WITH ORDINALITY AS i (id, token, ord)
$$;

REVOKE EXECUTE ON FUNCTION pgrun._lease_batch_values(uuid[], uuid[], jsonb[]) FROM public;

COMMENT ON FUNCTION pgrun._lease_batch_values(uuid[], uuid[], jsonb[]) IS
'Private: a batch write as rows (id, token, position) with each JSON value''s size and nesting verdict, for '
'complete_jobs and continue_jobs.';

-- The answer for the jobs of a batch write that it did not write (their positions are not in
-- p_written): while the batch still owns the job, its value was refused, p_too_large over
-- its type's cap or p_invalid nested too deep (judged from the same rows as the write,
-- pgrun._lease_batch_values); else its lease is lost, with the reason. complete_jobs
-- (result_too_large, result_invalid) and continue_jobs (state_too_large, state_invalid) ask
-- it only when some job was left. SQL, inlined into the caller's statement and its planner
-- settings: every lookup is by primary key.
CREATE OR REPLACE FUNCTION pgrun._lease_batch_left(
    p_job_ids uuid[],
    p_lease_tokens uuid[],
    p_values jsonb[],
    p_written bigint[],
    p_now timestamptz,
    p_too_large text,
    p_invalid text
)
RETURNS TABLE (id uuid, outcome text, lost_reason text, ord bigint)
LANGUAGE sql
STABLE
AS $$
    SELECT
        i.id,
        coalesce(t.refused, 'lease_lost'),
        CASE WHEN t.refused IS NULL THEN pgrun._lease_lost_reason(i.id, i.token) END,
        i.ord
    FROM pgrun._lease_batch_values(p_job_ids, p_lease_tokens, p_values) AS i
    LEFT JOIN LATERAL (
        SELECT c.refused
        FROM pgrun.jobs AS j
        CROSS JOIN LATERAL (
            SELECT CASE
                WHEN i.value_bytes OPERATOR(pg_catalog.>) 1024
                    AND i.value_bytes OPERATOR(pg_catalog.>) pgrun._job_result_cap(j.job_type)
                    THEN p_too_large
                WHEN NOT i.value_ok THEN p_invalid
            END AS refused
        ) AS c
        WHERE j.id OPERATOR(pg_catalog.=) i.id
          AND j.lease_token OPERATOR(pg_catalog.=) i.token
          AND j.lease_expires_at OPERATOR(pg_catalog.>) p_now
          AND c.refused IS NOT NULL
    ) AS t ON TRUE
    -- hashed: a batch of 1,000 with a few left over makes no 1,000 x 1,000 comparisons
    WHERE i.ord NOT IN (SELECT w.ord FROM pg_catalog.unnest(p_written) AS w (ord))
$$;

REVOKE EXECUTE ON FUNCTION pgrun._lease_batch_left(
    uuid[], uuid[], jsonb[], bigint[], timestamptz, text, text
) FROM public;

COMMENT ON FUNCTION pgrun._lease_batch_left(uuid[], uuid[], jsonb[], bigint[], timestamptz, text, text) IS
'Private: a batch write''s jobs it left unwritten, each with its outcome: its value refused (p_too_large, '
'p_invalid) while the batch owns it, else lease_lost with the reason. For complete_jobs and continue_jobs.';

-- worker_id and lease_seconds, as claim_jobs and heartbeat_jobs take them.
CREATE OR REPLACE FUNCTION pgrun._lease_check_worker(p_worker_id text, p_lease_seconds integer)
RETURNS void
LANGUAGE plpgsql
IMMUTABLE
AS $$
BEGIN
    IF p_worker_id IS NULL OR length(p_worker_id) > 200 OR btrim(p_worker_id) = '' THEN
        PERFORM pgrun._raise(
            'job.invalid_worker_id',
            format('worker_id %s is NULL, blank or longer than 200 characters', pgrun._shown(p_worker_id)),
            'Pass a stable, non-empty name for the worker process (e.g. host:pid).'
        );
    END IF;
    IF p_lease_seconds IS NULL OR p_lease_seconds NOT BETWEEN 1 AND 86400 THEN
        PERFORM pgrun._raise(
            'job.invalid_lease_seconds',
            format('lease_seconds %s is outside 1..86400', coalesce(p_lease_seconds::text, 'NULL')),
            'Pass the lease length in seconds (1 to 86400); renew it with heartbeat_jobs '
                'well before it runs out.'
        );
    END IF;
END;
$$;

REVOKE EXECUTE ON FUNCTION pgrun._lease_check_worker(text, integer) FROM public;

COMMENT ON FUNCTION pgrun._lease_check_worker(text, integer) IS
'Private: raises job.invalid_worker_id / job.invalid_lease_seconds (RQ003) for claim_jobs and heartbeat_jobs.';

-- The arrays of a batch write: job_ids and lease_tokens are required, one-dimensional,
-- without NULL elements or repeated job ids, at most 10000 long; every optional array in
-- p_optional_lengths (cardinalities, NULL for an array left out) matches their length.
CREATE OR REPLACE FUNCTION pgrun._lease_check_batch(
    p_job_ids uuid[],
    p_lease_tokens uuid[],
    p_optional_lengths integer[] DEFAULT '{}'
)
RETURNS void
LANGUAGE plpgsql
IMMUTABLE
AS $$
DECLARE
    v_problem text;
BEGIN
    v_problem := CASE
        WHEN p_job_ids IS NULL OR p_lease_tokens IS NULL
            THEN 'job_ids and lease_tokens must not be NULL'
        WHEN coalesce(array_ndims(p_job_ids), 1) <> 1 OR coalesce(array_ndims(p_lease_tokens), 1) <> 1
            THEN 'job_ids and lease_tokens must be one-dimensional'
        WHEN cardinality(p_job_ids) <> cardinality(p_lease_tokens)
            THEN format(
                'job_ids has %s elements but lease_tokens %s',
                cardinality(p_job_ids), cardinality(p_lease_tokens)
            )
        WHEN cardinality(p_job_ids) > 10000
            THEN format('%s jobs in one batch (at most 10000)', cardinality(p_job_ids))
        WHEN array_position(p_job_ids, NULL) IS NOT NULL OR array_position(p_lease_tokens, NULL) IS NOT NULL
            THEN 'job_ids and lease_tokens must not contain NULL'
        WHEN EXISTS (
            SELECT FROM unnest(p_optional_lengths) AS n (len)
            WHERE n.len IS NOT NULL AND n.len <> cardinality(p_job_ids)
        )
            THEN format(
                'an optional array has a length other than the %s of job_ids', cardinality(p_job_ids)
            )
        WHEN (SELECT count(DISTINCT u.id) FROM unnest(p_job_ids) AS u (id)) <> cardinality(p_job_ids)
            THEN 'a job id appears more than once'
    END;
    IF v_problem IS NOT NULL THEN
        PERFORM pgrun._raise(
            'job.invalid_batch',
            v_problem,
            'Pass parallel one-dimensional arrays, one element per job (at most 10000), '
                'each job once; optional arrays are NULL or as long as job_ids.'
        );
    END IF;
END;
$$;

REVOKE EXECUTE ON FUNCTION pgrun._lease_check_batch(uuid[], uuid[], integer[]) FROM public;

COMMENT ON FUNCTION pgrun._lease_check_batch(uuid[], uuid[], integer[]) IS
'Private: raises job.invalid_batch (RQ003) unless the arrays of a batch write are parallel, '
'one-dimensional, without NULLs or repeated ids, and at most 10000 long.';
