-- A cancel request on a running job is reported by heartbeat_jobs (and report_progress);
-- the lease is still renewed so the worker can wind down and write its final state.
BEGIN;
SELECT plan(3);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT job_id AS job, lease_token AS token FROM pgrun_test.running_job() \gset
SELECT job_id AS other, lease_token AS other_token FROM pgrun_test.running_job() \gset
SELECT pgrun.cancel_job(:'job', reason => 'user asked');

-- TEST: heartbeat flags only the cancelled job
SELECT results_eq(
    format(
        'SELECT job_id, renewed, cancel_requested FROM pgrun.heartbeat_jobs(''worker-1'', 30, '
        'ARRAY[%L, %L]::uuid[], ARRAY[%L, %L]::uuid[])',
        :'job', :'other', :'token', :'other_token'
    ),
    format('VALUES (%L::uuid, true, true), (%L::uuid, true, false)', :'job', :'other'),
    'the cancel request is reported, the lease still renewed'
);

-- TEST: report_progress says so too
SELECT is(pgrun.report_progress(:'job', :'token', '{"done": 1}'), true, 'report_progress returns true');
SELECT is(pgrun.report_progress(:'other', :'other_token', '{"done": 1}'), false, 'and false without a request');

SELECT * FROM finish();
ROLLBACK;
