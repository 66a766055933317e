-- complete_external_step's refusals, each with its code.
BEGIN;
SELECT plan(10);

-- SETUP
SELECT pgrun_test.wf_enqueue('{"organization_id": "11111111-1111-1111-1111-111111111111", "steps": [
    {"key": "job", "job_type": "t"},
    {"key": "gate", "kind": "external"},
    {"key": "later", "kind": "external", "depends_on": ["job"]}
]}') AS run \gset

-- TEST: arguments and lookups
SELECT throws_ok(format($$SELECT * FROM pgrun.complete_external_step(%L, NULL)$$, :'run'),
    'RQ003', 'workflow.invalid_argument', 'a NULL step key');
SELECT throws_ok(format($$SELECT * FROM pgrun.complete_external_step(%L, 'gate', succeeded => NULL)$$, :'run'),
    'RQ003', 'workflow.invalid_argument', 'a NULL outcome');
SELECT throws_ok(
    format($$SELECT * FROM pgrun.complete_external_step(%L, 'gate', output => jsonb_build_object('x', repeat('o', 1100000)))$$, :'run'),
    'RQ003', 'workflow.payload_too_large', 'an output over 1 MiB');
SELECT throws_ok($$SELECT * FROM pgrun.complete_external_step(gen_random_uuid(), 'gate')$$,
    'RQ002', 'workflow.run_not_found', 'an unknown run');
SELECT throws_ok(
    format($$SELECT * FROM pgrun.complete_external_step(%L, 'gate', organization_id => '22222222-2222-2222-2222-222222222222')$$, :'run'),
    'RQ002', 'workflow.run_not_found', 'another organization''s run');
SELECT throws_ok(format($$SELECT * FROM pgrun.complete_external_step(%L, 'nope')$$, :'run'),
    'RQ002', 'workflow.step_not_found', 'an unknown step');
SELECT throws_ok(format($$SELECT * FROM pgrun.complete_external_step(%L, 'job')$$, :'run'),
    'RQ003', 'workflow.step_not_external', 'a job step');

-- TEST: states
SELECT throws_ok(format($$SELECT * FROM pgrun.complete_external_step(%L, 'later')$$, :'run'),
    'RQ001', 'workflow.step_not_waiting', 'a step still blocked by its prerequisites');
SELECT * FROM pgrun.complete_external_step(:'run', 'gate', organization_id => '11111111-1111-1111-1111-111111111111');
SELECT throws_ok(format($$SELECT * FROM pgrun.complete_external_step(%L, 'gate', succeeded => false)$$, :'run'),
    'RQ001', 'workflow.step_already_finished', 'a finished step closed with another outcome');
SELECT throws_ok(format($$SELECT * FROM pgrun.complete_external_step(%L, 'gate', output => '1')$$, :'run'),
    'RQ001', 'workflow.step_already_finished', 'a finished step closed with another output');

SELECT * FROM finish();
ROLLBACK;
