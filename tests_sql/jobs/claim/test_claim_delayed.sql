-- A delayed job is invisible to claim_jobs until its run_at, and claimable from that instant.
BEGIN;
SELECT plan(3);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT pgrun_test.make_job(p_run_at => '2030-01-01 00:10:00+00') AS job \gset

-- TEST: before run_at
SELECT is_empty(
    'SELECT job_id FROM pgrun.claim_jobs(worker_id => ''w'')',
    'a job due in ten minutes is not claimed now'
);

-- TEST: a microsecond before run_at
SELECT pgrun_test.freeze_time('2030-01-01 00:09:59.999999+00');
SELECT is_empty(
    'SELECT job_id FROM pgrun.claim_jobs(worker_id => ''w'')',
    'nor a microsecond before it is due'
);

-- TEST: at run_at
SELECT pgrun_test.freeze_time('2030-01-01 00:10:00+00');
SELECT results_eq(
    'SELECT job_id FROM pgrun.claim_jobs(worker_id => ''w'')',
    ARRAY[:'job'::uuid],
    'it is claimed once run_at <= now'
);

SELECT * FROM finish();
ROLLBACK;
