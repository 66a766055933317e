-- Malformed calls to complete_job / complete_jobs raise clear codes.
BEGIN;
SELECT plan(8);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT job_id AS job, lease_token AS token FROM pgrun_test.running_job() \gset

-- TEST: NULL ids
SELECT throws_ok(
    format('SELECT pgrun.complete_job(NULL, %L)', :'token'),
    'RQ003', 'job.invalid_argument', 'a NULL job_id is invalid'
);
SELECT throws_ok(
    format('SELECT pgrun.complete_job(%L, NULL)', :'job'),
    'RQ003', 'job.invalid_argument', 'a NULL lease_token is invalid'
);

-- TEST: batches whose arrays do not line up
SELECT throws_ok(
    format('SELECT * FROM pgrun.complete_jobs(ARRAY[%L]::uuid[], ''{}''::uuid[])', :'job'),
    'RQ003', 'job.invalid_batch', 'job_ids and lease_tokens of different lengths'
);
SELECT throws_ok(
    format('SELECT * FROM pgrun.complete_jobs(ARRAY[%L]::uuid[], ARRAY[%L]::uuid[], ''{}''::jsonb[])', :'job', :'token'),
    'RQ003', 'job.invalid_batch', 'results of another length'
);
SELECT throws_ok(
    'SELECT * FROM pgrun.complete_jobs(NULL, NULL)',
    'RQ003', 'job.invalid_batch', 'NULL arrays'
);
SELECT throws_ok(
    format('SELECT * FROM pgrun.complete_jobs(ARRAY[%L, NULL]::uuid[], ARRAY[%L, %L]::uuid[])', :'job', :'token', :'token'),
    'RQ003', 'job.invalid_batch', 'a NULL element'
);
SELECT throws_ok(
    format('SELECT * FROM pgrun.complete_jobs(ARRAY[%L, %L]::uuid[], ARRAY[%L, %L]::uuid[])', :'job', :'job', :'token', :'token'),
    'RQ003', 'job.invalid_batch', 'the same job twice'
);

-- TEST: the refused calls changed nothing
SELECT is((SELECT status FROM pgrun.jobs WHERE id = :'job'), 'running', 'the job still runs');

SELECT * FROM finish();
ROLLBACK;
