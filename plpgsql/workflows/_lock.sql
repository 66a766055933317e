-- The workflow lock protocol: the run's own workflow_runs row, locked by every path that
-- changes a run's steps after enqueue, through pgrun._workflow_lock_runs. Row locks need
-- UPDATE on the table, which only pgrun's owner has, so no client can take them (an
-- advisory lock on a computable key could be held by anyone who may connect and stall
-- every release of the run; docs/security.md).
--
--   * cancel_workflow_run locks the run's unfinished job rows in id order FIRST, then
--     the run row FOR UPDATE (mode 'exclusive').
--   * the release path of job completion (pgrun._workflow_finish_steps, called by the job
--     functions while they hold the finished job rows) takes the run row FOR KEY SHARE and
--     waits for it (mode 'shared'), with lock_timeout capped at 5 s for that wait: a stricter
--     (shorter, non-zero) caller value is kept, an unlimited or longer one is capped, and
--     the caller's value is restored as soon as the lock is held. A timeout (55P03), or a
--     shorter statement_timeout firing during that wait (57014), surfaces as
--     workflow.release_conflict.
--   * append_workflow_steps and complete_external_step take FOR KEY SHARE without waiting
--     (mode 'try_shared', NOWAIT): workflow.release_conflict when a cancel holds the row.
-- FOR KEY SHARE conflicts with FOR UPDATE only, so the shared holders never block one
-- another (nor foreign-key checks of rows that reference the run), and FOR UPDATE waits
-- for every one of them: the two modes are a shared/exclusive lock per run.
-- Why this cannot deadlock: a completion holds its job row before it asks for the shared
-- lock, and cancel asks for the exclusive lock only after it holds every unfinished job
-- row of the run, so a cancel holding the exclusive lock never waits for a completion's
-- row and a completion waiting for the shared lock holds no row the cancel wants (cancel
-- re-checks for job rows created while it waited; see plpgsql/workflows/cancel.sql).
-- After the shared lock every path locks the workflow_runs rows again, FOR NO KEY UPDATE
-- (id order; compatible with the KEY SHARE others hold, so the upgrade never deadlocks):
-- releases of one run are serialized by that, and releases of different runs proceed in
-- parallel. A lock taken inside a subtransaction that rolls back is given up with it.
--
-- Several runs are locked in run id order.
--
-- Every path runs under READ COMMITTED: another isolation level is refused before any lock
-- (workflow.unsupported_isolation), since the protocol re-reads what the transactions it
-- waited for wrote.
--
-- Errors: workflow.release_conflict (RQ001), workflow.unsupported_isolation (RQ006).

-- Lock the workflow_runs rows of p_run_ids in run id order.
--   p_mode 'exclusive'  : FOR UPDATE, waiting under the caller's own lock_timeout (cancel).
--   p_mode 'shared'     : FOR KEY SHARE, waiting with lock_timeout capped at 5 s, then
--                         restored (job completion).
--   p_mode 'try_shared' : FOR KEY SHARE NOWAIT (append, external completion).
-- A run id without a row locks nothing.
CREATE OR REPLACE FUNCTION pgrun._workflow_lock_runs(p_run_ids uuid[], p_mode text)
RETURNS void
LANGUAGE plpgsql
VOLATILE
AS $$
DECLARE
    v_previous text;
BEGIN
    -- The protocol waits for rows other transactions hold and then reads what they wrote:
    -- only READ COMMITTED (and READ UNCOMMITTED, which PostgreSQL runs as it) takes a new
    -- snapshot per statement. Under REPEATABLE READ / SERIALIZABLE the same races end in a
    -- serialization failure, so they are refused up front.
    IF current_setting('transaction_isolation') NOT IN ('read committed', 'read uncommitted') THEN
        PERFORM pgrun._raise(
            'workflow.unsupported_isolation',
            format('a change to workflow run(s) %s at isolation level %s',
                pgrun._clip(pg_catalog.array_to_string(p_run_ids, ', '), 200),
                current_setting('transaction_isolation')),
            'Finish workflow jobs, append, complete external steps and cancel runs in a READ COMMITTED '
                'transaction (the default).'
        );
    END IF;
    IF p_mode = 'try_shared' THEN
        BEGIN
            PERFORM
            FROM pgrun.workflow_runs AS r
            WHERE r.id = ANY (p_run_ids)
            ORDER BY r.id
            FOR KEY SHARE OF r NOWAIT;
        EXCEPTION WHEN lock_not_available THEN
            PERFORM pgrun._raise(
                'workflow.release_conflict',
                format('workflow run %s is being cancelled by another transaction',
                    pg_catalog.array_to_string(p_run_ids, ', ')),
                'Retry the call; if the run was cancelled, the retry reports that.'
            );
        END;
    ELSIF p_mode = 'shared' THEN
        v_previous := pgrun._cap_lock_timeout('5s');
        BEGIN
            PERFORM
            FROM pgrun.workflow_runs AS r
            WHERE r.id = ANY (p_run_ids)
            ORDER BY r.id
            FOR KEY SHARE OF r;
        EXCEPTION WHEN lock_not_available OR query_canceled THEN
            PERFORM pgrun._raise(
                'workflow.release_conflict',
                format(
                    'timed out (%s) waiting for workflow run %s, which another transaction is cancelling',
                    SQLSTATE, pg_catalog.array_to_string(p_run_ids, ', ')
                ),
                'Roll back and retry the whole transaction (the job''s terminal write included).'
            );
        END;
        PERFORM set_config('lock_timeout', v_previous, true);
    ELSIF p_mode = 'exclusive' THEN
        PERFORM
        FROM pgrun.workflow_runs AS r
        WHERE r.id = ANY (p_run_ids)
        ORDER BY r.id
        FOR UPDATE OF r;
    ELSE
        PERFORM pgrun._raise(
            'workflow.internal_error',
            format('unknown lock mode %L', p_mode),
            'This is a bug in pgrun; please report it.'
        );
    END IF;
END;
$$;

REVOKE EXECUTE ON FUNCTION pgrun._workflow_lock_runs(uuid[], text) FROM public;

COMMENT ON FUNCTION pgrun._workflow_lock_runs(uuid[], text) IS
'Private: lock workflow runs by their rows (exclusive FOR UPDATE, shared FOR KEY SHARE with a 5 s lock_timeout cap, or try_shared NOWAIT).';
