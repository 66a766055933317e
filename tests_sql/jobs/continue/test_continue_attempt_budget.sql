-- Each step gets the whole attempt budget: failures of an earlier step do not count
-- against the next one.
BEGIN;
SELECT plan(3);

-- SETUP: two attempts per step; the first step fails once, then succeeds into step 2
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT pgrun_test.make_job(p_max_attempts => 2) AS job \gset
SELECT * FROM pgrun.fail_job(:'job', pgrun_test.claim_job(:'job'), retry_delay => '0');
SELECT * FROM pgrun.continue_job(:'job', pgrun_test.claim_job(:'job'), 'step-2');

-- TEST: step 2 may fail once and still be retried
SELECT results_eq(
    format('SELECT outcome FROM pgrun.fail_job(%L, %L, retry_delay => ''0'')', :'job', pgrun_test.claim_job(:'job')),
    $$VALUES ('retry_scheduled')$$,
    'the first failure of step 2 is retried (its budget started afresh)'
);

-- TEST: its second failure exhausts step 2's budget
SELECT results_eq(
    format('SELECT outcome FROM pgrun.fail_job(%L, %L, retry_delay => ''0'')', :'job', pgrun_test.claim_job(:'job')),
    $$VALUES ('dead')$$,
    'the second failure of step 2 is final'
);
SELECT results_eq(
    format('SELECT attempt, total_attempts FROM pgrun.jobs WHERE id = %L', :'job'),
    $$VALUES (2, 4)$$,
    'two attempts of this step, four claims in all'
);

SELECT * FROM finish();
ROLLBACK;
