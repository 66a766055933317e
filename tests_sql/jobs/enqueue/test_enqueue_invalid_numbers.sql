-- Out-of-range queue, priority, max_attempts and timeout each raise their own code.
BEGIN;
SELECT plan(12);

-- TEST: queue
SELECT throws_ok($$SELECT * FROM pgrun.enqueue_job('a', queue => 'Bulk')$$, 'RQ003', 'job.invalid_queue', 'upper-case queue');
SELECT throws_ok($$SELECT * FROM pgrun.enqueue_job('a', queue => '')$$, 'RQ003', 'job.invalid_queue', 'empty queue');
SELECT throws_ok(
    format('SELECT * FROM pgrun.enqueue_job(%L, queue => %L)', 'a', repeat('q', 65)),
    'RQ003', 'job.invalid_queue', 'queue longer than 64'
);

-- TEST: priority 0..32767
SELECT throws_ok($$SELECT * FROM pgrun.enqueue_job('a', priority => -1)$$, 'RQ003', 'job.invalid_priority', 'negative priority');
SELECT throws_ok($$SELECT * FROM pgrun.enqueue_job('a', priority => 32768)$$, 'RQ003', 'job.invalid_priority', 'priority above 32767');

-- TEST: max_attempts 1..1000
SELECT throws_ok($$SELECT * FROM pgrun.enqueue_job('a', max_attempts => 0)$$, 'RQ003', 'job.invalid_max_attempts', 'zero attempts');
SELECT throws_ok($$SELECT * FROM pgrun.enqueue_job('a', max_attempts => -3)$$, 'RQ003', 'job.invalid_max_attempts', 'negative attempts');
SELECT throws_ok($$SELECT * FROM pgrun.enqueue_job('a', max_attempts => 1001)$$, 'RQ003', 'job.invalid_max_attempts', 'more than 1000 attempts');

-- TEST: timeout > 0
SELECT throws_ok($$SELECT * FROM pgrun.enqueue_job('a', timeout_seconds => 0)$$, 'RQ003', 'job.invalid_timeout', 'zero timeout');
SELECT throws_ok($$SELECT * FROM pgrun.enqueue_job('a', timeout_seconds => -5)$$, 'RQ003', 'job.invalid_timeout', 'negative timeout');

-- TEST: the bounds themselves are fine
SELECT is(
    (SELECT count(*) FROM pgrun.enqueue_jobs(
        '[{"job_type": "a", "priority": 0, "max_attempts": 1, "timeout_seconds": 1, "queue": "q"},
          {"job_type": "a", "priority": 32767, "max_attempts": 1000, "queue": "a.b:c-d_e"}]'
    )),
    2::bigint,
    'priority 0 and 32767, attempts 1 and 1000, timeout 1, dotted queue names are accepted'
);
SELECT is((SELECT count(*) FROM pgrun.jobs), 2::bigint, 'the refused calls wrote nothing');

SELECT * FROM finish();
ROLLBACK;
