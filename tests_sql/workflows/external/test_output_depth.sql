-- An external output nested more than 100 levels (pgrun._json_depth_ok) is
-- workflow.invalid_output (RQ003) and nothing is written; 100 levels are stored.
BEGIN;
SELECT plan(5);

-- SETUP
SELECT (repeat('[', 101) || repeat(']', 101))::jsonb AS deep \gset
SELECT (repeat('[', 100) || repeat(']', 100))::jsonb AS edge \gset
SELECT pgrun_test.wf_enqueue('{"steps": [{"key": "gate", "kind": "external"}, {"key": "other", "kind": "external"}]}') AS run \gset
SELECT pgrun_test.fingerprint() AS before \gset

-- TEST: refused
SELECT throws_ok(
    format('SELECT * FROM pgrun.complete_external_step(%L, %L, output => %L::jsonb)', :'run', 'gate', :'deep'),
    'RQ003', 'workflow.invalid_output', 'an output 101 levels deep'
);
SELECT is(
    pgrun_test.error_detail(format('SELECT * FROM pgrun.complete_external_step(%L, %L, output => %L::jsonb)', :'run', 'gate', :'deep')),
    'output is nested more than 100 levels deep (arrays and objects)',
    'DETAIL says why'
);
SELECT is(pgrun_test.fingerprint(), :'before', 'nothing was written');

-- TEST: 100 levels are stored
SELECT is(
    (SELECT step_status FROM pgrun.complete_external_step(:'run', 'gate', output => :'edge')),
    'succeeded',
    'an output 100 levels deep is accepted'
);
SELECT is((SELECT output FROM pgrun.workflow_steps WHERE run_id = :'run' AND step_key = 'gate'), :'edge'::jsonb, 'and stored');

SELECT * FROM finish();
ROLLBACK;
