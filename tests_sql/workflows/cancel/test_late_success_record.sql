-- The hook itself guarantees that a cancelled run releases nothing, whatever the job's
-- outcome: here a job of a cancelled run succeeds (its cancel request was withdrawn by
-- hand, so complete_job records a success); the job keeps its result, the step stays
-- cancelled and its dependent gets no job.
BEGIN;
SELECT plan(3);

-- SETUP
SELECT pgrun_test.wf_enqueue('{"steps": [
    {"key": "a", "job_type": "t"},
    {"key": "b", "job_type": "t"},
    {"key": "c", "job_type": "t", "depends_on": ["b"]}
]}') AS run \gset
SELECT pgrun_test.wf_succeed(:'run', 'a', '{"a": 1}');
SELECT pgrun_test.wf_start(:'run', 'b') AS token_b \gset
SELECT * FROM pgrun.cancel_workflow_run(:'run');
-- the cancel request is withdrawn behind pgrun's back, so the worker's write succeeds
UPDATE pgrun.jobs SET cancel_requested_at = NULL, cancel_reason = NULL WHERE id = pgrun_test.wf_job(:'run', 'b');

-- TEST: the late success
SELECT is(pgrun.complete_job(pgrun_test.wf_job(:'run', 'b'), :'token_b', '{"b": 2}'), 'succeeded',
    'the job records its success');
SELECT is(pgrun_test.wf_statuses(:'run'), 'a:succeeded,b:cancelled,c:cancelled', 'the step stays cancelled');
SELECT is((SELECT count(*) FROM pgrun.jobs WHERE workflow_run_id = :'run'), 2::bigint, 'c got no job');

SELECT * FROM finish();
ROLLBACK;
