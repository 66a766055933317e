-- queue_depth counts ready, delayed and running jobs per queue and type, with the oldest wait.
BEGIN;
SELECT plan(3);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 12:00:00+00');
SELECT pgrun_test.put_job('mail.send', 'mail', 'queued', p_run_at => '2030-01-01 11:50:00+00');
SELECT pgrun_test.put_job('mail.send', 'mail', 'queued', p_run_at => '2030-01-01 11:59:00+00');
SELECT pgrun_test.put_job('mail.send', 'mail', 'queued', p_run_at => '2030-01-01 12:30:00+00');
SELECT pgrun_test.put_job('mail.send', 'mail', 'running');
SELECT pgrun_test.put_job('mail.send', 'mail', 'succeeded');
SELECT pgrun_test.put_job('report.build', 'reports', 'queued', p_run_at => '2030-01-02 00:00:00+00');
SELECT pgrun_test.put_job('report.build', 'reports', 'dead');
SELECT pgrun_test.put_job('old.type', 'default', 'succeeded');
SELECT pgrun.set_job_runtime_config('report.build', paused => true, max_concurrency => 2);

-- TEST: numbers per queue and type
SELECT results_eq(
    $$SELECT queue, job_type, ready, delayed, running, oldest_ready_age, paused, max_concurrency
      FROM pgrun.queue_depth() ORDER BY queue, job_type$$,
    $$VALUES
        ('mail'::text, 'mail.send'::text, 2::bigint, 1::bigint, 1::bigint, interval '10 minutes', false, NULL::integer),
        ('reports', 'report.build', 0, 1, 0, NULL, true, 2)$$,
    'two ready (oldest waiting 10 minutes), one delayed, one running; the paused, capped type shows it'
);

-- TEST: finished work is not depth
SELECT is_empty(
    $$SELECT * FROM pgrun.queue_depth() WHERE job_type = 'old.type'$$,
    'a type with only finished jobs has no row'
);

-- TEST: time moves the line between delayed and ready
SELECT pgrun_test.freeze_time('2030-01-01 12:30:00+00');
SELECT is(
    (SELECT ready || '/' || delayed FROM pgrun.queue_depth() WHERE job_type = 'mail.send'),
    '3/0',
    'at 12:30 the delayed job is ready'
);

SELECT * FROM finish();
ROLLBACK;
