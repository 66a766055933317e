-- continue_job's max_attempts and retry_delay set the next step's attempt budget and retry
-- delay; a later continue without them gives the job's own settings back.
BEGIN;
SELECT plan(14);

-- SETUP: five attempts, a backoff of 10 s without jitter
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT pgrun_test.make_job(p_max_attempts => 5, p_backoff_base_seconds => 10) AS job \gset

-- TEST: one attempt for the next step
SELECT results_eq(
    format(
        'SELECT * FROM pgrun.continue_job(%L, %L, ''once'', max_attempts => 1)',
        :'job', pgrun_test.claim_job(:'job')
    ),
    $$VALUES ('continued', '2030-01-01 00:00:00+00'::timestamptz)$$,
    'continue_job takes max_attempts for the next step'
);
SELECT results_eq(
    format('SELECT max_attempts, step_max_attempts, step_retry_delay FROM pgrun.jobs WHERE id = %L', :'job'),
    $$VALUES (5, 1, NULL::interval)$$,
    'the override is stored beside the job''s own max_attempts, which stays 5'
);
SELECT results_eq(
    'SELECT step, attempt, max_attempts FROM pgrun.claim_jobs(worker_id => ''w'')',
    $$VALUES ('once', 1, 1)$$,
    'claim_jobs returns the step''s budget as max_attempts'
);
SELECT results_eq(
    format('SELECT * FROM pgrun.fail_job(%L, %L, ''boom'')', :'job', pgrun_test.token(:'job')),
    $$VALUES ('dead', NULL::timestamptz)$$,
    'the first failure of that step is final, although the job has five attempts'
);
SELECT results_eq(
    format('SELECT attempt, reason FROM pgrun.job_dead_letters WHERE job_id = %L', :'job'),
    $$VALUES (2, 'attempts_exhausted')$$,
    'its dead letter says attempts_exhausted'
);

-- TEST: requeue_job resumes the same step, with the same budget
SELECT pgrun.requeue_job(:'job');
SELECT results_eq(
    'SELECT step, max_attempts FROM pgrun.claim_jobs(worker_id => ''w'')',
    $$VALUES ('once', 1)$$,
    'a requeued step keeps its override'
);

-- TEST: a retry delay of one hour for the next step
SELECT * FROM pgrun.continue_job(:'job', pgrun_test.token(:'job'), 'slow', retry_delay => interval '1 hour');
SELECT results_eq(
    format('SELECT step_max_attempts, step_retry_delay FROM pgrun.jobs WHERE id = %L', :'job'),
    $$VALUES (NULL::integer, interval '1 hour')$$,
    'the earlier step''s max_attempts is gone, the retry delay stored'
);
SELECT results_eq(
    format('SELECT * FROM pgrun.fail_job(%L, %L, ''boom'')', :'job', pgrun_test.claim_job(:'job')),
    $$VALUES ('retry_scheduled', '2030-01-01 01:00:00+00'::timestamptz)$$,
    'a failure of that step is retried one hour from now, not after the 10 s backoff'
);
SELECT pgrun_test.freeze_time('2030-01-01 01:00:00+00');
SELECT results_eq(
    format(
        'SELECT * FROM pgrun.fail_job(%L, %L, ''boom'', retry_delay => interval ''5 seconds'')',
        :'job', pgrun_test.claim_job(:'job')
    ),
    $$VALUES ('retry_scheduled', '2030-01-01 01:00:05+00'::timestamptz)$$,
    'a retry_delay passed to fail_job wins over the step''s'
);

-- TEST: a continue without overrides gives the job's settings back
SELECT pgrun_test.freeze_time('2030-01-01 01:00:05+00');
SELECT * FROM pgrun.continue_job(:'job', pgrun_test.claim_job(:'job'), 'plain');
SELECT results_eq(
    format('SELECT step_max_attempts, step_retry_delay FROM pgrun.jobs WHERE id = %L', :'job'),
    $$VALUES (NULL::integer, NULL::interval)$$,
    'no override is left'
);
SELECT results_eq(
    'SELECT step, max_attempts FROM pgrun.claim_jobs(worker_id => ''w'')',
    $$VALUES ('plain', 5)$$,
    'the next step has the job''s five attempts'
);
SELECT results_eq(
    format('SELECT * FROM pgrun.fail_job(%L, %L, ''boom'')', :'job', pgrun_test.token(:'job')),
    $$VALUES ('retry_scheduled', '2030-01-01 01:00:15+00'::timestamptz)$$,
    'and its failures wait the type''s backoff again (10 s for the first)'
);

-- TEST: both overrides at once, stored even when a pending cancel ends the job
SELECT pgrun_test.freeze_time('2030-01-01 01:00:15+00');
SELECT pgrun_test.claim_job(:'job') AS token \gset
SELECT pgrun.cancel_job(:'job', 'stop');
SELECT results_eq(
    format(
        'SELECT * FROM pgrun.continue_job(%L, %L, ''after'', max_attempts => 2, retry_delay => interval ''0'')',
        :'job', :'token'
    ),
    $$VALUES ('cancelled', NULL::timestamptz)$$,
    'a pending cancel still wins'
);
SELECT results_eq(
    format('SELECT status, step, step_max_attempts, step_retry_delay FROM pgrun.jobs WHERE id = %L', :'job'),
    $$VALUES ('cancelled', 'after', 2, interval '0')$$,
    'the next step and its overrides are stored for a later requeue_job'
);

SELECT * FROM finish();
ROLLBACK;
