-- cancel_job on a queued job cancels it at once: finished, one cancelled event, never claimed.
BEGIN;
SELECT plan(5);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT pgrun_test.make_job() AS job \gset

-- TEST: outcome and row
SELECT is(pgrun.cancel_job(:'job', reason => 'no longer needed'), 'cancelled', 'returns cancelled');
SELECT results_eq(
    format('SELECT status, finished_at, cancel_reason FROM pgrun.jobs WHERE id = %L', :'job'),
    $$VALUES ('cancelled', '2030-01-01 00:00:00+00'::timestamptz, 'no longer needed')$$,
    'the job is cancelled and finished, with the reason'
);

-- TEST: one event
SELECT results_eq(
    format('SELECT event, from_status, to_status, detail->>''reason'' FROM pgrun.job_events WHERE job_id = %L', :'job'),
    $$VALUES ('cancelled', 'queued', 'cancelled', 'no longer needed')$$,
    'one cancelled event from queued'
);

-- TEST: never claimed
SELECT is_empty('SELECT job_id FROM pgrun.claim_jobs(worker_id => ''w'')', 'a cancelled job is not claimed');

-- TEST: a long reason is truncated
SELECT pgrun_test.make_job() AS job2 \gset
SELECT pgrun.cancel_job(:'job2', reason => repeat('r', 5000));
SELECT is((SELECT length(cancel_reason) FROM pgrun.jobs WHERE id = :'job2'), 1024, 'the reason keeps 1024 characters');

SELECT * FROM finish();
ROLLBACK;
