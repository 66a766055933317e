-- set_job_runtime_config refuses a malformed type and a cap that is not positive or contradicts a clear.
BEGIN;
SELECT plan(6);

SELECT pgrun.set_job_runtime_config('mail.send', max_concurrency => 4);

-- TEST: type
SELECT throws_ok($$SELECT pgrun.set_job_runtime_config(NULL, paused => true)$$, 'RQ003', 'job.invalid_type', 'NULL type');
SELECT throws_ok($$SELECT pgrun.set_job_runtime_config('Mail Send', paused => true)$$, 'RQ003', 'job.invalid_type', 'malformed type');

-- TEST: cap
SELECT throws_ok($$SELECT pgrun.set_job_runtime_config('mail.send', max_concurrency => 0)$$, 'RQ003', 'job.invalid_max_concurrency', 'a zero cap');
SELECT throws_ok($$SELECT pgrun.set_job_runtime_config('mail.send', max_concurrency => -2)$$, 'RQ003', 'job.invalid_max_concurrency', 'a negative cap');
SELECT throws_ok(
    $$SELECT pgrun.set_job_runtime_config('mail.send', max_concurrency => 2, clear_max_concurrency => true)$$,
    'RQ003', 'job.invalid_max_concurrency', 'a cap and a clear together'
);

-- TEST: nothing changed
SELECT is((SELECT max_concurrency FROM pgrun.job_runtime_configs WHERE job_type = 'mail.send'), 4, 'the cap is still 4');

SELECT * FROM finish();
ROLLBACK;
