-- A huge error message (or code) is truncated, never rejected: a failure report always lands.
BEGIN;
SELECT plan(6);

-- SETUP: a 100 000-character message and a 500-character code, on the last attempt
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT job_id AS job, lease_token AS token FROM pgrun_test.running_job(p_max_attempts => 1) \gset

-- TEST: accepted
SELECT results_eq(
    format('SELECT outcome FROM pgrun.fail_job(%L, %L, %L, %L)', :'job', :'token', repeat('c', 500), repeat('m', 100000)),
    $$VALUES ('dead')$$,
    'the failure is recorded'
);

-- TEST: the message is cut to 8192 characters, marked as truncated
SELECT is(
    (SELECT length(error_message) FROM pgrun.jobs WHERE id = :'job'),
    8192,
    'the job keeps 8192 characters of the message'
);
SELECT ok(
    (SELECT error_message LIKE 'mmm%m [truncated]' FROM pgrun.jobs WHERE id = :'job'),
    'the kept message ends in " [truncated]"'
);
SELECT is(
    (SELECT length(error_code) FROM pgrun.jobs WHERE id = :'job'),
    128,
    'the code is cut to 128 characters'
);

-- TEST: the attempt and the dead letter hold the same truncated text
SELECT is(
    (SELECT error_message FROM pgrun.job_attempts WHERE job_id = :'job'),
    (SELECT error_message FROM pgrun.jobs WHERE id = :'job'),
    'the attempt keeps the same truncated message'
);
SELECT is(
    (SELECT length(error_message) FROM pgrun.job_dead_letters WHERE job_id = :'job'),
    8192,
    'so does the dead letter'
);

SELECT * FROM finish();
ROLLBACK;
