-- set_job_runtime_config pauses, resumes and caps a job type; NULL leaves a setting as it is.
BEGIN;
SELECT plan(6);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');

-- TEST: a new type starts unpaused and uncapped
SELECT row_eq(
    $$SELECT job_type, paused, max_concurrency, updated_at FROM pgrun.set_job_runtime_config('mail.send')$$,
    ROW('mail.send'::text, false, NULL::integer, '2030-01-01 00:00:00+00'::timestamptz),
    'no arguments: a row with the defaults'
);

-- TEST: pause, then cap without touching the pause
SELECT pgrun.set_job_runtime_config('mail.send', paused => true);
SELECT pgrun_test.freeze_time('2030-01-01 01:00:00+00');
SELECT row_eq(
    $$SELECT paused, max_concurrency, updated_at FROM pgrun.set_job_runtime_config('mail.send', max_concurrency => 3)$$,
    ROW(true, 3, '2030-01-01 01:00:00+00'::timestamptz),
    'setting a cap leaves the pause in place'
);

-- TEST: resume without touching the cap
SELECT row_eq(
    $$SELECT paused, max_concurrency FROM pgrun.set_job_runtime_config('mail.send', paused => false)$$,
    ROW(false, 3),
    'resuming leaves the cap in place'
);

-- TEST: clear the cap
SELECT row_eq(
    $$SELECT paused, max_concurrency FROM pgrun.set_job_runtime_config('mail.send', clear_max_concurrency => true)$$,
    ROW(false, NULL::integer),
    'clear_max_concurrency removes the cap'
);

-- TEST: all NULL changes nothing
SELECT pgrun.set_job_runtime_config('mail.send', paused => true, max_concurrency => 2);
SELECT row_eq(
    $$SELECT paused, max_concurrency FROM pgrun.set_job_runtime_config('mail.send', NULL, NULL, NULL)$$,
    ROW(true, 2),
    'NULL arguments leave every setting as it is'
);
SELECT is((SELECT count(*) FROM pgrun.job_runtime_configs), 1::bigint, 'one row per job type');

SELECT * FROM finish();
ROLLBACK;
