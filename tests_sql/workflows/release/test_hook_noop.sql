-- The hook ignores jobs that belong to no workflow, jobs that are not finished, and
-- steps already settled: calling it again changes nothing.
BEGIN;
SELECT plan(4);

-- SETUP
SELECT job_id AS plain, lease_token AS token FROM pgrun_test.running_job() \gset
SELECT pgrun_test.wf_enqueue('{"steps": [{"key": "a", "job_type": "t"}, {"key": "b", "job_type": "t", "depends_on": ["a"]}]}') AS run \gset

-- TEST: plain jobs
SELECT is(pgrun.complete_job(:'plain', :'token'), 'succeeded', 'a plain job completes as before');
SELECT lives_ok(
    format($$SELECT pgrun._workflow_finish_steps(ARRAY[%L::uuid, gen_random_uuid(), NULL])$$, :'plain'),
    'plain, unknown and NULL ids are ignored');

-- TEST: idempotent
SELECT pgrun_test.wf_succeed(:'run', 'a');
SELECT pgrun_test.wf_job(:'run', 'b') AS b_job \gset
SELECT pgrun._workflow_finish_steps(ARRAY[pgrun_test.wf_job(:'run', 'a'), pgrun_test.wf_job(:'run', 'b')]);
SELECT is(
    (SELECT count(*) FROM pgrun.jobs WHERE workflow_run_id = :'run'),
    2::bigint,
    'calling the hook again releases nothing twice'
);
SELECT is(pgrun_test.wf_statuses(:'run'), 'a:succeeded,b:released', 'a queued job''s step stays released');

SELECT * FROM finish();
ROLLBACK;
