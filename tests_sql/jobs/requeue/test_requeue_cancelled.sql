-- requeue_job brings a cancelled job back, with its cancel request cleared.
BEGIN;
SELECT plan(3);

-- SETUP: a running job cancelled via request + worker write
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT job_id AS job, lease_token AS token FROM pgrun_test.running_job() \gset
SELECT pgrun.cancel_job(:'job', reason => 'oops');
SELECT pgrun.complete_job(:'job', :'token');

-- TEST: queued again, the request forgotten
SELECT pgrun.requeue_job(:'job');
SELECT results_eq(
    format('SELECT status, cancel_requested_at, cancel_reason, finished_at FROM pgrun.jobs WHERE id = %L', :'job'),
    $$VALUES ('queued', NULL::timestamptz, NULL::text, NULL::timestamptz)$$,
    'queued, with no pending cancel request'
);
SELECT is(
    pgrun_test.events_of(:'job'),
    'cancel_requested,cancelled,requeued',
    'one requeued event'
);

-- TEST: it completes normally this time
SELECT is(pgrun.complete_job(:'job', pgrun_test.claim_job(:'job')), 'succeeded', 'the requeued job can succeed');

SELECT * FROM finish();
ROLLBACK;
