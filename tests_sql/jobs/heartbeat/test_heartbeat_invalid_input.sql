-- Malformed heartbeats raise clear codes.
BEGIN;
SELECT plan(7);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT job_id AS job, lease_token AS token FROM pgrun_test.running_job() \gset

-- TEST: worker and lease
SELECT throws_ok(
    format('SELECT * FROM pgrun.heartbeat_jobs('''', 30, ARRAY[%L]::uuid[], ARRAY[%L]::uuid[])', :'job', :'token'),
    'RQ003', 'job.invalid_worker_id', 'an empty worker_id'
);
SELECT throws_ok(
    format('SELECT * FROM pgrun.heartbeat_jobs(''worker-1'', 0, ARRAY[%L]::uuid[], ARRAY[%L]::uuid[])', :'job', :'token'),
    'RQ003', 'job.invalid_lease_seconds', 'a zero lease'
);

-- TEST: the arrays
SELECT throws_ok(
    format('SELECT * FROM pgrun.heartbeat_jobs(''worker-1'', 30, ARRAY[%L]::uuid[], NULL)', :'job'),
    'RQ003', 'job.invalid_batch', 'NULL lease_tokens'
);
SELECT throws_ok(
    format('SELECT * FROM pgrun.heartbeat_jobs(''worker-1'', 30, ARRAY[%L]::uuid[], ARRAY[%L, %L]::uuid[])', :'job', :'token', :'token'),
    'RQ003', 'job.invalid_batch', 'arrays of different lengths'
);
SELECT throws_ok(
    format('SELECT * FROM pgrun.heartbeat_jobs(''worker-1'', 30, ARRAY[%L, %L]::uuid[], ARRAY[%L, %L]::uuid[])', :'job', :'job', :'token', :'token'),
    'RQ003', 'job.invalid_batch', 'a job twice'
);
SELECT throws_ok(
    format(
        'SELECT * FROM pgrun.heartbeat_jobs(''worker-1'', 30, ARRAY[ARRAY[%L]]::uuid[], ARRAY[ARRAY[%L]]::uuid[])',
        :'job', :'token'
    ),
    'RQ003', 'job.invalid_batch', 'two-dimensional arrays'
);

-- TEST: nothing renewed by the refused calls
SELECT is(
    (SELECT lease_expires_at FROM pgrun.jobs WHERE id = :'job'),
    '2030-01-01 00:00:30+00'::timestamptz,
    'the lease is unchanged'
);

SELECT * FROM finish();
ROLLBACK;
