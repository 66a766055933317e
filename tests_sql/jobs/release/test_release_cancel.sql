-- release_jobs: a job with a pending cancel request ends cancelled instead of going back to
-- the queue (the cancel wins, as in every write that ends a claim after a request).
BEGIN;
SELECT plan(7);

-- SETUP: a plain job and a workflow step's job, both claimed and asked to cancel
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT job_id AS job, lease_token AS token FROM pgrun_test.running_job() \gset
SELECT pgrun.cancel_job(:'job', 'not needed');
SELECT pgrun_test.wf_enqueue('{"steps": [{"key": "a", "job_type": "test.step"}, {"key": "b", "job_type": "test.step", "depends_on": ["a"]}]}') AS run \gset
SELECT pgrun_test.wf_start(:'run', 'a') AS a_token \gset
SELECT pgrun_test.wf_job(:'run', 'a') AS a_job \gset
SELECT pgrun.cancel_job(:'a_job', 'stop the run');
SELECT pgrun_test.advance_time('1 second');

-- TEST: both end cancelled
SELECT results_eq(
    format(
        'SELECT job_id, outcome, lost_reason FROM pgrun.release_jobs(ARRAY[%L, %L]::uuid[], ARRAY[%L, %L]::uuid[])',
        :'job', :'a_job', :'token', :'a_token'
    ),
    format('VALUES (%L::uuid, ''cancelled'', NULL::text), (%L::uuid, ''cancelled'', NULL::text)', :'job', :'a_job'),
    'a release after a cancel request reports cancelled'
);
SELECT results_eq(
    format('SELECT status, lease_token, attempt, finished_at FROM pgrun.jobs WHERE id = %L', :'job'),
    $$VALUES ('cancelled', NULL::uuid, 1, '2030-01-01 00:00:01+00'::timestamptz)$$,
    'cancelled, finished, the lease cleared'
);

-- TEST: one cancelled event, which ends the attempt (outcome cancelled, with the reason)
SELECT is(pgrun_test.events_of(:'job'), 'cancel_requested,cancelled', 'no released event');
SELECT results_eq(
    format(
        'SELECT outcome, lease_token, detail->>''reason'' FROM pgrun.job_events WHERE job_id = %L AND event = ''cancelled''',
        :'job'
    ),
    format('VALUES (''cancelled'', %L::uuid, ''not needed'')', :'token'),
    'the event records the claim as an attempt that ended cancelled'
);
SELECT results_eq(
    format('SELECT attempt, outcome FROM pgrun.job_attempts WHERE job_id = %L', :'job'),
    $$VALUES (1, 'cancelled')$$,
    'job_attempts shows the cancelled claim'
);

-- TEST: the workflow step is settled like any cancelled step job
SELECT is(pgrun_test.wf_status(:'run', 'a'), 'cancelled', 'the step is cancelled');
SELECT isnt(pgrun_test.wf_status(:'run', 'b'), 'released', 'its dependent is not released');

SELECT * FROM finish();
ROLLBACK;
