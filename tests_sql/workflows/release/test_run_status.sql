-- The run is running while any step is open; then failed if a step failed, was skipped
-- or was cancelled, else succeeded. It is recomputed on every terminal step.
BEGIN;
SELECT plan(11);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT pgrun_test.wf_enqueue('{"steps": [{"key": "a", "job_type": "t"}, {"key": "b", "job_type": "t", "depends_on": ["a"]}]}') AS ok \gset
SELECT pgrun_test.wf_enqueue('{"steps": [{"key": "a", "job_type": "t"}, {"key": "b", "job_type": "t", "depends_on": ["a"]}]}') AS bad \gset
SELECT pgrun_test.wf_enqueue('{"steps": [{"key": "a", "job_type": "t"}, {"key": "b", "job_type": "t", "depends_on": [{"step": "a", "release_mode": "on_terminal"}]}]}') AS cleanup \gset
SELECT pgrun_test.wf_enqueue('{"steps": [{"key": "a", "job_type": "t"}, {"key": "b", "job_type": "t"}]}') AS cancelled_job \gset

-- TEST: success
SELECT is((SELECT open_step_count FROM pgrun.workflow_runs WHERE id = :'ok'), 2, 'two open steps at first');
SELECT pgrun_test.wf_succeed(:'ok', 'a');
SELECT is(pgrun_test.wf_run_status(:'ok'), 'running', 'running while b is open');
SELECT is((SELECT open_step_count FROM pgrun.workflow_runs WHERE id = :'ok'), 1, 'one open step left');
SELECT pgrun_test.advance_time(interval '1 minute');
SELECT pgrun_test.wf_succeed(:'ok', 'b');
SELECT results_eq(
    format('SELECT status, finished_at FROM pgrun.workflow_runs WHERE id = %L', :'ok'),
    $$VALUES ('succeeded', '2030-01-01 00:01:00+00'::timestamptz)$$,
    'succeeded once every step succeeded, with finished_at'
);

-- TEST: failure through a skip
SELECT pgrun_test.wf_fail(:'bad', 'a');
SELECT is(pgrun_test.wf_statuses(:'bad'), 'a:failed,b:skipped', 'a failed and b was skipped');
SELECT is(pgrun_test.wf_run_status(:'bad'), 'failed', 'the run failed at once: nothing is open');

-- TEST: a successful cleanup does not make a failed run succeed
SELECT pgrun_test.wf_fail(:'cleanup', 'a');
SELECT is(pgrun_test.wf_run_status(:'cleanup'), 'running', 'running while the cleanup step runs');
SELECT pgrun_test.wf_succeed(:'cleanup', 'b');
SELECT is(pgrun_test.wf_run_status(:'cleanup'), 'failed', 'failed: a step failed');

-- TEST: a step whose job was cancelled (cancel_job) fails the run
SELECT pgrun.cancel_job(pgrun_test.wf_job(:'cancelled_job', 'a'), 'not needed');
SELECT is(pgrun_test.wf_statuses(:'cancelled_job'), 'a:cancelled,b:released', 'the step of the cancelled job is cancelled');
SELECT pgrun_test.wf_succeed(:'cancelled_job', 'b');
SELECT is(pgrun_test.wf_run_status(:'cancelled_job'), 'failed', 'a cancelled step makes the run failed');

-- TEST: a finished run ignores late news
SELECT is(
    (SELECT count(*) FROM pgrun.workflow_runs WHERE status = 'running' AND id IN (:'ok', :'bad', :'cleanup', :'cancelled_job')),
    0::bigint,
    'all four runs are finished'
);

SELECT * FROM finish();
ROLLBACK;
