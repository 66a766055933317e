-- The workflow lock protocol: one advisory lock per run, taken by every path that
-- changes a run's steps after enqueue, through pgrun._workflow_lock_runs.
--
--   * cancel_workflow_run locks the run's unfinished job rows in id order FIRST, then
--     takes the EXCLUSIVE transaction advisory lock on the run (mode 'exclusive').
--   * the release path of job completion (pgrun._workflow_jobs_finished, called by the job
--     functions while they hold the finished job rows) takes the SHARED form and waits
--     for it (mode 'shared'), with lock_timeout capped at 5 s for that wait: a stricter
--     (shorter, non-zero) caller value is kept, an unlimited or longer one is capped, and
--     the caller's value is restored as soon as the lock is held. A timeout (55P03), or a
--     shorter statement_timeout firing during that wait (57014), surfaces as
--     workflow.release_conflict.
--   * append_workflow_steps and complete_external_step try the SHARED form without
--     waiting (mode 'try_shared'): workflow.release_conflict when a cancel holds it.
-- Why this cannot deadlock: a completion holds its job row before it asks for the shared
-- lock, and cancel asks for the exclusive lock only after it holds every unfinished job
-- row of the run, so a cancel holding the exclusive lock never waits for a completion's
-- row and a completion waiting for the shared lock holds no row the cancel wants (cancel
-- re-checks for job rows created while it waited; see plpgsql/workflows/cancel.sql).
-- After the advisory lock every path locks the workflow_runs rows (id order, FOR NO KEY
-- UPDATE): releases of one run are serialized by that row, and releases of different
-- runs proceed in parallel.
--
-- Several runs are locked in run id order. The lock key is a 64-bit hash of the run id
-- in a pgrun namespace (pgrun._workflow_lock_key); a collision with another key only
-- over-serializes unrelated work.
--
-- Errors: workflow.release_conflict (RQ001).

CREATE OR REPLACE FUNCTION pgrun._workflow_lock_key(p_run_id uuid)
RETURNS bigint
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
AS $$
    SELECT pg_catalog.hashtextextended('pgrun.workflow_run:' || p_run_id::text, 0)
$$;

REVOKE EXECUTE ON FUNCTION pgrun._workflow_lock_key(uuid) FROM public;

COMMENT ON FUNCTION pgrun._workflow_lock_key(uuid) IS
'Private: the advisory lock key of a workflow run (a 64-bit hash of its id).';

-- Cap lock_timeout (transaction-local) at 5 s and return the value it had, for the
-- caller to restore with set_config('lock_timeout', <returned>, true). A value of 0 (no
-- limit) or one above 5 s is capped; a shorter non-zero value is kept.
CREATE OR REPLACE FUNCTION pgrun._workflow_cap_lock_timeout()
RETURNS text
LANGUAGE plpgsql
VOLATILE
AS $$
DECLARE
    c_cap CONSTANT text := '5s';
    c_cap_ms CONSTANT double precision := 5000;
    v_previous text := current_setting('lock_timeout');
    v_previous_ms double precision := extract(EPOCH FROM v_previous::interval) * 1000;
BEGIN
    IF v_previous_ms = 0 OR v_previous_ms > c_cap_ms THEN
        PERFORM set_config('lock_timeout', c_cap, true);
    END IF;
    RETURN v_previous;
END;
$$;

REVOKE EXECUTE ON FUNCTION pgrun._workflow_cap_lock_timeout() FROM public;

COMMENT ON FUNCTION pgrun._workflow_cap_lock_timeout() IS
'Private: cap lock_timeout at 5 s for this transaction (a stricter value is kept); returns the previous value.';

-- Take the run advisory locks of p_run_ids in run id order.
--   p_mode 'exclusive'  : wait, under the caller's own lock_timeout (cancel).
--   p_mode 'shared'     : wait, with lock_timeout capped at 5 s, then restored (job completion).
--   p_mode 'try_shared' : do not wait (append, external completion).
CREATE OR REPLACE FUNCTION pgrun._workflow_lock_runs(p_run_ids uuid[], p_mode text)
RETURNS void
LANGUAGE plpgsql
VOLATILE
AS $$
DECLARE
    v_previous text;
    v_run_id uuid;
    v_blocked uuid;
BEGIN
    IF p_mode = 'try_shared' THEN
        FOR v_run_id IN SELECT DISTINCT u.id FROM unnest(p_run_ids) AS u (id) ORDER BY u.id LOOP
            IF NOT pg_try_advisory_xact_lock_shared(pgrun._workflow_lock_key(v_run_id)) THEN
                v_blocked := v_run_id;
                EXIT;
            END IF;
        END LOOP;
        IF v_blocked IS NOT NULL THEN
            RAISE EXCEPTION 'workflow.release_conflict' USING
                ERRCODE = 'RQ001',
                DETAIL = format('workflow run %s is being cancelled by another transaction', v_blocked),
                HINT = 'Retry the call; if the run was cancelled, the retry reports that.';
        END IF;
    ELSIF p_mode = 'shared' THEN
        v_previous := pgrun._workflow_cap_lock_timeout();
        BEGIN
            FOR v_run_id IN SELECT DISTINCT u.id FROM unnest(p_run_ids) AS u (id) ORDER BY u.id LOOP
                PERFORM pg_advisory_xact_lock_shared(pgrun._workflow_lock_key(v_run_id));
            END LOOP;
        EXCEPTION WHEN lock_not_available OR query_canceled THEN
            RAISE EXCEPTION 'workflow.release_conflict' USING
                ERRCODE = 'RQ001',
                DETAIL = format(
                    'timed out (%s) waiting for workflow run %s, which another transaction is cancelling',
                    SQLSTATE, v_run_id
                ),
                HINT = 'Roll back and retry the whole transaction (the job''s terminal write included).';
        END;
        PERFORM set_config('lock_timeout', v_previous, true);
    ELSIF p_mode = 'exclusive' THEN
        FOR v_run_id IN SELECT DISTINCT u.id FROM unnest(p_run_ids) AS u (id) ORDER BY u.id LOOP
            PERFORM pg_advisory_xact_lock(pgrun._workflow_lock_key(v_run_id));
        END LOOP;
    ELSE
        RAISE EXCEPTION 'workflow.internal_error' USING
            ERRCODE = 'RQ005',
            DETAIL = format('unknown lock mode %L', p_mode),
            HINT = 'This is a bug in pgrun; please report it.';
    END IF;
END;
$$;

REVOKE EXECUTE ON FUNCTION pgrun._workflow_lock_runs(uuid[], text) FROM public;

COMMENT ON FUNCTION pgrun._workflow_lock_runs(uuid[], text) IS
'Private: the workflow run advisory locks (exclusive, shared with a 5 s lock_timeout cap, or try_shared).';
