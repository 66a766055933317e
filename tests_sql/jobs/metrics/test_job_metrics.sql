-- job_metrics: counts by status, and over the last 5 minutes throughput, latency and duration
-- percentiles and crash counts, per job type and queue.
BEGIN;
SELECT plan(5);

-- SETUP: now is 12:00; the window starts at 11:55
SELECT pgrun_test.freeze_time('2030-01-01 12:00:00+00');
-- five successes in the window: latencies 1..5 s, durations 10, 20, 30, 40, 50 s
SELECT pgrun_test.put_job(
    'mail.send', 'mail', 'succeeded',
    p_run_at => '2030-01-01 11:56:00+00',
    p_started_at => '2030-01-01 11:56:00+00'::timestamptz + n * interval '1 second',
    p_finished_at => '2030-01-01 11:56:00+00'::timestamptz + n * interval '1 second' + n * interval '10 seconds'
)
FROM generate_series(1, 5) AS n;
-- an old success, outside the window
SELECT pgrun_test.put_job(
    'mail.send', 'mail', 'succeeded',
    p_run_at => '2030-01-01 10:00:00+00', p_started_at => '2030-01-01 10:00:00+00',
    p_finished_at => '2030-01-01 10:01:00+00'
);
SELECT pgrun_test.put_job('mail.send', 'mail', 'queued');
SELECT pgrun_test.put_job('mail.send', 'mail', 'running', p_run_at => '2030-01-01 11:59:00+00', p_started_at => '2030-01-01 11:59:30+00');
SELECT pgrun_test.put_job('mail.send', 'mail', 'dead', p_started_at => '2030-01-01 09:00:00+00', p_finished_at => '2030-01-01 09:00:01+00') AS dead \gset
SELECT pgrun_test.put_job('mail.send', 'mail', 'cancelled', p_finished_at => '2030-01-01 09:00:00+00');
-- crashes: two in the window, one before it
SELECT pgrun_test.put_attempt(:'dead', 1, 'crashed', '2030-01-01 11:57:00+00', '2030-01-01 11:58:00+00');
SELECT pgrun_test.put_attempt(:'dead', 2, 'lease_expired', '2030-01-01 11:58:00+00', '2030-01-01 11:59:00+00');
SELECT pgrun_test.put_attempt(:'dead', 3, 'crashed', '2030-01-01 09:00:00+00', '2030-01-01 09:00:01+00');
SELECT pgrun_test.put_job('report.build', 'reports', 'queued');

-- TEST: counts by status cover every row
SELECT results_eq(
    $$SELECT job_type, queue, queued, running, succeeded, dead, cancelled FROM pgrun.job_metrics() ORDER BY job_type$$,
    $$VALUES ('mail.send'::text, 'mail'::text, 1::bigint, 1::bigint, 6::bigint, 1::bigint, 1::bigint),
             ('report.build', 'reports', 1, 0, 0, 0, 0)$$,
    'one row per type and queue with counts by status'
);

-- TEST: the window
SELECT is(
    (SELECT window_start FROM pgrun.job_metrics() WHERE job_type = 'mail.send'),
    '2030-01-01 11:55:00+00'::timestamptz,
    'the window is the last 5 minutes by pgrun.now()'
);
SELECT is(
    (SELECT succeeded_per_minute FROM pgrun.job_metrics() WHERE job_type = 'mail.send'),
    1.00,
    'five successes in five minutes: 1 per minute'
);

-- TEST: percentiles over the window (the running job counts for latency: 30 s)
SELECT results_eq(
    $$SELECT latency_p50_seconds, latency_p95_seconds, duration_p50_seconds, duration_p95_seconds
      FROM pgrun.job_metrics() WHERE job_type = 'mail.send'$$,
    $$VALUES (3.5::double precision, 23.75::double precision, 30::double precision, 48::double precision)$$,
    'latency over jobs started in the window, duration over jobs finished in it'
);

-- TEST: crashes in the window
SELECT results_eq(
    $$SELECT crashed, lease_expired FROM pgrun.job_metrics() ORDER BY job_type$$,
    $$VALUES (1::bigint, 1::bigint), (0, 0)$$,
    'attempts that crashed or lost their lease in the window; zero where none'
);

SELECT * FROM finish();
ROLLBACK;
