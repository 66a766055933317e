-- purge_finished_jobs deletes at most max_jobs per call, oldest first.
BEGIN;
SELECT plan(4);

-- SETUP: five jobs cancelled a minute apart
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT pgrun_test.make_job() AS j1, pgrun_test.make_job() AS j2, pgrun_test.make_job() AS j3,
    pgrun_test.make_job() AS j4, pgrun_test.make_job() AS j5 \gset
SELECT pgrun.cancel_job(:'j5');
SELECT pgrun_test.advance_time(interval '1 minute');
SELECT pgrun.cancel_job(:'j4');
SELECT pgrun_test.advance_time(interval '1 minute');
SELECT pgrun.cancel_job(:'j3');
SELECT pgrun_test.advance_time(interval '1 minute');
SELECT pgrun.cancel_job(:'j2');
SELECT pgrun_test.advance_time(interval '1 minute');
SELECT pgrun.cancel_job(:'j1');
SELECT pgrun_test.freeze_time('2030-02-01 00:00:00+00');

-- TEST: batches
SELECT is(pgrun.purge_finished_jobs(interval '1 day', max_jobs => 2), 2::bigint, 'at most two per call');
SELECT set_eq('SELECT id FROM pgrun.jobs', ARRAY[:'j1'::uuid, :'j2'::uuid, :'j3'::uuid], 'the two that finished first went first');
SELECT is(pgrun.purge_finished_jobs(interval '1 day', max_jobs => 2), 2::bigint, 'two more');
SELECT is(pgrun.purge_finished_jobs(interval '1 day', max_jobs => 2), 1::bigint, 'and the last one');

SELECT * FROM finish();
ROLLBACK;
