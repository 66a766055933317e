-- A continue state nested more than 100 levels (pgrun._json_depth_ok) is job.invalid_state
-- (RQ003) and nothing is written; the lease is checked first; 100 levels are stored.
BEGIN;
SELECT plan(7);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT ('{"s": ' || repeat('[', 100) || repeat(']', 100) || '}')::jsonb AS deep \gset
SELECT ('{"s": ' || repeat('[', 99) || repeat(']', 99) || '}')::jsonb AS edge \gset
SELECT job_id AS job, lease_token AS token FROM pgrun_test.running_job() \gset
SELECT pgrun_test.job_fingerprint(:'job') AS before \gset

-- TEST: refused, nothing written
SELECT throws_ok(
    format('SELECT * FROM pgrun.continue_job(%L, %L, %L, %L::jsonb)', :'job', :'token', 'next', :'deep'),
    'RQ003', 'job.invalid_state', 'a state 101 levels deep'
);
SELECT is(
    pgrun_test.error_detail(format('SELECT * FROM pgrun.continue_job(%L, %L, %L, %L::jsonb)', :'job', :'token', 'next', :'deep')),
    'state is nested more than 100 levels deep (arrays and objects)',
    'DETAIL says why'
);
SELECT throws_ok(
    format('SELECT * FROM pgrun.continue_job(%L, %L, %L, (repeat(%L, 5000) || repeat(%L, 5000))::jsonb)',
        :'job', :'token', 'next', '[', ']'),
    'RQ003', 'job.invalid_state', 'a state 5000 levels deep'
);
SELECT is(pgrun_test.job_fingerprint(:'job'), :'before', 'nothing was written');
SELECT throws_ok(
    format('SELECT * FROM pgrun.continue_job(%L, gen_random_uuid(), %L, %L::jsonb)', :'job', 'next', :'deep'),
    'RQ004', 'job.lease_lost', 'a lost lease with a deep state is a lost lease'
);

-- TEST: 100 levels are fine
SELECT is(
    (SELECT outcome FROM pgrun.continue_job(:'job', :'token', 'next', :'edge')),
    'continued',
    'a state 100 levels deep is accepted'
);
SELECT is((SELECT state FROM pgrun.jobs WHERE id = :'job'), :'edge'::jsonb, 'and stored whole');

SELECT * FROM finish();
ROLLBACK;
