-- complete_job without a live lease raises job.lease_lost, says why, and changes nothing:
-- wrong token, expired (no grace period, not even at the expiry instant), not running,
-- unknown job.
BEGIN;
SELECT plan(12);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT job_id AS job, lease_token AS token FROM pgrun_test.running_job(p_lease_seconds => 30) \gset
SELECT pgrun_test.job_fingerprint(:'job') AS before \gset

-- TEST: a wrong token
SELECT throws_ok(
    format('SELECT pgrun.complete_job(%L, %L)', :'job', gen_random_uuid()),
    'RQ004', 'job.lease_lost', 'a wrong token raises job.lease_lost'
);
SELECT matches(
    pgrun_test.error_detail(format('SELECT pgrun.complete_job(%L, %L)', :'job', gen_random_uuid())),
    'lease token mismatch',
    'the DETAIL says the token does not match'
);
SELECT is(pgrun_test.job_fingerprint(:'job'), :'before', 'a wrong token changed nothing');

-- TEST: expired, at the very instant of expiry
SELECT pgrun_test.freeze_time('2030-01-01 00:00:30+00');
SELECT throws_ok(
    format('SELECT pgrun.complete_job(%L, %L)', :'job', :'token'),
    'RQ004', 'job.lease_lost', 'a lease that expires now is already lost'
);
SELECT matches(
    pgrun_test.error_detail(format('SELECT pgrun.complete_job(%L, %L)', :'job', :'token')),
    'lease expired at',
    'the DETAIL says the lease expired'
);
SELECT is(pgrun_test.job_fingerprint(:'job'), :'before', 'an expired lease changed nothing');

-- TEST: not running any more
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT job_id AS done, lease_token AS done_token FROM pgrun_test.running_job() \gset
SELECT pgrun.complete_job(:'done', :'done_token');
SELECT pgrun_test.job_fingerprint(:'done') AS done_before \gset
SELECT throws_ok(
    format('SELECT pgrun.complete_job(%L, %L)', :'done', :'done_token'),
    'RQ004', 'job.lease_lost', 'a finished job''s old lease raises job.lease_lost'
);
SELECT matches(
    pgrun_test.error_detail(format('SELECT pgrun.complete_job(%L, %L)', :'done', :'done_token')),
    'not running \(status succeeded\)',
    'the DETAIL says the job is not running and what it is'
);
SELECT is(pgrun_test.job_fingerprint(:'done'), :'done_before', 'the finished job is unchanged');

-- TEST: an unknown job
SELECT throws_ok(
    format('SELECT pgrun.complete_job(%L, %L)', gen_random_uuid(), gen_random_uuid()),
    'RQ004', 'job.lease_lost', 'an unknown job raises job.lease_lost'
);
SELECT matches(
    pgrun_test.error_detail(format('SELECT pgrun.complete_job(%L, %L)', gen_random_uuid(), gen_random_uuid())),
    'unknown job',
    'the DETAIL says the job is unknown'
);

-- TEST: the owner can still complete before expiry
SELECT pgrun_test.freeze_time('2030-01-01 00:00:29.999999+00');
SELECT is(pgrun.complete_job(:'job', :'token'), 'succeeded', 'a microsecond before expiry the lease is live');

SELECT * FROM finish();
ROLLBACK;
