-- The attempt's outcome follows the error code: timeout -> timed_out, crashed -> crashed,
-- anything else (or none) -> failed.
BEGIN;
SELECT plan(4);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT job_id AS t, lease_token AS t_token FROM pgrun_test.running_job() \gset
SELECT job_id AS c, lease_token AS c_token FROM pgrun_test.running_job() \gset
SELECT job_id AS f, lease_token AS f_token FROM pgrun_test.running_job() \gset
SELECT job_id AS n, lease_token AS n_token FROM pgrun_test.running_job() \gset
SELECT * FROM pgrun.fail_job(:'t', :'t_token', error_code => 'timeout');
SELECT * FROM pgrun.fail_job(:'c', :'c_token', error_code => 'crashed');
SELECT * FROM pgrun.fail_job(:'f', :'f_token', error_code => 'http_500');
SELECT * FROM pgrun.fail_job(:'n', :'n_token');

-- TEST: each outcome
SELECT is((SELECT outcome FROM pgrun.job_attempts WHERE job_id = :'t'), 'timed_out', 'error code timeout -> timed_out');
SELECT is((SELECT outcome FROM pgrun.job_attempts WHERE job_id = :'c'), 'crashed', 'error code crashed -> crashed');
SELECT is((SELECT outcome FROM pgrun.job_attempts WHERE job_id = :'f'), 'failed', 'another error code -> failed');
SELECT is((SELECT outcome FROM pgrun.job_attempts WHERE job_id = :'n'), 'failed', 'no error code -> failed');

SELECT * FROM finish();
ROLLBACK;
