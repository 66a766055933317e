-- fail_job without a live lease raises job.lease_lost and changes nothing.
BEGIN;
SELECT plan(8);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT job_id AS job, lease_token AS token FROM pgrun_test.running_job(p_lease_seconds => 30, p_max_attempts => 1) \gset
SELECT pgrun_test.job_fingerprint(:'job') AS before \gset

-- TEST: a wrong token
SELECT throws_ok(
    format('SELECT * FROM pgrun.fail_job(%L, %L, ''boom'')', :'job', gen_random_uuid()),
    'RQ004', 'job.lease_lost', 'a wrong token raises job.lease_lost'
);
SELECT is(pgrun_test.job_fingerprint(:'job'), :'before', 'no retry, no dead letter, no event');

-- TEST: expired
SELECT pgrun_test.advance_time(interval '31 seconds');
SELECT throws_ok(
    format('SELECT * FROM pgrun.fail_job(%L, %L, ''boom'', retryable => false)', :'job', :'token'),
    'RQ004', 'job.lease_lost', 'an expired lease raises job.lease_lost'
);
SELECT is(pgrun_test.job_fingerprint(:'job'), :'before', 'the expired job was not killed by its old owner');
SELECT is(
    (SELECT count(*) FROM pgrun.job_dead_letters WHERE job_id = :'job'),
    0::bigint,
    'no dead letter was written'
);

-- TEST: not running
SELECT job_id AS done, lease_token AS done_token FROM pgrun_test.running_job() \gset
SELECT pgrun.complete_job(:'done', :'done_token');
SELECT throws_ok(
    format('SELECT * FROM pgrun.fail_job(%L, %L)', :'done', :'done_token'),
    'RQ004', 'job.lease_lost', 'failing a succeeded job raises job.lease_lost'
);
SELECT is((SELECT status FROM pgrun.jobs WHERE id = :'done'), 'succeeded', 'the succeeded job stays succeeded');

-- TEST: unknown
SELECT throws_ok(
    format('SELECT * FROM pgrun.fail_job(%L, %L)', gen_random_uuid(), gen_random_uuid()),
    'RQ004', 'job.lease_lost', 'an unknown job raises job.lease_lost'
);

SELECT * FROM finish();
ROLLBACK;
