-- append_workflow_steps refuses finished runs, unknown runs, key clashes, unknown
-- prerequisites, cycles and malformed steps.
BEGIN;
SELECT plan(10);

-- SETUP
SELECT pgrun_test.wf_enqueue('{"organization_id": "11111111-1111-1111-1111-111111111111", "steps": [
    {"key": "a", "job_type": "t"}, {"key": "b", "job_type": "t"}]}') AS run \gset
SELECT pgrun_test.wf_enqueue('{"steps": [{"key": "a", "job_type": "t"}]}') AS done \gset
SELECT pgrun_test.wf_succeed(:'done', 'a');
SELECT pgrun_test.wf_enqueue('{"steps": [{"key": "a", "job_type": "t"}]}') AS gone \gset
SELECT * FROM pgrun.cancel_workflow_run(:'gone');

-- TEST: runs
SELECT throws_ok(format($$SELECT * FROM pgrun.append_workflow_steps(%L, 'k', '[{"key": "z", "job_type": "t"}]')$$, :'done'),
    'RQ001', 'workflow.run_finished', 'a succeeded run');
SELECT throws_ok(format($$SELECT * FROM pgrun.append_workflow_steps(%L, 'k', '[{"key": "z", "job_type": "t"}]')$$, :'gone'),
    'RQ001', 'workflow.run_finished', 'a cancelled run');
SELECT throws_ok($$SELECT * FROM pgrun.append_workflow_steps(gen_random_uuid(), 'k', '[{"key": "z", "job_type": "t"}]')$$,
    'RQ002', 'workflow.run_not_found', 'an unknown run');
SELECT throws_ok(
    format($$SELECT * FROM pgrun.append_workflow_steps(%L, 'k', '[{"key": "z", "job_type": "t"}]', '22222222-2222-2222-2222-222222222222')$$, :'run'),
    'RQ002', 'workflow.run_not_found', 'another organization''s run');
SELECT throws_ok(format($$SELECT * FROM pgrun.append_workflow_steps(%L, '', '[{"key": "z", "job_type": "t"}]')$$, :'run'),
    'RQ003', 'workflow.invalid_argument', 'an empty mutation key');

-- TEST: steps
SELECT throws_ok(format($$SELECT * FROM pgrun.append_workflow_steps(%L, 'k', '[{"key": "a", "job_type": "t"}]')$$, :'run'),
    'RQ003', 'workflow.duplicate_step_key', 'a key the run already has');
SELECT throws_ok(format($$SELECT * FROM pgrun.append_workflow_steps(%L, 'k', '[{"key": "z", "job_type": "t", "depends_on": ["nope"]}]')$$, :'run'),
    'RQ003', 'workflow.unknown_dependency', 'a prerequisite neither in the run nor in the append');
SELECT throws_ok(
    format($$SELECT * FROM pgrun.append_workflow_steps(%L, 'k', '[{"key": "y", "job_type": "t", "depends_on": ["a", "z"]}, {"key": "z", "job_type": "t", "depends_on": ["y"]}]')$$, :'run'),
    'RQ003', 'workflow.cycle_detected', 'a cycle among the new steps');
SELECT throws_ok(format($$SELECT * FROM pgrun.append_workflow_steps(%L, 'k', '[{"key": "z"}]')$$, :'run'),
    'RQ003', 'workflow.missing_job_type', 'a malformed step');
SELECT is((SELECT count(*) FROM pgrun.workflow_steps WHERE run_id = :'run'), 2::bigint, 'nothing was appended');

SELECT * FROM finish();
ROLLBACK;
