-- An expired job on its last attempt dies: dead letter reason lease_expired, one dead event.
BEGIN;
SELECT plan(4);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT job_id AS job FROM pgrun_test.running_job(p_lease_seconds => 30, p_max_attempts => 1) \gset
SELECT pgrun_test.freeze_time('2030-01-01 00:01:00+00');

-- TEST: outcome
SELECT results_eq(
    'SELECT * FROM pgrun.reap_expired_leases()',
    format('VALUES (%L::uuid, ''dead'', NULL::timestamptz)', :'job'),
    'the reaper reports the job dead'
);
SELECT results_eq(
    format('SELECT status, finished_at FROM pgrun.jobs WHERE id = %L', :'job'),
    $$VALUES ('dead', '2030-01-01 00:01:00+00'::timestamptz)$$,
    'the job is dead and finished'
);

-- TEST: dead letter and event
SELECT results_eq(
    format('SELECT attempt, error_code, reason FROM pgrun.job_dead_letters WHERE job_id = %L', :'job'),
    $$VALUES (1, 'lease_expired', 'lease_expired')$$,
    'one dead letter with reason lease_expired'
);
SELECT is(pgrun_test.events_of(:'job'), 'dead', 'one dead event (no separate lease_expired event)');

SELECT * FROM finish();
ROLLBACK;
