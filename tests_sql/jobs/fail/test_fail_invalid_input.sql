-- Malformed calls to fail_job / fail_jobs raise clear codes; NULL retryable means true.
BEGIN;
SELECT plan(6);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT job_id AS job, lease_token AS token FROM pgrun_test.running_job() \gset

-- TEST: NULL ids and negative delays
SELECT throws_ok(
    format('SELECT * FROM pgrun.fail_job(NULL, %L)', :'token'),
    'RQ003', 'job.invalid_argument', 'a NULL job_id is invalid'
);
SELECT throws_ok(
    format('SELECT * FROM pgrun.fail_job(%L, %L, retry_delay => interval ''-1 second'')', :'job', :'token'),
    'RQ003', 'job.invalid_delay', 'a negative retry_delay is invalid'
);

-- TEST: arrays that do not line up
SELECT throws_ok(
    format('SELECT * FROM pgrun.fail_jobs(ARRAY[%L]::uuid[], ARRAY[%L]::uuid[], error_codes => ARRAY[''a'', ''b''])', :'job', :'token'),
    'RQ003', 'job.invalid_batch', 'error_codes of another length'
);
SELECT throws_ok(
    format('SELECT * FROM pgrun.fail_jobs(ARRAY[%L]::uuid[], ARRAY[%L]::uuid[], retryable => ''{}''::boolean[])', :'job', :'token'),
    'RQ003', 'job.invalid_batch', 'retryable of another length'
);

-- TEST: the refused calls changed nothing
SELECT is((SELECT status FROM pgrun.jobs WHERE id = :'job'), 'running', 'the job still runs');

-- TEST: retryable NULL is the documented default, true
SELECT results_eq(
    format('SELECT outcome FROM pgrun.fail_job(%L, %L, retryable => NULL)', :'job', :'token'),
    $$VALUES ('retry_scheduled')$$,
    'retryable NULL counts as true'
);

SELECT * FROM finish();
ROLLBACK;
