-- The run advisory locks each path takes (observed in pg_locks of this session): cancel
-- the exclusive form, job completion, append and external completion the shared form.
BEGIN;
SELECT plan(6);

-- SETUP
CREATE FUNCTION pg_temp.run_lock_mode(p_run uuid) RETURNS text LANGUAGE sql AS $$
    SELECT string_agg(l.mode, ',' ORDER BY l.mode)
    FROM pg_locks AS l
    WHERE l.locktype = 'advisory' AND l.pid = pg_backend_pid()
      AND ((l.classid::bigint << 32) | l.objid::bigint) = pgrun._workflow_lock_key(p_run)
$$;
SELECT pgrun_test.wf_enqueue('{"steps": [{"key": "a", "job_type": "t"}, {"key": "gate", "kind": "external"}, {"key": "b", "job_type": "t", "depends_on": ["a"]}]}') AS run \gset

-- TEST: enqueue takes none (nobody else can see the run yet)
SELECT is(pg_temp.run_lock_mode(:'run'), NULL, 'enqueue takes no run lock');

-- TEST: shared for the release paths
SELECT pgrun_test.wf_succeed(:'run', 'a');
SELECT is(pg_temp.run_lock_mode(:'run'), 'ShareLock', 'a job completion takes the shared lock');
SELECT * FROM pgrun.complete_external_step(:'run', 'gate');
SELECT * FROM pgrun.append_workflow_steps(:'run', 'm', '[{"key": "c", "job_type": "t"}]');
SELECT is(pg_temp.run_lock_mode(:'run'), 'ShareLock', 'external completion and append take the shared lock too');

-- TEST: exclusive for cancel
SELECT * FROM pgrun.cancel_workflow_run(:'run');
SELECT is(pg_temp.run_lock_mode(:'run'), 'ExclusiveLock,ShareLock', 'cancel takes the exclusive lock');

-- TEST: the key
SELECT is(pgrun._workflow_lock_key(:'run'), pgrun._workflow_lock_key(:'run'::text::uuid), 'the key is stable per run');

-- TEST: a bad mode is a bug, reported as such
SELECT throws_ok($$SELECT pgrun._workflow_lock_runs(ARRAY[gen_random_uuid()], 'sideways')$$,
    'RQ005', 'workflow.internal_error', 'an unknown lock mode');

SELECT * FROM finish();
ROLLBACK;
