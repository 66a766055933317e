-- A huge error message (or code) is truncated, never rejected: a failure report always lands.
-- The message is stored once, on the event that ended the attempt; the job and its dead
-- letter point at it, and every read API returns it.
BEGIN;
SELECT plan(9);

-- SETUP: a 100 000-character message and a 500-character code, on the last attempt
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT job_id AS job, lease_token AS token FROM pgrun_test.running_job(p_max_attempts => 1) \gset

-- TEST: accepted
SELECT results_eq(
    format('SELECT outcome FROM pgrun.fail_job(%L, %L, %L, %L)', :'job', :'token', repeat('c', 500), repeat('m', 100000)),
    $$VALUES ('dead')$$,
    'the failure is recorded'
);

-- TEST: the message is cut to 4000 characters, marked as truncated
SELECT is(
    (SELECT length(pgrun.get_job(:'job') ->> 'error_message')),
    4000,
    'get_job shows 4000 characters of the message'
);
SELECT ok(
    (SELECT pgrun.get_job(:'job') ->> 'error_message' LIKE 'mmm%m [truncated]'),
    'the kept message ends in " [truncated]"'
);
SELECT is(
    (SELECT length(error_code) FROM pgrun.jobs WHERE id = :'job'),
    128,
    'the code is cut to 128 characters'
);

-- TEST: stored once: on the attempt's event, nowhere else
SELECT is(
    (SELECT count(*)::integer FROM pgrun.job_events WHERE job_id = :'job' AND error_message IS NOT NULL),
    1,
    'one event holds the message'
);
SELECT ok(
    NOT EXISTS (
        SELECT FROM information_schema.columns
        WHERE table_schema = 'pgrun' AND table_name IN ('jobs', 'job_dead_letters') AND column_name = 'error_message'
    ),
    'jobs and job_dead_letters keep no copy'
);

-- TEST: every read API returns the same text
SELECT is(
    (SELECT error_message FROM pgrun.job_attempts WHERE job_id = :'job'),
    pgrun.get_job(:'job') ->> 'error_message',
    'the attempt shows the same truncated message'
);
SELECT is(
    (pgrun.get_job(:'job') -> 'dead_letters' -> 0) ->> 'error_message',
    pgrun.get_job(:'job') ->> 'error_message',
    'so does the dead letter'
);
SELECT is(
    (SELECT error_message FROM pgrun.list_jobs() WHERE id = :'job'),
    pgrun.get_job(:'job') ->> 'error_message',
    'and list_jobs'
);

SELECT * FROM finish();
ROLLBACK;
