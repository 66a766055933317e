-- continue_job without a live lease raises job.lease_lost and changes nothing.
BEGIN;
SELECT plan(5);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT job_id AS job, lease_token AS token FROM pgrun_test.running_job(p_lease_seconds => 30) \gset
SELECT pgrun_test.job_fingerprint(:'job') AS before \gset

-- TEST: a wrong token
SELECT throws_ok(
    format('SELECT * FROM pgrun.continue_job(%L, %L, ''next'')', :'job', gen_random_uuid()),
    'RQ004', 'job.lease_lost', 'a wrong token raises job.lease_lost'
);

-- TEST: expired
SELECT pgrun_test.freeze_time('2030-01-01 00:00:30+00');
SELECT throws_ok(
    format('SELECT * FROM pgrun.continue_job(%L, %L, ''next'')', :'job', :'token'),
    'RQ004', 'job.lease_lost', 'an expired lease raises job.lease_lost'
);
SELECT matches(
    pgrun_test.error_detail(format('SELECT * FROM pgrun.continue_job(%L, %L, ''next'')', :'job', :'token')),
    'lease expired at',
    'the DETAIL says the lease expired'
);
SELECT is(pgrun_test.job_fingerprint(:'job'), :'before', 'no step, state, attempt or event was written');

-- TEST: unknown job
SELECT throws_ok(
    format('SELECT * FROM pgrun.continue_job(%L, %L, ''next'')', gen_random_uuid(), gen_random_uuid()),
    'RQ004', 'job.lease_lost', 'an unknown job raises job.lease_lost'
);

SELECT * FROM finish();
ROLLBACK;
