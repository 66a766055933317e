-- complete_jobs / complete_job: a handler finished, the job succeeded.
--
-- complete_jobs(job_ids, lease_tokens, results) finishes a batch in one statement. For
-- each job whose lease is still owned (same token, status running, lease_expires_at >
-- pgrun.now()) the job becomes 'succeeded' with its result, finished_at is set and the
-- lease's expiry is cleared; no event is written (since 0023): the job row records the
-- attempt that succeeded (total_attempts, step, worker_id, started_at, finished_at, and the
-- lease_token, which it keeps; job_attempts and get_job_history read them there). A job with
-- a pending cancel request ends 'cancelled' instead (its lease cleared, one 'cancelled' event
-- recording the attempt with outcome 'cancelled', the result dropped): the cancel wins.
--
-- A lost lease in a batch is REPORTED, not raised: its row says outcome 'lease_lost' and
-- lost_reason (unknown_job, not_running, token_mismatch, lease_expired), and nothing is
-- written for that job; the rest of the batch is committed. One stale job never fails the
-- others. complete_job is the one-job form and raises job.lease_lost instead.
--
-- Result cap: a result larger than the job type's max_result_bytes (bytes of jsonb,
-- pg_column_size; NULL = 1 MiB, pgrun._job_result_cap) is REPORTED the same way: outcome
-- 'result_too_large', lost_reason NULL, nothing written for that job (it keeps running
-- under its lease, so the worker can fail it), the rest of the batch committed.
-- complete_job raises job.result_too_large (RQ003) instead. The cap is looked up only for
-- a result over 1 KiB (the smallest cap a type may set), so small results cost nothing.
-- A result nested more than 100 levels (pgrun._json_depth_ok, util/_limits.sql: no client
-- could decode it) is refused the same way: outcome 'result_invalid', lost_reason NULL,
-- nothing written, the job still runs; complete_job raises job.invalid_result (RQ003). A
-- result both too large and too deep is reported result_too_large. Small results skip the
-- nesting walk (the helper's size guard).
--
-- Locks: the batch's owned job rows, in id order: one UPDATE joins the input, sorted by id,
-- to jobs by primary key (a nested loop, so rows are updated, hence locked, in that order).
-- A write to the job that commits while the UPDATE waits for its row (heartbeat, progress,
-- cancel request) is seen: PostgreSQL re-checks the lease against the row's newest version
-- and the completion reads that version (a cancel request in it wins), never mistaking it
-- for a lost lease (tests_py/test_jobs_concurrency.py). Everything the attempt's ending
-- event records (worker, token, step, start) is still on the row after the update, so no
-- statement reads the rows before it.
--
-- Workflows: when a job that finished here belongs to a workflow run, the workflow hook
-- (pgrun._workflow_finish_steps) settles its step in the same transaction. The hook is
-- called only for such jobs, so a batch without workflow jobs pays one NULL test per row.
--
-- Errors: job.lease_lost (RQ004, complete_job only); job.invalid_argument (NULL job_id or
-- lease_token), job.invalid_batch, job.result_too_large, job.invalid_result (complete_job
-- only) (RQ003).

CREATE OR REPLACE FUNCTION pgrun.complete_jobs(
    job_ids uuid[],
    lease_tokens uuid[],
    results jsonb[] DEFAULT NULL
)
RETURNS TABLE (job_id uuid, outcome text, lost_reason text)
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
    v_ids uuid[];
    v_outcomes text[];
    v_lost_reasons text[];
    v_ords bigint[];
    v_workflow_jobs uuid[];
BEGIN
    PERFORM pgrun._lease_check_batch(
        complete_jobs.job_ids, complete_jobs.lease_tokens, ARRAY[cardinality(complete_jobs.results)]
    );

    WITH input AS (
        SELECT i.id, i.token, i.ord, i.value_bytes AS result_bytes, i.value_ok AS result_ok
        FROM pgrun._lease_batch_values(
            complete_jobs.job_ids, complete_jobs.lease_tokens, complete_jobs.results
        ) AS i
    ),

    finished AS (
        UPDATE pgrun.jobs AS j
        SET status = CASE WHEN j.cancel_requested_at IS NULL THEN 'succeeded' ELSE 'cancelled' END,
            result = CASE WHEN j.cancel_requested_at IS NULL THEN complete_jobs.results[o.ord] END,
            -- a succeeded job keeps the token: with the rest of the row it records the attempt
            lease_token = CASE WHEN j.cancel_requested_at IS NULL THEN j.lease_token END,
            lease_expires_at = NULL,
            finished_at = v_now,
            updated_at = v_now
        FROM (SELECT i.id, i.token, i.ord, i.result_bytes, i.result_ok FROM input AS i ORDER BY i.id) AS o
        WHERE j.id = o.id
          AND j.lease_token = o.token
          AND j.lease_expires_at > v_now
          -- the result cap: no result, or one within the smallest cap a type may set, needs
          -- no lookup; a result nested too deep is refused; a cancelled job drops its result,
          -- so its size and depth do not matter. One OR group: the depth test as a qual of
          -- its own made the planner drive the join from a scan of all jobs (5x slower on a
          -- batch of 100, and a full scan on a big table with stale statistics).
          AND (
              j.cancel_requested_at IS NOT NULL
              OR o.result_ok AND (
                  o.result_bytes IS NULL OR o.result_bytes <= 1024
                  OR o.result_bytes <= pgrun._job_result_cap(j.job_type)
              )
          )
        RETURNING
            j.id, j.status, j.workflow_run_id, j.total_attempts, j.step, j.worker_id, o.token AS lease_token,
            j.started_at, j.cancel_reason, o.ord
    ),

    events AS (
        INSERT INTO pgrun.job_events (
            job_id, event, from_status, to_status, attempt, worker_id, detail, created_at,
            outcome, step, lease_token, started_at
        )
        SELECT
            f.id, f.status, 'running', f.status, f.total_attempts, f.worker_id,
            jsonb_build_object('reason', f.cancel_reason),
            v_now, f.status, f.step, f.lease_token, f.started_at
        FROM finished AS f
        -- only a cancelled ending: a succeeded job's row records its attempt (0023)
        WHERE f.status = 'cancelled'
    )

    -- The jobs that finished. The others (a lease lost, a result refused) are looked at in a
    -- statement of their own, only when there are some: in this one, that path's plan was set
    -- up by every call (~35 us of completing one job).
    SELECT
        array_agg(f.id ORDER BY f.ord),
        array_agg(f.status ORDER BY f.ord),
        array_agg(f.ord ORDER BY f.ord),
        array_agg(f.id ORDER BY f.ord) FILTER (WHERE f.workflow_run_id IS NOT NULL)
    INTO v_ids, v_outcomes, v_ords, v_workflow_jobs
    FROM finished AS f;

    -- A job of the batch that did not finish: its lease is lost (lost_reason says why), or
    -- the batch still owns it and its result was over its cap or nested too deep (a job the
    -- batch owns with a cancel request finished above, as cancelled: so a request that came
    -- after the UPDATE does not turn a refused result into a lost lease here).
    IF coalesce(cardinality(v_ids), 0) < cardinality(complete_jobs.job_ids) THEN
        SELECT
            coalesce(v_ids, '{}') || array_agg(u.id ORDER BY u.ord),
            coalesce(v_outcomes, '{}') || array_agg(u.outcome ORDER BY u.ord),
            array_fill(NULL::text, ARRAY[coalesce(cardinality(v_ids), 0)])
                || array_agg(u.lost_reason ORDER BY u.ord),
            coalesce(v_ords, '{}') || array_agg(u.ord ORDER BY u.ord)
        INTO v_ids, v_outcomes, v_lost_reasons, v_ords
        FROM pgrun._lease_batch_left(
            complete_jobs.job_ids, complete_jobs.lease_tokens, complete_jobs.results, v_ords, v_now,
            'result_too_large', 'result_invalid'
        ) AS u;
    END IF;

    -- Workflow steps of the jobs that just finished: settle them and release dependents.
    IF v_workflow_jobs IS NOT NULL THEN
        PERFORM pgrun._workflow_finish_steps(v_workflow_jobs);
    END IF;

    RETURN QUERY
    SELECT r.id, r.outcome, r.lost_reason
    FROM unnest(v_ids, v_outcomes, v_lost_reasons, v_ords) AS r (id, outcome, lost_reason, ord)
    ORDER BY r.ord;
END;
$$;

COMMENT ON FUNCTION pgrun.complete_jobs(uuid[], uuid[], jsonb[]) IS
'Complete a batch of running jobs in one statement: parallel arrays job_ids, lease_tokens and optional '
'results (NULL, or one JSON value or NULL per job). Each job whose lease is still owned becomes succeeded '
'with its result and its attempt ends, recorded on the job row (it keeps its lease_token; no event); '
'when a cancel was requested it becomes cancelled instead, without the result, and one cancelled event '
'records the attempt. Returns one row per input job in input order: outcome succeeded, cancelled, '
'lease_lost, result_too_large or result_invalid; for lease_lost, lost_reason is unknown_job, not_running, token_mismatch or lease_expired (not_held for a '
'caller that never held the job and is not an admin) and '
'nothing was written for that job. result_too_large: the result is over the type''s max_result_bytes '
'(bytes of jsonb; default 1 MiB), nothing was written and the job still runs; result_invalid: the same '
'for a result nested more than 100 levels (arrays/objects). None fails the rest of the batch. '
'Errors: job.invalid_batch (RQ003).';

CREATE OR REPLACE FUNCTION pgrun.complete_job(job_id uuid, lease_token uuid, result jsonb DEFAULT NULL)
RETURNS text
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_outcome text;
    v_lost_reason text;
BEGIN
    IF complete_job.job_id IS NULL OR complete_job.lease_token IS NULL THEN
        PERFORM pgrun._raise(
            'job.invalid_argument',
            'job_id and lease_token must not be NULL',
            'Pass the job_id and lease_token claim_jobs returned.'
        );
    END IF;

    SELECT c.outcome, c.lost_reason INTO v_outcome, v_lost_reason
    FROM pgrun.complete_jobs(
        ARRAY[complete_job.job_id], ARRAY[complete_job.lease_token], ARRAY[complete_job.result]
    ) AS c;

    IF v_outcome = 'lease_lost' THEN
        PERFORM pgrun._lease_raise_lost(complete_job.job_id, complete_job.lease_token, v_lost_reason);
    END IF;
    IF v_outcome = 'result_invalid' THEN
        PERFORM pgrun._raise(
            'job.invalid_result',
            'result is nested more than 100 levels deep (arrays and objects)',
            'Flatten the result: pgrun stores JSON nested at most 100 levels. The job still runs: fail '
                'it or complete it with another result.'
        );
    END IF;
    IF v_outcome = 'result_too_large' THEN
        PERFORM pgrun._raise(
            'job.result_too_large',
            (
                SELECT format(
                    'result is %s bytes of jsonb; the limit for job type %s is %s',
                    pg_column_size(complete_job.result), j.job_type, pgrun._job_result_cap(j.job_type)
                )
                FROM pgrun.jobs AS j
                WHERE j.id = complete_job.job_id
            ),
            'Store large data elsewhere and return a reference, or raise the type''s '
                'max_result_bytes (upsert_job_definition, at most 16 MiB). The job still runs: fail it '
                'or complete it with a smaller result.'
        );
    END IF;
    RETURN v_outcome;
END;
$$;

COMMENT ON FUNCTION pgrun.complete_job(uuid, uuid, jsonb) IS
'Complete one running job under its lease: it becomes succeeded with result (any JSON value, or NULL), '
'its attempt ends with outcome succeeded, recorded on the job row (no event). If a cancel was requested '
'meanwhile the job ends cancelled instead (the result is dropped; one cancelled event). Returns the outcome: succeeded or '
'cancelled. result: at most the type''s max_result_bytes of jsonb (default 1 MiB), nested at most 100 '
'levels. Errors: job.lease_lost (RQ004: unknown job, token mismatch, not running or lease expired; nothing '
'is written), job.invalid_argument, job.result_too_large, job.invalid_result (RQ003; nothing is written).';
