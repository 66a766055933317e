-- retry_delay overrides the backoff policy, jitter included.
BEGIN;
SELECT plan(4);

-- SETUP: a policy that would wait 100 s +/- 50 %
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT pgrun_test.make_job(p_backoff_base_seconds => 100, p_backoff_jitter => 0.5) AS job \gset

-- TEST: an explicit delay
SELECT results_eq(
    format(
        'SELECT * FROM pgrun.fail_job(%L, %L, retry_delay => interval ''90 seconds'')',
        :'job', pgrun_test.claim_job(:'job')
    ),
    $$VALUES ('retry_scheduled', '2030-01-01 00:01:30+00'::timestamptz)$$,
    'the job is retried exactly retry_delay from now'
);
SELECT is(
    (SELECT run_at FROM pgrun.jobs WHERE id = :'job'),
    '2030-01-01 00:01:30+00'::timestamptz,
    'run_at is stored as returned'
);

-- TEST: a zero delay makes it ready at once
SELECT pgrun_test.freeze_time('2030-01-01 00:01:30+00');
SELECT results_eq(
    format(
        'SELECT run_at FROM pgrun.fail_job(%L, %L, retry_delay => interval ''0'')',
        :'job', pgrun_test.claim_job(:'job')
    ),
    $$VALUES ('2030-01-01 00:01:30+00'::timestamptz)$$,
    'retry_delay 0 retries immediately'
);
SELECT results_eq(
    'SELECT job_id FROM pgrun.claim_jobs(worker_id => ''w'')',
    ARRAY[:'job'::uuid],
    'and the job is claimable right away'
);

SELECT * FROM finish();
ROLLBACK;
