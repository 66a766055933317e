-- The reaper takes at most max_jobs per call, the longest expired first.
BEGIN;
SELECT plan(5);

-- SETUP: five leases expiring one second apart, the first one to expire claimed last
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT job_id AS e5 FROM pgrun_test.running_job(p_lease_seconds => 5) \gset
SELECT job_id AS e4 FROM pgrun_test.running_job(p_lease_seconds => 4) \gset
SELECT job_id AS e3 FROM pgrun_test.running_job(p_lease_seconds => 3) \gset
SELECT job_id AS e2 FROM pgrun_test.running_job(p_lease_seconds => 2) \gset
SELECT job_id AS e1 FROM pgrun_test.running_job(p_lease_seconds => 1) \gset
SELECT pgrun_test.freeze_time('2030-01-01 00:01:00+00');

-- TEST: batches of two, oldest expiry first
SELECT set_eq(
    'SELECT job_id FROM pgrun.reap_expired_leases(max_jobs => 2)',
    ARRAY[:'e1'::uuid, :'e2'::uuid],
    'the first batch holds the two longest-expired jobs'
);
SELECT set_eq(
    'SELECT job_id FROM pgrun.reap_expired_leases(max_jobs => 2)',
    ARRAY[:'e3'::uuid, :'e4'::uuid],
    'the next batch the next two'
);
SELECT set_eq(
    'SELECT job_id FROM pgrun.reap_expired_leases(max_jobs => 2)',
    ARRAY[:'e5'::uuid],
    'then the last one'
);
SELECT is_empty('SELECT * FROM pgrun.reap_expired_leases(max_jobs => 2)', 'then nothing');

-- TEST: every job reaped exactly once
SELECT is(
    (SELECT count(*) FROM pgrun.job_events WHERE event = 'lease_expired'),
    5::bigint,
    'five lease_expired events for five jobs'
);

SELECT * FROM finish();
ROLLBACK;
