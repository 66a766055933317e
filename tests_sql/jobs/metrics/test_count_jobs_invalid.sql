-- count_jobs refuses what list_jobs refuses, with the same code: a status that is not a job
-- status is job.invalid_status (RQ003). NULL means every status.
BEGIN;
SELECT plan(6);

SELECT throws_ok($$SELECT * FROM pgrun.count_jobs(status => 'done')$$, 'RQ003', 'job.invalid_status', 'an unknown status');
SELECT throws_ok($$SELECT * FROM pgrun.count_jobs(status => '')$$, 'RQ003', 'job.invalid_status', 'an empty status');
SELECT throws_ok($$SELECT * FROM pgrun.count_jobs(status => 'Queued')$$, 'RQ003', 'job.invalid_status', 'statuses are lower case');
SELECT throws_ok($$SELECT * FROM pgrun.count_jobs(status => repeat('x', 100000))$$, 'RQ003', 'job.invalid_status', 'a huge status');
SELECT is(
    pgrun_test.error_of($$SELECT * FROM pgrun.count_jobs(status => 'done')$$),
    pgrun_test.error_of($$SELECT * FROM pgrun.list_jobs(status => 'done')$$),
    'the same SQLSTATE, code and detail as list_jobs for the same status'
);
SELECT is((SELECT count(*) FROM pgrun.count_jobs(status => NULL)), 5::bigint, 'NULL means every status');

SELECT * FROM finish();
ROLLBACK;
