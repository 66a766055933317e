-- A retryable failure on the last attempt kills the job, with a dead letter
-- 'attempts_exhausted'; retry_delay does not buy an extra attempt.
BEGIN;
SELECT plan(6);

-- SETUP: two attempts
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT pgrun_test.make_job(p_max_attempts => 2) AS job \gset

-- TEST: attempt 1 of 2 is retried
SELECT results_eq(
    format('SELECT outcome FROM pgrun.fail_job(%L, %L, ''e1'', retry_delay => ''0'')', :'job', pgrun_test.claim_job(:'job')),
    $$VALUES ('retry_scheduled')$$,
    'the first failure is retried'
);

-- TEST: attempt 2 of 2 dies
SELECT results_eq(
    format(
        'SELECT * FROM pgrun.fail_job(%L, %L, ''e2'', ''second failure'', retry_delay => ''5 seconds'')',
        :'job', pgrun_test.claim_job(:'job')
    ),
    $$VALUES ('dead', NULL::timestamptz)$$,
    'the last attempt''s failure is final, retry_delay notwithstanding'
);
SELECT results_eq(
    format('SELECT status, attempt, total_attempts FROM pgrun.jobs WHERE id = %L', :'job'),
    $$VALUES ('dead', 2, 2)$$,
    'the job is dead after two attempts'
);
SELECT results_eq(
    format(
        'SELECT attempt, error_code, (pgrun.get_job(job_id) -> ''dead_letters'' -> 0) ->> ''error_message'', reason '
        'FROM pgrun.job_dead_letters WHERE job_id = %L',
        :'job'
    ),
    $$VALUES (2, 'e2', 'second failure', 'attempts_exhausted')$$,
    'one dead letter, reason attempts_exhausted, with the last error'
);
SELECT is(
    (SELECT array_agg(outcome ORDER BY attempt) FROM pgrun.job_attempts WHERE job_id = :'job'),
    ARRAY['failed', 'failed'],
    'both attempts ended failed'
);
SELECT is(
    pgrun_test.events_of(:'job'),
    'retry_scheduled,dead',
    'one event per transition'
);

SELECT * FROM finish();
ROLLBACK;
