-- A job that finishes after its run was cancelled records its own outcome, but its step
-- stays cancelled and nothing is released; external steps of a cancelled run are closed.
BEGIN;
SELECT plan(7);

-- SETUP
SELECT pgrun_test.wf_enqueue('{"steps": [
    {"key": "a", "job_type": "t"},
    {"key": "b", "job_type": "t"},
    {"key": "next", "job_type": "t", "depends_on": [{"step": "a", "release_mode": "on_terminal"}]},
    {"key": "gate", "kind": "external"}
]}') AS run \gset
SELECT pgrun_test.wf_start(:'run', 'a') AS token_a \gset
SELECT pgrun_test.wf_start(:'run', 'b') AS token_b \gset
SELECT * FROM pgrun.cancel_workflow_run(:'run');

-- TEST: completion after the cancel
SELECT is(pgrun.complete_job(pgrun_test.wf_job(:'run', 'a'), :'token_a', '{"late": true}'), 'cancelled',
    'the worker''s write ends the job cancelled (the cancel request wins)');
SELECT is((SELECT status FROM pgrun.jobs WHERE id = pgrun_test.wf_job(:'run', 'b')), 'running', 'b still runs');
-- b's worker ignores the heartbeat and fails it for good
SELECT is((SELECT outcome FROM pgrun.fail_job(pgrun_test.wf_job(:'run', 'b'), :'token_b', 'x', 'y', retryable => false)),
    'cancelled', 'a failure after the cancel ends the job cancelled too');

-- TEST: nothing moved
SELECT is(pgrun_test.wf_statuses(:'run'), 'a:cancelled,b:cancelled,gate:cancelled,next:cancelled', 'steps stay cancelled');
SELECT is((SELECT count(*) FROM pgrun.jobs WHERE workflow_run_id = :'run'), 2::bigint, 'no job was released');
SELECT is(pgrun_test.wf_run_status(:'run'), 'cancelled', 'the run stays cancelled');

-- TEST: the external gate
SELECT throws_ok(format($$SELECT * FROM pgrun.complete_external_step(%L, 'gate')$$, :'run'),
    'RQ001', 'workflow.step_already_finished', 'an external step of a cancelled run cannot be closed');

SELECT * FROM finish();
ROLLBACK;
