-- run_at and delay schedule a job for later; a past run_at is ready at once; they are exclusive.
BEGIN;
SELECT plan(8);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');

-- TEST: delay counts from pgrun.now()
SELECT is(
    (SELECT run_at FROM pgrun.enqueue_job('mail.send', delay => interval '5 minutes')),
    '2030-01-01 00:05:00+00'::timestamptz,
    'delay 5 minutes runs at now + 5 minutes'
);

-- TEST: run_at is taken as given
SELECT is(
    (SELECT run_at FROM pgrun.enqueue_job('mail.send', run_at => '2030-06-01 12:00:00+00')),
    '2030-06-01 12:00:00+00'::timestamptz,
    'an absolute run_at is stored as given'
);
SELECT is(
    (SELECT run_at FROM pgrun.enqueue_job('mail.send', run_at => '2029-12-31 00:00:00+00')),
    '2029-12-31 00:00:00+00'::timestamptz,
    'a run_at in the past is accepted (the job is ready at once)'
);

-- TEST: a delayed job is queued but not ready
SELECT is(
    (SELECT ready || '/' || delayed FROM pgrun.queue_depth() WHERE job_type = 'mail.send'),
    '1/2',
    'queue_depth counts the past one ready and the two future ones delayed'
);

-- TEST: zero delay is now
SELECT is(
    (SELECT run_at FROM pgrun.enqueue_job('mail.send', delay => interval '0 seconds')),
    '2030-01-01 00:00:00+00'::timestamptz,
    'a zero delay means now'
);

-- TEST: bad schedules
SELECT throws_ok(
    $$SELECT * FROM pgrun.enqueue_job('mail.send', run_at => '2030-02-01', delay => interval '1 minute')$$,
    'RQ003', 'job.invalid_schedule', 'run_at and delay together are refused'
);
SELECT throws_ok(
    $$SELECT * FROM pgrun.enqueue_job('mail.send', delay => interval '-1 second')$$,
    'RQ003', 'job.invalid_schedule', 'a negative delay is refused'
);
SELECT throws_ok(
    $$SELECT * FROM pgrun.enqueue_job('mail.send', run_at => 'infinity')$$,
    'RQ003', 'job.invalid_schedule', 'an infinite run_at is refused'
);

SELECT * FROM finish();
ROLLBACK;
