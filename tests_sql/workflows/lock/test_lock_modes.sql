-- The run locks each path takes, on the run's own workflow_runs row (observed with
-- pgrowlocks in this session): cancel FOR UPDATE; job completion, append and external
-- completion FOR KEY SHARE (which the foreign keys of the run's rows take too, so one
-- session cannot tell them apart: tests_py/test_workflow_locking.py shows each of them
-- waiting for, or refused by, a cancel in another session); and no advisory lock at all
-- (any client could hold one).
BEGIN;
SELECT plan(8);

-- SETUP
CREATE FUNCTION pg_temp.run_lock_modes(p_run uuid) RETURNS text[] LANGUAGE sql AS $$
    SELECT coalesce(array_agg(DISTINCT m.mode ORDER BY m.mode), '{}')
    FROM public.pgrowlocks('pgrun.workflow_runs') AS l
    CROSS JOIN LATERAL unnest(l.modes) AS m (mode)
    WHERE l.locked_row = (SELECT r.ctid FROM pgrun.workflow_runs AS r WHERE r.id = p_run)
$$;
CREATE FUNCTION pg_temp.advisory_locks() RETURNS bigint LANGUAGE sql AS $$
    SELECT count(*) FROM pg_locks AS l WHERE l.locktype = 'advisory' AND l.pid = pg_backend_pid()
$$;
SELECT pgrun_test.wf_enqueue('{"steps": [{"key": "a", "job_type": "t"}, {"key": "gate", "kind": "external"}, {"key": "b", "job_type": "t", "depends_on": ["a"]}]}') AS run \gset
SELECT pgrun_test.wf_enqueue('{"steps": [{"key": "x", "job_type": "t"}, {"key": "gate", "kind": "external"}]}') AS run2 \gset

-- TEST: enqueue takes no lock of its own (nobody else can see the run yet): only its
-- foreign-key checks' KEY SHARE
SELECT ok(pg_temp.run_lock_modes(:'run') <@ ARRAY['For Key Share'], 'enqueue locks the run row no further than its foreign keys');

-- TEST: KEY SHARE for the release paths
SELECT pgrun_test.wf_succeed(:'run', 'a');
SELECT ok('For Key Share' = ANY (pg_temp.run_lock_modes(:'run')), 'a job completion locks the run FOR KEY SHARE');
SELECT * FROM pgrun.complete_external_step(:'run2', 'gate');
SELECT ok('For Key Share' = ANY (pg_temp.run_lock_modes(:'run2')), 'external completion locks the run FOR KEY SHARE');
SELECT pgrun_test.wf_enqueue('{"steps": [{"key": "y", "job_type": "t"}]}') AS run3 \gset
SELECT * FROM pgrun.append_workflow_steps(:'run3', 'm', '[{"key": "c", "job_type": "t"}]');
SELECT ok('For Key Share' = ANY (pg_temp.run_lock_modes(:'run3')), 'append locks the run FOR KEY SHARE');

-- TEST: FOR UPDATE for cancel
SELECT * FROM pgrun.cancel_workflow_run(:'run');
SELECT ok('For Update' = ANY (pg_temp.run_lock_modes(:'run')), 'cancel locks the run FOR UPDATE');

-- TEST: no advisory lock anywhere
SELECT is(pg_temp.advisory_locks(), 0::bigint, 'no path took an advisory lock');

-- TEST: a run without a row locks nothing and raises nothing
SELECT lives_ok($$SELECT pgrun._workflow_lock_runs(ARRAY[gen_random_uuid()], 'exclusive')$$, 'an unknown run locks nothing');

-- TEST: a bad mode is a bug, reported as such
SELECT throws_ok($$SELECT pgrun._workflow_lock_runs(ARRAY[gen_random_uuid()], 'sideways')$$,
    'RQ005', 'workflow.internal_error', 'an unknown lock mode');

SELECT * FROM finish();
ROLLBACK;
