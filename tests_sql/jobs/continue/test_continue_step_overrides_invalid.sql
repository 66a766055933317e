-- Bad next-step overrides raise their codes (enqueue's code for max_attempts, the time
-- argument code for retry_delay) and write nothing.
BEGIN;
SELECT plan(9);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT job_id AS job, lease_token AS token FROM pgrun_test.running_job() \gset
SELECT pgrun_test.job_fingerprint(:'job') AS before \gset

-- TEST: max_attempts outside 1..1000
SELECT throws_ok(
    format('SELECT * FROM pgrun.continue_job(%L, %L, ''next'', max_attempts => 0)', :'job', :'token'),
    'RQ003', 'job.invalid_max_attempts', 'max_attempts 0'
);
SELECT throws_ok(
    format('SELECT * FROM pgrun.continue_job(%L, %L, ''next'', max_attempts => -1)', :'job', :'token'),
    'RQ003', 'job.invalid_max_attempts', 'a negative max_attempts'
);
SELECT throws_ok(
    format('SELECT * FROM pgrun.continue_job(%L, %L, ''next'', max_attempts => 1001)', :'job', :'token'),
    'RQ003', 'job.invalid_max_attempts', 'max_attempts 1001'
);
SELECT is(
    pgrun_test.error_detail(
        format('SELECT * FROM pgrun.continue_job(%L, %L, ''next'', max_attempts => 1001)', :'job', :'token')
    ),
    'max_attempts 1001 is outside 1..1000',
    'the detail names the value and the range'
);

-- TEST: retry_delay outside 0 s..100 years
SELECT throws_ok(
    format(
        'SELECT * FROM pgrun.continue_job(%L, %L, ''next'', retry_delay => interval ''-1 second'')',
        :'job', :'token'
    ),
    'RQ003', 'job.invalid_delay', 'a negative retry_delay'
);
SELECT throws_ok(
    format(
        'SELECT * FROM pgrun.continue_job(%L, %L, ''next'', retry_delay => interval ''101 years'')',
        :'job', :'token'
    ),
    'RQ003', 'job.invalid_delay', 'a retry_delay over 100 years'
);
SELECT throws_ok(
    format(
        'SELECT * FROM pgrun.continue_job(%L, %L, ''next'', retry_delay => interval ''178000000 years'')',
        :'job', :'token'
    ),
    'RQ003', 'job.invalid_delay', 'the largest interval PostgreSQL holds'
);

-- TEST: nothing was written; the job still runs under its lease
SELECT is(pgrun_test.job_fingerprint(:'job'), :'before', 'the refused calls changed nothing');

-- TEST: the boundaries are accepted
SELECT results_eq(
    format(
        'SELECT outcome FROM pgrun.continue_job(%L, %L, ''next'', max_attempts => 1000, '
        'retry_delay => interval ''100 years'')',
        :'job', :'token'
    ),
    $$VALUES ('continued')$$,
    'max_attempts 1000 and retry_delay 100 years are accepted'
);

SELECT * FROM finish();
ROLLBACK;
