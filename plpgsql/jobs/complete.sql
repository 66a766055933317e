-- complete_jobs / complete_job: a handler finished, the job succeeded.
--
-- complete_jobs(job_ids, lease_tokens, results) finishes a batch in one statement. For
-- each job whose lease is still owned (same token, status running, lease_expires_at >
-- pgrun.now()) the job becomes 'succeeded' with its result, finished_at is set, the lease
-- is cleared and one 'succeeded' event is written, which also records the attempt (outcome
-- 'succeeded', step, lease token, start; job_attempts reads it). A job with a pending
-- cancel request ends 'cancelled' instead (attempt outcome 'cancelled', event 'cancelled',
-- the result is dropped): the cancel wins.
--
-- A lost lease in a batch is REPORTED, not raised: its row says outcome 'lease_lost' and
-- lost_reason (unknown_job, not_running, token_mismatch, lease_expired), and nothing is
-- written for that job; the rest of the batch is committed. One stale job never fails the
-- others. complete_job is the one-job form and raises job.lease_lost instead.
--
-- Locks: the batch's owned job rows, in id order (FOR UPDATE), in a statement of their own;
-- the completion statement after it (a fresh snapshot, which sees each locked row's newest
-- version) finds each row again by its tuple id: no second index descent per job, and a row
-- this transaction holds cannot have been moved by anyone else. A write to the job that
-- committed while the lock waited (heartbeat, progress, cancel request) is seen, never
-- mistaken for a lost lease (tests_py/test_jobs_concurrency.py).
--
-- Workflows: when a job that finished here belongs to a workflow run, the workflow hook
-- (pgrun._workflow_jobs_finished) settles its step in the same transaction. The hook is
-- called only for such jobs, so a batch without workflow jobs pays one NULL test per row.
--
-- Errors: job.lease_lost (RQ004, complete_job only); job.invalid_argument (NULL job_id or
-- lease_token), job.invalid_batch (RQ003).

CREATE OR REPLACE FUNCTION pgrun.complete_jobs(
    job_ids uuid[],
    lease_tokens uuid[],
    results jsonb[] DEFAULT NULL
)
RETURNS TABLE (job_id uuid, outcome text, lost_reason text)
LANGUAGE plpgsql
VOLATILE
SET search_path = ''
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
    v_tids tid[];
    v_ords bigint[];
    v_ids uuid[];
    v_outcomes text[];
    v_lost_reasons text[];
    v_workflow_jobs uuid[];
BEGIN
    PERFORM pgrun._check_lease_batch(
        complete_jobs.job_ids, complete_jobs.lease_tokens, ARRAY[cardinality(complete_jobs.results)]
    );

    -- 1. Lock the jobs whose lease the caller owns, in id order, and note where each row is
    --    and its place in the input. A job another session is writing at this instant (its
    --    heartbeat, a progress report, a cancel request) is waited for; the row locked is
    --    then its newest version, checked again against the lease.
    SELECT array_agg(o.tid ORDER BY o.id), array_agg(o.ord ORDER BY o.id)
    INTO v_tids, v_ords
    FROM (
        SELECT j.ctid AS tid, j.id, i.ord
        FROM unnest(complete_jobs.job_ids, complete_jobs.lease_tokens) WITH ORDINALITY AS i (id, token, ord)
        JOIN pgrun.jobs AS j ON j.id = i.id
        WHERE j.lease_token = i.token
          AND j.lease_expires_at > v_now
        ORDER BY j.id
        FOR UPDATE OF j
    ) AS o;

    -- 2. A new statement, hence a new snapshot: every row locked above is visible as it is
    --    now (a version committed while we waited included), and is found again by its tuple
    --    id instead of a second index descent per job. Nobody else can move a row we hold.
    WITH input AS (
        SELECT i.id, i.token, i.ord
        FROM unnest(complete_jobs.job_ids, complete_jobs.lease_tokens) WITH ORDINALITY AS i (id, token, ord)
    ),

    owned AS MATERIALIZED (
        SELECT
            j.ctid AS tid, j.id, j.total_attempts, j.step, j.worker_id, j.lease_token, j.started_at,
            j.cancel_requested_at, j.cancel_reason, complete_jobs.results[l.ord] AS result, l.ord
        FROM unnest(v_tids, v_ords) AS l (tid, ord)
        JOIN pgrun.jobs AS j ON j.ctid = l.tid
    ),

    finished AS (
        UPDATE pgrun.jobs AS j
        SET status = CASE WHEN o.cancel_requested_at IS NULL THEN 'succeeded' ELSE 'cancelled' END,
            result = CASE WHEN o.cancel_requested_at IS NULL THEN o.result END,
            worker_id = NULL,
            lease_token = NULL,
            lease_expires_at = NULL,
            finished_at = v_now,
            updated_at = v_now
        FROM owned AS o
        WHERE j.ctid = o.tid
          AND j.id = o.id
        RETURNING
            j.id, j.status, j.workflow_run_id, o.total_attempts, o.step, o.worker_id, o.lease_token,
            o.started_at, o.cancel_reason, o.ord
    ),

    events AS (
        INSERT INTO pgrun.job_events (
            job_id, event, from_status, to_status, attempt, worker_id, detail, created_at,
            outcome, step, lease_token, started_at
        )
        SELECT
            f.id, f.status, 'running', f.status, f.total_attempts, f.worker_id,
            CASE WHEN f.status = 'cancelled' THEN jsonb_build_object('reason', f.cancel_reason) END,
            v_now, f.status, f.step, f.lease_token, f.started_at
        FROM finished AS f
    )

    -- No CTE-to-CTE join (their row estimates are guesses, and a nested loop over two
    -- CTEs is quadratic): finished rows come from the UPDATE, lost ones via a hashed NOT IN.
    SELECT
        array_agg(u.id ORDER BY u.ord),
        array_agg(u.outcome ORDER BY u.ord),
        array_agg(u.lost_reason ORDER BY u.ord),
        array_agg(u.id ORDER BY u.ord) FILTER (WHERE u.workflow_run_id IS NOT NULL)
    INTO v_ids, v_outcomes, v_lost_reasons, v_workflow_jobs
    FROM (
        SELECT f.id, f.status AS outcome, NULL::text AS lost_reason, f.workflow_run_id, f.ord
        FROM finished AS f
        UNION ALL
        SELECT i.id, 'lease_lost', pgrun._lease_lost_reason(i.id, i.token, v_now), NULL, i.ord
        FROM input AS i
        WHERE i.id NOT IN (SELECT f.id FROM finished AS f)
    ) AS u;

    -- Workflow steps of the jobs that just finished: settle them and release dependents.
    IF v_workflow_jobs IS NOT NULL THEN
        PERFORM pgrun._workflow_jobs_finished(v_workflow_jobs);
    END IF;

    RETURN QUERY
    SELECT r.id, r.outcome, r.lost_reason
    FROM unnest(v_ids, v_outcomes, v_lost_reasons) WITH ORDINALITY AS r (id, outcome, lost_reason, ord)
    ORDER BY r.ord;
END;
$$;

COMMENT ON FUNCTION pgrun.complete_jobs(uuid[], uuid[], jsonb[]) IS
'Complete a batch of running jobs in one statement: parallel arrays job_ids, lease_tokens and optional '
'results (NULL, or one JSON value or NULL per job). Each job whose lease is still owned becomes succeeded '
'with its result (or cancelled, without the result, when a cancel was requested), its attempt ends and '
'one event is written. Returns one row per input job in input order: outcome succeeded, cancelled or '
'lease_lost; for lease_lost, lost_reason is unknown_job, not_running, token_mismatch or lease_expired and '
'nothing was written for that job. A lost lease never fails the rest of the batch. '
'Errors: job.invalid_batch (RQ003).';

CREATE OR REPLACE FUNCTION pgrun.complete_job(job_id uuid, lease_token uuid, result jsonb DEFAULT NULL)
RETURNS text
LANGUAGE plpgsql
VOLATILE
SET search_path = ''
AS $$
DECLARE
    v_outcome text;
    v_lost_reason text;
BEGIN
    IF complete_job.job_id IS NULL OR complete_job.lease_token IS NULL THEN
        RAISE EXCEPTION 'job.invalid_argument' USING
            ERRCODE = 'RQ003',
            DETAIL = 'job_id and lease_token must not be NULL',
            HINT = 'Pass the job_id and lease_token claim_jobs returned.';
    END IF;

    SELECT c.outcome, c.lost_reason INTO v_outcome, v_lost_reason
    FROM pgrun.complete_jobs(
        ARRAY[complete_job.job_id], ARRAY[complete_job.lease_token], ARRAY[complete_job.result]
    ) AS c;

    IF v_outcome = 'lease_lost' THEN
        PERFORM pgrun._raise_lease_lost(complete_job.job_id, complete_job.lease_token, v_lost_reason);
    END IF;
    RETURN v_outcome;
END;
$$;

COMMENT ON FUNCTION pgrun.complete_job(uuid, uuid, jsonb) IS
'Complete one running job under its lease: it becomes succeeded with result (any JSON value, or NULL), '
'its attempt ends with outcome succeeded and one succeeded event is written. If a cancel was requested '
'meanwhile the job ends cancelled instead (the result is dropped). Returns the outcome: succeeded or '
'cancelled. '
'Errors: job.lease_lost (RQ004: unknown job, token mismatch, not running or lease expired; nothing is '
'written), job.invalid_argument (RQ003).';
