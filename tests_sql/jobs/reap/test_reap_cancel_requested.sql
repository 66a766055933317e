-- A running job with a cancel request whose worker never came back is cancelled by the
-- reaper, not retried.
BEGIN;
SELECT plan(3);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT job_id AS job FROM pgrun_test.running_job(p_lease_seconds => 30) \gset
SELECT pgrun.cancel_job(:'job');
SELECT pgrun_test.freeze_time('2030-01-01 00:01:00+00');

-- TEST
SELECT results_eq(
    'SELECT * FROM pgrun.reap_expired_leases()',
    format('VALUES (%L::uuid, ''cancelled'', NULL::timestamptz)', :'job'),
    'the reaper reports the job cancelled'
);
SELECT results_eq(
    format('SELECT j.status, j.finished_at, a.outcome FROM pgrun.jobs AS j JOIN pgrun.job_attempts AS a ON a.job_id = j.id WHERE j.id = %L', :'job'),
    $$VALUES ('cancelled', '2030-01-01 00:01:00+00'::timestamptz, 'lease_expired')$$,
    'the job is cancelled; its attempt ended because the lease expired'
);
SELECT is(pgrun_test.events_of(:'job'), 'cancel_requested,cancelled', 'one cancelled event');

SELECT * FROM finish();
ROLLBACK;
