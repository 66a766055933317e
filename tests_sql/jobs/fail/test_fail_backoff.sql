-- Without jitter the retry delay is exactly backoff_base_seconds * 2^(attempt - 1), capped
-- at backoff_max_seconds.
BEGIN;
SELECT plan(6);

-- SETUP: base 10 s, cap 60 s, no jitter, five attempts
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT pgrun_test.make_job(p_max_attempts => 5, p_backoff_base_seconds => 10, p_backoff_max_seconds => 60) AS job \gset

-- TEST: attempt 1 -> 10 s
SELECT results_eq(
    format('SELECT * FROM pgrun.fail_job(%L, %L, ''boom'')', :'job', pgrun_test.claim_job(:'job')),
    $$VALUES ('retry_scheduled', '2030-01-01 00:00:10+00'::timestamptz)$$,
    'the first retry waits backoff_base_seconds'
);
SELECT results_eq(
    format('SELECT status, run_at FROM pgrun.jobs WHERE id = %L', :'job'),
    $$VALUES ('queued', '2030-01-01 00:00:10+00'::timestamptz)$$,
    'the job is queued again at that time'
);

-- TEST: attempt 2 -> 20 s
SELECT pgrun_test.freeze_time('2030-01-01 00:00:10+00');
SELECT results_eq(
    format('SELECT run_at FROM pgrun.fail_job(%L, %L, ''boom'')', :'job', pgrun_test.claim_job(:'job')),
    $$VALUES ('2030-01-01 00:00:30+00'::timestamptz)$$,
    'the second retry waits twice as long'
);

-- TEST: attempt 3 -> 40 s
SELECT pgrun_test.freeze_time('2030-01-01 00:00:30+00');
SELECT results_eq(
    format('SELECT run_at FROM pgrun.fail_job(%L, %L, ''boom'')', :'job', pgrun_test.claim_job(:'job')),
    $$VALUES ('2030-01-01 00:01:10+00'::timestamptz)$$,
    'the third retry waits four times as long'
);

-- TEST: attempt 4 -> 80 s, capped at 60 s
SELECT pgrun_test.freeze_time('2030-01-01 00:01:10+00');
SELECT results_eq(
    format('SELECT run_at FROM pgrun.fail_job(%L, %L, ''boom'')', :'job', pgrun_test.claim_job(:'job')),
    $$VALUES ('2030-01-01 00:02:10+00'::timestamptz)$$,
    'the delay is capped at backoff_max_seconds'
);

-- TEST: one retry_scheduled event per failure
SELECT is(
    pgrun_test.events_of(:'job'),
    'retry_scheduled,retry_scheduled,retry_scheduled,retry_scheduled',
    'each failure writes exactly one retry_scheduled event'
);

SELECT * FROM finish();
ROLLBACK;
