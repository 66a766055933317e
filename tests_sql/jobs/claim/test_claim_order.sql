-- claim_jobs takes ready jobs lowest priority number first, then oldest run_at, then id.
BEGIN;
SELECT plan(4);

-- SETUP: ids are made in this order, so id order is a < b < ... within equal keys
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT pgrun_test.make_job(p_priority => 5, p_run_at => '2029-12-31 23:00:00+00') AS low_priority \gset
SELECT pgrun_test.make_job(p_priority => 1, p_run_at => '2029-12-31 23:59:50+00') AS newer \gset
SELECT pgrun_test.make_job(p_priority => 1, p_run_at => '2029-12-31 23:59:40+00') AS older \gset
SELECT pgrun_test.make_job(p_priority => 1, p_run_at => '2029-12-31 23:59:40+00') AS older_later_id \gset
SELECT pgrun_test.make_job(p_priority => 0, p_run_at => '2030-01-01 00:00:01+00') AS not_due \gset

-- TEST: the first claim takes the head of the order
SELECT results_eq(
    'SELECT job_id FROM pgrun.claim_jobs(worker_id => ''w'', max_jobs => 2)',
    ARRAY[:'older'::uuid, :'older_later_id'::uuid],
    'priority first, then run_at, then id (ties on run_at broken by id)'
);

-- TEST: the next claim continues where the first stopped; a job not yet due is not taken
SELECT results_eq(
    'SELECT job_id FROM pgrun.claim_jobs(worker_id => ''w'', max_jobs => 10)',
    ARRAY[:'newer'::uuid, :'low_priority'::uuid],
    'a later run_at, then a higher priority number; the delayed job is skipped'
);

-- TEST: nothing left that is due
SELECT is_empty(
    'SELECT job_id FROM pgrun.claim_jobs(worker_id => ''w'', max_jobs => 10)',
    'an empty ready set claims nothing'
);

-- TEST: rows come back in claim order within one batch
SELECT pgrun_test.advance_time(interval '1 second');
SELECT pgrun_test.make_job(p_priority => 9) AS late_low \gset
SELECT results_eq(
    'SELECT job_id FROM pgrun.claim_jobs(worker_id => ''w'', max_jobs => 10)',
    ARRAY[:'not_due'::uuid, :'late_low'::uuid],
    'a batch is returned in claim order'
);

SELECT * FROM finish();
ROLLBACK;
