-- Bad arguments to reap_expired_leases raise clear codes.
BEGIN;
SELECT plan(4);

-- TEST
SELECT throws_ok(
    'SELECT * FROM pgrun.reap_expired_leases(max_jobs => 0)',
    'RQ003', 'job.invalid_max_jobs', 'max_jobs 0'
);
SELECT throws_ok(
    'SELECT * FROM pgrun.reap_expired_leases(max_jobs => 10001)',
    'RQ003', 'job.invalid_max_jobs', 'max_jobs over 10000'
);
SELECT throws_ok(
    'SELECT * FROM pgrun.reap_expired_leases(max_jobs => NULL)',
    'RQ003', 'job.invalid_max_jobs', 'a NULL max_jobs'
);
SELECT throws_ok(
    'SELECT * FROM pgrun.reap_expired_leases(retry_delay => interval ''-1 second'')',
    'RQ003', 'job.invalid_delay', 'a negative retry_delay'
);

SELECT * FROM finish();
ROLLBACK;
