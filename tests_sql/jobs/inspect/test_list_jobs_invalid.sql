-- list_jobs refuses an unknown status and a page size outside 1..1000; NULL max_rows is 50.
BEGIN;
SELECT plan(5);

SELECT throws_ok($$SELECT * FROM pgrun.list_jobs(status => 'done')$$, 'RQ003', 'job.invalid_status', 'an unknown status');
SELECT throws_ok($$SELECT * FROM pgrun.list_jobs(max_rows => 0)$$, 'RQ003', 'job.invalid_max_rows', 'zero rows');
SELECT throws_ok($$SELECT * FROM pgrun.list_jobs(max_rows => 1001)$$, 'RQ003', 'job.invalid_max_rows', 'more than 1000 rows');
SELECT lives_ok($$SELECT * FROM pgrun.list_jobs(max_rows => NULL)$$, 'NULL max_rows means the default');
SELECT lives_ok(
    $$SELECT * FROM pgrun.list_jobs(status => 'cancelled', max_rows => 1000)$$,
    'every real status and the largest page are fine'
);

SELECT * FROM finish();
ROLLBACK;
