-- continue_job's delay holds the next step back until now + delay.
BEGIN;
SELECT plan(3);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT job_id AS job, lease_token AS token FROM pgrun_test.running_job() \gset

-- TEST: the returned run_at
SELECT results_eq(
    format('SELECT * FROM pgrun.continue_job(%L, %L, ''later'', delay => interval ''5 minutes'')', :'job', :'token'),
    $$VALUES ('continued', '2030-01-01 00:05:00+00'::timestamptz)$$,
    'the next step runs five minutes from now'
);

-- TEST: not before
SELECT pgrun_test.freeze_time('2030-01-01 00:04:59+00');
SELECT is_empty('SELECT job_id FROM pgrun.claim_jobs(worker_id => ''w'')', 'not claimable before the delay passed');

-- TEST: then
SELECT pgrun_test.freeze_time('2030-01-01 00:05:00+00');
SELECT results_eq(
    'SELECT job_id, step FROM pgrun.claim_jobs(worker_id => ''w'')',
    format('VALUES (%L::uuid, ''later'')', :'job'),
    'claimable once the delay passed, at the new step'
);

SELECT * FROM finish();
ROLLBACK;
