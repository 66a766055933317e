-- Malformed calls to release_jobs raise job.invalid_batch and change nothing.
BEGIN;
SELECT plan(6);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT job_id AS job, lease_token AS token FROM pgrun_test.running_job() \gset
SELECT pgrun_test.job_fingerprint(:'job') AS before \gset

-- TEST: arrays that do not line up
SELECT throws_ok(
    format('SELECT * FROM pgrun.release_jobs(ARRAY[%L]::uuid[], ''{}''::uuid[])', :'job'),
    'RQ003', 'job.invalid_batch', 'job_ids and lease_tokens of different lengths'
);
SELECT throws_ok(
    'SELECT * FROM pgrun.release_jobs(NULL, NULL)',
    'RQ003', 'job.invalid_batch', 'NULL arrays'
);
SELECT throws_ok(
    format('SELECT * FROM pgrun.release_jobs(ARRAY[%L, NULL]::uuid[], ARRAY[%L, %L]::uuid[])', :'job', :'token', :'token'),
    'RQ003', 'job.invalid_batch', 'a NULL element'
);
SELECT throws_ok(
    format('SELECT * FROM pgrun.release_jobs(ARRAY[%L, %L]::uuid[], ARRAY[%L, %L]::uuid[])', :'job', :'job', :'token', :'token'),
    'RQ003', 'job.invalid_batch', 'the same job twice'
);
SELECT throws_ok(
    format('SELECT * FROM pgrun.release_jobs(ARRAY[[%L]]::uuid[], ARRAY[[%L]]::uuid[])', :'job', :'token'),
    'RQ003', 'job.invalid_batch', 'two-dimensional arrays'
);

-- TEST: the refused calls changed nothing
SELECT is(pgrun_test.job_fingerprint(:'job'), :'before', 'the job is untouched');

SELECT * FROM finish();
ROLLBACK;
