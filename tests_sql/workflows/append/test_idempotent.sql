-- A keyed append is idempotent: the same steps in another order return the first
-- mutation, also after the run finished; different steps under the key conflict.
BEGIN;
SELECT plan(8);

-- SETUP
SELECT pgrun_test.wf_enqueue('{"steps": [{"key": "a", "job_type": "t"}]}') AS run \gset
SELECT mutation_id AS m1 FROM pgrun.append_workflow_steps(:'run', 'more', '[
    {"key": "b", "job_type": "t", "depends_on": ["a"]},
    {"key": "c", "job_type": "t", "payload": {"p": 1}, "depends_on": ["a", "b"]}]') \gset

-- TEST: the same request again
SELECT results_eq(
    format($$SELECT mutation_id, created, step_keys FROM pgrun.append_workflow_steps(%L, 'more', '[
        {"key": "c", "job_type": "t", "payload": {"p": 1}, "depends_on": ["b", {"step": "a", "release_mode": "on_success"}]},
        {"key": "b", "job_type": "t", "depends_on": ["a"]}]')$$, :'run'),
    format($$VALUES (%L::uuid, false, '{b,c}'::text[])$$, :'m1'),
    'the same steps in another order return the first mutation'
);
SELECT is((SELECT count(*) FROM pgrun.workflow_steps WHERE run_id = :'run'), 3::bigint, 'nothing was added twice');
SELECT is((SELECT count(*) FROM pgrun.workflow_run_mutations WHERE run_id = :'run'), 1::bigint, 'one mutation recorded');

-- TEST: a different request under the key
SELECT throws_ok(
    format($$SELECT * FROM pgrun.append_workflow_steps(%L, 'more', '[
        {"key": "b", "job_type": "t", "depends_on": ["a"]},
        {"key": "c", "job_type": "t", "payload": {"p": 2}, "depends_on": ["a", "b"]}]')$$, :'run'),
    'RQ001', 'workflow.append_conflicting_retry', 'a changed payload under the same key'
);

-- TEST: after the run finished, the retry still answers
SELECT pgrun_test.wf_succeed(:'run', 'a');
SELECT pgrun_test.wf_succeed(:'run', 'b');
SELECT pgrun_test.wf_succeed(:'run', 'c');
SELECT is(pgrun_test.wf_run_status(:'run'), 'succeeded', 'the run finished');
SELECT results_eq(
    format($$SELECT mutation_id, created, run_status FROM pgrun.append_workflow_steps(%L, 'more', '[
        {"key": "b", "job_type": "t", "depends_on": ["a"]},
        {"key": "c", "job_type": "t", "payload": {"p": 1}, "depends_on": ["a", "b"]}]')$$, :'run'),
    format($$VALUES (%L::uuid, false, 'succeeded')$$, :'m1'),
    'an identical retry after the run finished returns the mutation'
);

-- TEST: unkeyed appends append every time
SELECT pgrun_test.wf_enqueue('{"steps": [{"key": "a", "job_type": "t"}]}') AS run2 \gset
SELECT * FROM pgrun.append_workflow_steps(:'run2', NULL, '[{"key": "x", "job_type": "t"}]');
SELECT throws_ok(
    format($$SELECT * FROM pgrun.append_workflow_steps(%L, NULL, '[{"key": "x", "job_type": "t"}]')$$, :'run2'),
    'RQ003', 'workflow.duplicate_step_key', 'an unkeyed repeat is a new append (and its key is taken)'
);
SELECT is((SELECT count(*) FROM pgrun.workflow_run_mutations WHERE run_id = :'run2' AND mutation_key IS NULL), 1::bigint,
    'the unkeyed append is recorded');

SELECT * FROM finish();
ROLLBACK;
