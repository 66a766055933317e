-- Every path that changes a run after enqueue refuses REPEATABLE READ and SERIALIZABLE up front
-- (workflow.unsupported_isolation, RQ006) and changes nothing: completing or failing a workflow
-- job, append, external completion, cancel. Plain jobs are not concerned.
BEGIN;
SET TRANSACTION ISOLATION LEVEL REPEATABLE READ;
SELECT plan(8);

-- SETUP: a run with a running job step and a waiting external step; a plain running job
SELECT pgrun_test.wf_enqueue('{"steps": [{"key": "a", "job_type": "t"}, {"key": "gate", "kind": "external"}]}') AS run \gset
SELECT job_id AS job FROM pgrun.workflow_steps WHERE run_id = :'run' AND step_key = 'a' \gset
SELECT pgrun_test.claim_job(:'job') AS token \gset
SELECT job_id AS plain, lease_token AS plain_token FROM pgrun_test.running_job() \gset
SELECT pgrun_test.fingerprint() AS before \gset

-- TEST: each path that takes the run lock
SELECT throws_ok(format('SELECT pgrun.complete_job(%L, %L)', :'job', :'token'),
    'RQ006', 'workflow.unsupported_isolation', 'complete_job of a workflow job under REPEATABLE READ');
SELECT throws_ok(format('SELECT * FROM pgrun.complete_jobs(ARRAY[%L]::uuid[], ARRAY[%L]::uuid[])', :'job', :'token'),
    'RQ006', 'workflow.unsupported_isolation', 'complete_jobs of a workflow job');
SELECT throws_ok(format('SELECT pgrun.fail_job(%L, %L, %L, %L, false)', :'job', :'token', 'boom', 'no'),
    'RQ006', 'workflow.unsupported_isolation', 'fail_job of a workflow job');
SELECT throws_ok(format($$SELECT * FROM pgrun.append_workflow_steps(%L, NULL, '[{"key": "b", "job_type": "t"}]')$$, :'run'),
    'RQ006', 'workflow.unsupported_isolation', 'append_workflow_steps');
SELECT throws_ok(format('SELECT * FROM pgrun.complete_external_step(%L, %L)', :'run', 'gate'),
    'RQ006', 'workflow.unsupported_isolation', 'complete_external_step');
SELECT throws_ok(format('SELECT * FROM pgrun.cancel_workflow_run(%L)', :'run'),
    'RQ006', 'workflow.unsupported_isolation', 'cancel_workflow_run');
SELECT is(pgrun_test.fingerprint(), :'before', 'nothing changed');

-- TEST: a plain job is not concerned
SELECT is(pgrun.complete_job(:'plain', :'plain_token'), 'succeeded', 'a plain job completes under REPEATABLE READ');

SELECT * FROM finish();
ROLLBACK;
