-- list_workflow_runs pages through runs by id, filtered by status and organization.
BEGIN;
SELECT plan(6);

-- SETUP
SELECT pgrun_test.wf_enqueue('{"steps": [{"key": "a", "job_type": "t"}]}') AS r1 \gset
SELECT pgrun_test.wf_enqueue('{"organization_id": "11111111-1111-1111-1111-111111111111", "steps": [{"key": "a", "job_type": "t"}]}') AS r2 \gset
SELECT pgrun_test.wf_enqueue('{"name": "third", "steps": [{"key": "a", "job_type": "t"}]}') AS r3 \gset
SELECT pgrun_test.wf_succeed(:'r3', 'a');

-- TEST: pages
SELECT results_eq(
    $$SELECT id FROM pgrun.list_workflow_runs(max_rows => 2)$$,
    format($$VALUES (%L::uuid), (%L::uuid)$$, :'r1', :'r2'),
    'the first page, oldest first');
SELECT results_eq(
    format($$SELECT id, name, status FROM pgrun.list_workflow_runs(after_id => %L, max_rows => 2)$$, :'r2'),
    format($$VALUES (%L::uuid, 'third', 'succeeded')$$, :'r3'),
    'the next page after the last id');

-- TEST: filters
SELECT results_eq(
    $$SELECT id FROM pgrun.list_workflow_runs(status => 'succeeded')$$,
    format($$VALUES (%L::uuid)$$, :'r3'), 'by status');
SELECT results_eq(
    $$SELECT id FROM pgrun.list_workflow_runs(organization_id => '11111111-1111-1111-1111-111111111111')$$,
    format($$VALUES (%L::uuid)$$, :'r2'), 'by organization');

-- TEST: arguments
SELECT throws_ok($$SELECT * FROM pgrun.list_workflow_runs(status => 'done')$$,
    'RQ003', 'workflow.invalid_status', 'an unknown status');
SELECT throws_ok($$SELECT * FROM pgrun.list_workflow_runs(max_rows => 0)$$,
    'RQ003', 'workflow.invalid_max_rows', 'max_rows out of range');

SELECT * FROM finish();
ROLLBACK;
