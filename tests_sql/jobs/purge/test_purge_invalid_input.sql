-- Bad arguments to purge_finished_jobs raise clear codes.
BEGIN;
SELECT plan(4);

-- TEST
SELECT throws_ok(
    'SELECT pgrun.purge_finished_jobs(NULL)',
    'RQ003', 'job.invalid_older_than', 'a NULL older_than'
);
SELECT throws_ok(
    'SELECT pgrun.purge_finished_jobs(interval ''-1 day'')',
    'RQ003', 'job.invalid_older_than', 'a negative older_than'
);
SELECT throws_ok(
    'SELECT pgrun.purge_finished_jobs(interval ''1 day'', max_jobs => 0)',
    'RQ003', 'job.invalid_max_jobs', 'max_jobs 0'
);
SELECT throws_ok(
    'SELECT pgrun.purge_finished_jobs(interval ''1 day'', max_jobs => 100001)',
    'RQ003', 'job.invalid_max_jobs', 'max_jobs over 100000'
);

SELECT * FROM finish();
ROLLBACK;
