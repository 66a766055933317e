-- Finished jobs (succeeded, dead, cancelled) cannot be cancelled: job.not_cancellable.
BEGIN;
SELECT plan(4);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT job_id AS ok_job, lease_token AS ok_token FROM pgrun_test.running_job() \gset
SELECT pgrun.complete_job(:'ok_job', :'ok_token');
SELECT job_id AS dead_job, lease_token AS dead_token FROM pgrun_test.running_job() \gset
SELECT * FROM pgrun.fail_job(:'dead_job', :'dead_token', retryable => false);
SELECT pgrun_test.make_job() AS gone \gset
SELECT pgrun.cancel_job(:'gone');

-- TEST: each finished status
SELECT throws_ok(
    format('SELECT pgrun.cancel_job(%L)', :'ok_job'),
    'RQ001', 'job.not_cancellable', 'a succeeded job'
);
SELECT throws_ok(
    format('SELECT pgrun.cancel_job(%L)', :'dead_job'),
    'RQ001', 'job.not_cancellable', 'a dead job'
);
SELECT throws_ok(
    format('SELECT pgrun.cancel_job(%L)', :'gone'),
    'RQ001', 'job.not_cancellable', 'an already cancelled job'
);

-- TEST: no events were added
SELECT is(
    (SELECT count(*) FROM pgrun.job_events WHERE event IN ('cancelled', 'cancel_requested')),
    1::bigint,
    'only the one real cancellation wrote an event'
);

SELECT * FROM finish();
ROLLBACK;
