-- upsert_job_definition checks every argument and raises a pgrun code, never a CHECK violation.
BEGIN;
SELECT plan(16);

-- TEST: job type
SELECT throws_ok($$SELECT pgrun.upsert_job_definition(NULL)$$, 'RQ003', 'job.invalid_type', 'NULL type');
SELECT throws_ok($$SELECT pgrun.upsert_job_definition('Mail')$$, 'RQ003', 'job.invalid_type', 'upper-case type');
SELECT throws_ok(
    format('SELECT pgrun.upsert_job_definition(%L)', repeat('a', 129)),
    'RQ003', 'job.invalid_type', 'a type over 128 characters'
);

-- TEST: queue, priority, attempts, timeout
SELECT throws_ok($$SELECT pgrun.upsert_job_definition('a', queue => '9lives')$$, 'RQ003', 'job.invalid_queue', 'a queue starting with a digit');
SELECT throws_ok($$SELECT pgrun.upsert_job_definition('a', priority => -1)$$, 'RQ003', 'job.invalid_priority', 'negative priority');
SELECT throws_ok($$SELECT pgrun.upsert_job_definition('a', priority => 40000)$$, 'RQ003', 'job.invalid_priority', 'priority over 32767');
SELECT throws_ok($$SELECT pgrun.upsert_job_definition('a', max_attempts => 0)$$, 'RQ003', 'job.invalid_max_attempts', 'zero attempts');
SELECT throws_ok($$SELECT pgrun.upsert_job_definition('a', max_attempts => 1001)$$, 'RQ003', 'job.invalid_max_attempts', 'over 1000 attempts');
SELECT throws_ok($$SELECT pgrun.upsert_job_definition('a', timeout_seconds => 0)$$, 'RQ003', 'job.invalid_timeout', 'zero timeout');
SELECT throws_ok($$SELECT pgrun.upsert_job_definition('a', timeout_seconds => -1)$$, 'RQ003', 'job.invalid_timeout', 'negative timeout');

-- TEST: backoff
SELECT throws_ok($$SELECT pgrun.upsert_job_definition('a', backoff_base_seconds => -1)$$, 'RQ003', 'job.invalid_backoff', 'negative base');
SELECT throws_ok($$SELECT pgrun.upsert_job_definition('a', backoff_base_seconds => 10, backoff_max_seconds => 5)$$, 'RQ003', 'job.invalid_backoff', 'cap below base');
SELECT throws_ok($$SELECT pgrun.upsert_job_definition('a', backoff_jitter => 1)$$, 'RQ003', 'job.invalid_backoff', 'jitter of 1');
SELECT throws_ok($$SELECT pgrun.upsert_job_definition('a', backoff_max_seconds => 'Infinity')$$, 'RQ003', 'job.invalid_backoff', 'an infinite cap');
SELECT throws_ok($$SELECT pgrun.upsert_job_definition('a', backoff_jitter => 'NaN')$$, 'RQ003', 'job.invalid_backoff', 'NaN jitter');

-- TEST: nothing written
SELECT is((SELECT count(*) FROM pgrun.job_definitions), 0::bigint, 'no definition was stored');

SELECT * FROM finish();
ROLLBACK;
