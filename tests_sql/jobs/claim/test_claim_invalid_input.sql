-- Bad arguments to claim_jobs raise a clear code and claim nothing.
BEGIN;
SELECT plan(14);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT pgrun_test.make_job();

-- TEST: worker_id
SELECT throws_ok(
    'SELECT * FROM pgrun.claim_jobs(worker_id => NULL)',
    'RQ003', 'job.invalid_worker_id', 'a NULL worker_id is rejected'
);
SELECT throws_ok(
    'SELECT * FROM pgrun.claim_jobs(worker_id => ''   '')',
    'RQ003', 'job.invalid_worker_id', 'a blank worker_id is rejected'
);
SELECT throws_ok(
    format('SELECT * FROM pgrun.claim_jobs(worker_id => %L)', repeat('w', 201)),
    'RQ003', 'job.invalid_worker_id', 'a worker_id over 200 characters is rejected'
);

-- TEST: lease_seconds
SELECT throws_ok(
    'SELECT * FROM pgrun.claim_jobs(worker_id => ''w'', lease_seconds => 0)',
    'RQ003', 'job.invalid_lease_seconds', 'a zero lease is rejected'
);
SELECT throws_ok(
    'SELECT * FROM pgrun.claim_jobs(worker_id => ''w'', lease_seconds => 86401)',
    'RQ003', 'job.invalid_lease_seconds', 'a lease over a day is rejected'
);
SELECT throws_ok(
    'SELECT * FROM pgrun.claim_jobs(worker_id => ''w'', lease_seconds => NULL)',
    'RQ003', 'job.invalid_lease_seconds', 'a NULL lease is rejected'
);

-- TEST: max_jobs
SELECT throws_ok(
    'SELECT * FROM pgrun.claim_jobs(worker_id => ''w'', max_jobs => 0)',
    'RQ003', 'job.invalid_max_jobs', 'max_jobs 0 is rejected'
);
SELECT throws_ok(
    'SELECT * FROM pgrun.claim_jobs(worker_id => ''w'', max_jobs => 1001)',
    'RQ003', 'job.invalid_max_jobs', 'max_jobs over 1000 is rejected'
);
SELECT throws_ok(
    'SELECT * FROM pgrun.claim_jobs(worker_id => ''w'', max_jobs => NULL)',
    'RQ003', 'job.invalid_max_jobs', 'a NULL max_jobs is rejected'
);

-- TEST: max_held
SELECT throws_ok(
    'SELECT * FROM pgrun.claim_jobs(worker_id => ''w'', max_held => 0)',
    'RQ003', 'job.invalid_max_held', 'max_held 0 is rejected'
);
SELECT throws_ok(
    'SELECT * FROM pgrun.claim_jobs(worker_id => ''w'', max_held => -1)',
    'RQ003', 'job.invalid_max_held', 'a negative max_held is rejected'
);
SELECT throws_ok(
    'SELECT * FROM pgrun.claim_jobs(worker_id => ''w'', max_held => 10001)',
    'RQ003', 'job.invalid_max_held', 'max_held over 10000 is rejected'
);

-- TEST: nothing was claimed by the refused calls
SELECT is(
    (SELECT count(*) FROM pgrun.jobs WHERE status = 'queued'),
    1::bigint,
    'the job is still queued'
);

-- TEST: the bounds themselves are accepted
SELECT is(
    (SELECT count(*) FROM pgrun.claim_jobs(worker_id => repeat('w', 200), lease_seconds => 86400, max_jobs => 1000)),
    1::bigint,
    'worker_id of 200 characters, a one-day lease and max_jobs 1000 are fine'
);

SELECT * FROM finish();
ROLLBACK;
