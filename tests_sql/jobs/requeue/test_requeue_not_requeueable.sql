-- Only dead and cancelled jobs can be requeued: queued, running and succeeded jobs raise
-- job.not_requeueable and stay as they are.
BEGIN;
SELECT plan(5);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT pgrun_test.make_job() AS queued_job \gset
SELECT job_id AS running_job, lease_token AS running_token FROM pgrun_test.running_job() \gset
SELECT job_id AS done_job, lease_token AS done_token FROM pgrun_test.running_job() \gset
SELECT pgrun.complete_job(:'done_job', :'done_token');

-- TEST: each status
SELECT throws_ok(
    format('SELECT pgrun.requeue_job(%L)', :'queued_job'),
    'RQ001', 'job.not_requeueable', 'a queued job'
);
SELECT throws_ok(
    format('SELECT pgrun.requeue_job(%L)', :'running_job'),
    'RQ001', 'job.not_requeueable', 'a running job'
);
SELECT throws_ok(
    format('SELECT pgrun.requeue_job(%L)', :'done_job'),
    'RQ001', 'job.not_requeueable', 'a succeeded job'
);

-- TEST: unchanged
SELECT results_eq(
    format('SELECT status FROM pgrun.jobs WHERE id IN (%L, %L, %L) ORDER BY id', :'queued_job', :'running_job', :'done_job'),
    $$VALUES ('queued'), ('running'), ('succeeded')$$,
    'the jobs keep their status'
);
SELECT is((SELECT count(*) FROM pgrun.job_events WHERE event = 'requeued'), 0::bigint, 'no requeued event');

SELECT * FROM finish();
ROLLBACK;
