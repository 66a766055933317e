-- A job step's organization_id, delay and run_at are validated like the rest of the step:
-- workflow.invalid_step with a DETAIL naming the step and the key, nothing stored. Values at
-- the edges of the time-argument rule are accepted.
BEGIN;
SELECT plan(27);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
CREATE FUNCTION pg_temp.step(p_extra jsonb) RETURNS text LANGUAGE sql AS $$
    SELECT format(
        'SELECT * FROM pgrun.enqueue_workflow(%L)',
        jsonb_build_object('steps', jsonb_build_array(
            '{"key": "a", "job_type": "t.a"}'::jsonb,
            '{"key": "b", "job_type": "t.b", "depends_on": ["a"]}'::jsonb || p_extra
        ))
    )
$$;
SELECT pgrun_test.fingerprint() AS before \gset

-- TEST: organization_id
SELECT throws_ok(pg_temp.step('{"organization_id": 42}'), 'RQ003', 'workflow.invalid_step', 'organization_id a number');
SELECT throws_ok(pg_temp.step('{"organization_id": "not-a-uuid"}'), 'RQ003', 'workflow.invalid_step', 'organization_id not a uuid');
SELECT throws_ok(pg_temp.step('{"organization_id": "00000000-0000-0000-0000-000000000000"}'), 'RQ003', 'workflow.invalid_step', 'the nil uuid');
SELECT is(
    pgrun_test.error_of(pg_temp.step(jsonb_build_object('organization_id', repeat('a', 5000)))),
    'RQ003 workflow.invalid_step: step 2 (b): organization_id "' || repeat('a', 99) || ' is not a usable uuid',
    'the DETAIL names the step, its key and the field, and clips a long value'
);

-- TEST: delay
SELECT throws_ok(pg_temp.step('{"delay": "5 minutes"}'), 'RQ003', 'workflow.invalid_step', 'delay a string');
SELECT throws_ok(pg_temp.step('{"delay": -1}'), 'RQ003', 'workflow.invalid_step', 'a negative delay');
SELECT throws_ok(pg_temp.step('{"delay": 3155760001}'), 'RQ003', 'workflow.invalid_step', 'a delay over 100 years');
SELECT throws_ok(pg_temp.step('{"delay": 1e300}'), 'RQ003', 'workflow.invalid_step', 'a huge delay (no interval overflow)');
SELECT is(
    pgrun_test.error_of(pg_temp.step('{"delay": -0.5}')),
    'RQ003 workflow.invalid_step: step 2 (b): delay -0.5 is outside 0 seconds..100 years',
    'the DETAIL names the step and the delay'
);
SELECT is(
    pgrun_test.error_of(pg_temp.step('{"delay": [1]}')),
    'RQ003 workflow.invalid_step: step 2 (b): delay [1] is not a number of seconds',
    'a delay that is not a number'
);

-- TEST: run_at
SELECT throws_ok(pg_temp.step('{"run_at": 1893456000}'), 'RQ003', 'workflow.invalid_step', 'run_at a number');
SELECT throws_ok(pg_temp.step('{"run_at": "tomorrow-ish"}'), 'RQ003', 'workflow.invalid_step', 'run_at unreadable (never a raw 22007)');
SELECT throws_ok(pg_temp.step('{"run_at": "infinity"}'), 'RQ003', 'workflow.invalid_step', 'run_at infinity');
SELECT throws_ok(pg_temp.step('{"run_at": "2130-01-01 00:00:01+00"}'), 'RQ003', 'workflow.invalid_step', 'run_at past now + 100 years');
SELECT throws_ok(pg_temp.step('{"run_at": "0001-01-01 00:00:00+00"}'), 'RQ003', 'workflow.invalid_step', 'run_at before 0001-01-02');
SELECT throws_ok(pg_temp.step(jsonb_build_object('run_at', repeat('9', 200))), 'RQ003', 'workflow.invalid_step', 'a long run_at string');
SELECT is(
    pgrun_test.error_of(pg_temp.step('{"run_at": "2999-01-01T00:00:00Z"}')),
    'RQ003 workflow.invalid_step: step 2 (b): run_at "2999-01-01T00:00:00Z" is not a finite time between 0001-01-02 and 100 years from now',
    'the DETAIL names the step and the run_at'
);

-- TEST: not both
SELECT is(
    pgrun_test.error_of(pg_temp.step('{"delay": 5, "run_at": "2030-01-01T00:10:00Z"}')),
    'RQ003 workflow.invalid_step: step 2 (b): delay and run_at are both given; a step takes one of them',
    'delay and run_at together'
);

-- TEST: external steps make no job, so they carry none of the three
SELECT throws_ok(
    $$SELECT * FROM pgrun.enqueue_workflow('{"steps": [{"key": "g", "kind": "external", "delay": 5}]}')$$,
    'RQ003', 'workflow.external_step_with_job_template', 'an external step with a delay');
SELECT throws_ok(
    $$SELECT * FROM pgrun.enqueue_workflow('{"steps": [{"key": "g", "kind": "external", "organization_id": "22222222-2222-2222-2222-222222222222"}]}')$$,
    'RQ003', 'workflow.external_step_with_job_template', 'an external step with an organization');
SELECT throws_ok(
    $$SELECT * FROM pgrun.enqueue_workflow('{"steps": [{"key": "g", "kind": "external", "run_at": "2030-01-01T00:00:00Z"}]}')$$,
    'RQ003', 'workflow.external_step_with_job_template', 'an external step with a run_at');

-- TEST: nothing was stored by any refusal
SELECT is(pgrun_test.fingerprint(), :'before', 'no table changed');

-- TEST: the edges of the rule are accepted; null means left out
SELECT lives_ok(pg_temp.step('{"delay": 0}'), 'delay 0');
SELECT lives_ok(pg_temp.step('{"delay": 3155760000}'), 'delay of exactly 100 years');
SELECT lives_ok(pg_temp.step('{"run_at": "2130-01-01 00:00:00+00"}'), 'run_at of exactly now + 100 years');
SELECT lives_ok(pg_temp.step('{"run_at": "2001-01-01 00:00:00+00", "delay": null, "organization_id": null}'), 'a run_at in the past; nulls are left out');
SELECT is(
    (SELECT count(*) FROM pgrun.workflow_steps WHERE step_key = 'b' AND (delay IS NOT NULL OR run_at IS NOT NULL)),
    4::bigint,
    'the four accepted runs stored their step''s delay or run_at'
);

SELECT * FROM finish();
ROLLBACK;
