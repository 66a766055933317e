-- Malformed calls to continue_job raise clear codes and change nothing.
BEGIN;
SELECT plan(6);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT job_id AS job, lease_token AS token FROM pgrun_test.running_job() \gset

-- TEST: the step
SELECT throws_ok(
    format('SELECT * FROM pgrun.continue_job(%L, %L, NULL)', :'job', :'token'),
    'RQ003', 'job.invalid_step', 'a NULL next_step'
);
SELECT throws_ok(
    format('SELECT * FROM pgrun.continue_job(%L, %L, ''  '')', :'job', :'token'),
    'RQ003', 'job.invalid_step', 'a blank next_step'
);
SELECT throws_ok(
    format('SELECT * FROM pgrun.continue_job(%L, %L, %L)', :'job', :'token', repeat('s', 257)),
    'RQ003', 'job.invalid_step', 'a next_step over 256 characters'
);

-- TEST: the delay and the ids
SELECT throws_ok(
    format('SELECT * FROM pgrun.continue_job(%L, %L, ''next'', delay => interval ''-1 minute'')', :'job', :'token'),
    'RQ003', 'job.invalid_delay', 'a negative delay'
);
SELECT throws_ok(
    format('SELECT * FROM pgrun.continue_job(%L, NULL, ''next'')', :'job'),
    'RQ003', 'job.invalid_argument', 'a NULL lease_token'
);

-- TEST: still running
SELECT is((SELECT status FROM pgrun.jobs WHERE id = :'job'), 'running', 'the refused calls changed nothing');

SELECT * FROM finish();
ROLLBACK;
