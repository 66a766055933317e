-- A step payload or run metadata nested more than 100 levels (pgrun._json_depth_ok) is
-- refused before anything is written: workflow.invalid_step (enqueue_workflow and
-- append_workflow_steps, DETAIL naming the step), workflow.invalid_spec (metadata).
-- 100 levels are stored.
BEGIN;
SELECT plan(12);

-- SETUP: {"a": [[...]]}: the object and n arrays, n + 1 levels
SELECT ('{"a": ' || repeat('[', 100) || repeat(']', 100) || '}')::jsonb AS deep \gset
SELECT ('{"a": ' || repeat('[', 99) || repeat(']', 99) || '}')::jsonb AS edge \gset
SELECT count(*) AS runs_before FROM pgrun.workflow_runs \gset

-- TEST: enqueue_workflow, a step payload
SELECT throws_ok(
    format('SELECT * FROM pgrun.enqueue_workflow(%L::jsonb)', jsonb_build_object('steps', jsonb_build_array(
        jsonb_build_object('key', 'a', 'job_type', 't'),
        jsonb_build_object('key', 'b', 'job_type', 't', 'payload', :'deep'::jsonb)))),
    'RQ003', 'workflow.invalid_step', 'a step payload 101 levels deep'
);
SELECT is(
    pgrun_test.error_detail(format('SELECT * FROM pgrun.enqueue_workflow(%L::jsonb)', jsonb_build_object('steps', jsonb_build_array(
        jsonb_build_object('key', 'a', 'job_type', 't'),
        jsonb_build_object('key', 'b', 'job_type', 't', 'payload', :'deep'::jsonb))))),
    'step 2 (b): payload is nested more than 100 levels deep (arrays and objects)',
    'DETAIL names the step'
);
SELECT throws_ok(
    format('SELECT * FROM pgrun.enqueue_workflow(%L::jsonb)', jsonb_build_object('steps', jsonb_build_array(
        jsonb_build_object('key', 'a', 'job_type', 't', 'payload',
            ('{"a": ' || repeat('[', 5000) || repeat(']', 5000) || '}')::jsonb)))),
    'RQ003', 'workflow.invalid_step', 'a step payload 5001 levels deep'
);

-- TEST: enqueue_workflow, the metadata
SELECT throws_ok(
    format('SELECT * FROM pgrun.enqueue_workflow(%L::jsonb)', jsonb_build_object(
        'metadata', :'deep'::jsonb, 'steps', '[{"key": "a", "job_type": "t"}]'::jsonb)),
    'RQ003', 'workflow.invalid_spec', 'metadata 101 levels deep'
);
SELECT is(
    pgrun_test.error_detail(format('SELECT * FROM pgrun.enqueue_workflow(%L::jsonb)', jsonb_build_object(
        'metadata', :'deep'::jsonb, 'steps', '[{"key": "a", "job_type": "t"}]'::jsonb))),
    'metadata is nested more than 100 levels deep (arrays and objects)',
    'DETAIL says why'
);
SELECT is((SELECT count(*) FROM pgrun.workflow_runs), :runs_before::bigint, 'no run was written');

-- TEST: 100 levels are stored
SELECT run_id AS run FROM pgrun.enqueue_workflow(jsonb_build_object('metadata', :'edge'::jsonb, 'steps', jsonb_build_array(
    jsonb_build_object('key', 'a', 'job_type', 't', 'payload', :'edge'::jsonb),
    jsonb_build_object('key', 'gate', 'kind', 'external')))) \gset
SELECT is((SELECT metadata FROM pgrun.workflow_runs WHERE id = :'run'), :'edge'::jsonb, 'metadata 100 levels deep is stored');
SELECT is(
    (SELECT payload - 'dependencies' FROM pgrun.jobs WHERE id = pgrun_test.wf_job(:'run', 'a')),
    :'edge'::jsonb,
    'a step payload 100 levels deep is stored, and its root released'
);

-- TEST: append_workflow_steps
SELECT pgrun_test.fingerprint() AS before \gset
SELECT throws_ok(
    format('SELECT * FROM pgrun.append_workflow_steps(%L, NULL, %L::jsonb)', :'run', jsonb_build_array(
        jsonb_build_object('key', 'late', 'job_type', 't', 'payload', :'deep'::jsonb))),
    'RQ003', 'workflow.invalid_step', 'append: a step payload 101 levels deep'
);
SELECT is(pgrun_test.fingerprint(), :'before', 'append wrote nothing');
SELECT is(
    (SELECT cardinality(step_keys) FROM pgrun.append_workflow_steps(:'run', NULL, jsonb_build_array(
        jsonb_build_object('key', 'late', 'job_type', 't', 'payload', :'edge'::jsonb)))),
    1,
    'append: a step payload 100 levels deep is accepted'
);
SELECT is(pgrun_test.wf_status(:'run', 'late'), 'released', 'and released');

SELECT * FROM finish();
ROLLBACK;
