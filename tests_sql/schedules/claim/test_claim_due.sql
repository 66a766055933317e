-- claim_due_schedules: which schedules are due, claims keep other schedulers away until they
-- expire, and its argument errors.
BEGIN;
SELECT plan(10);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT pgrun_test.make_schedule('a') AS a \gset
SELECT pgrun_test.make_schedule('b') AS b \gset
SELECT pgrun_test.make_schedule('off') AS off \gset
SELECT pgrun.upsert_schedule('off', '*/5 * * * *', 'test.cron', enabled => FALSE);
SELECT pgrun_test.make_schedule('paused') AS paused \gset
SELECT pgrun.pause_schedule('paused');
SELECT pgrun_test.freeze_time('2030-01-01 00:00:10+00');

-- TEST: due = enabled, not paused, next_run_at reached
SELECT set_eq($$SELECT schedule_id FROM pgrun.claim_due_schedules('s1', 10, 30)$$,
    ARRAY[:'a'::uuid, :'b'::uuid], 'enabled, unpaused, due schedules are claimed');
SELECT is((SELECT db_now FROM pgrun.claim_due_schedules('s2') LIMIT 1), NULL,
    'a live claim keeps the next scheduler away');
SELECT is((SELECT claimed_by FROM pgrun.job_schedules WHERE id = :'a'), 's1', 'the claim names its scheduler');

-- TEST: an expired claim is taken over; the rows carry the database's now
SELECT pgrun_test.freeze_time('2030-01-01 00:01:00+00');
SELECT schedule_id AS c1 FROM pgrun.claim_due_schedules('s2', 1, 30) \gset
SELECT schedule_id AS c2 FROM pgrun.claim_due_schedules('s2', 1, 30) \gset
SELECT set_eq(format('VALUES (%L::uuid), (%L::uuid)', :'c1', :'c2'),
    ARRAY[:'a'::uuid, :'b'::uuid], 'expired claims are claimed again, max_schedules at a time');
SELECT is((SELECT claimed_by FROM pgrun.job_schedules WHERE id = :'b'), 's2', 'by the new scheduler');
SELECT pgrun_test.freeze_time('2030-01-01 00:02:00+00');
SELECT is((SELECT db_now FROM pgrun.claim_due_schedules('s3') LIMIT 1), '2030-01-01 00:02:00+00'::timestamptz,
    'db_now is the database clock');

-- TEST: argument errors
SELECT throws_ok($$SELECT pgrun.claim_due_schedules(' ')$$,
    'RQ003', 'schedule.invalid_scheduler_id', 'a blank scheduler id is refused');
SELECT throws_ok($$SELECT pgrun.claim_due_schedules('s', 0)$$,
    'RQ003', 'schedule.invalid_max_schedules', 'max_schedules 0 is refused');
SELECT throws_ok($$SELECT pgrun.claim_due_schedules('s', 10, 0)$$,
    'RQ003', 'schedule.invalid_lease_seconds', 'lease_seconds 0 is refused');
SELECT throws_ok($$SELECT pgrun.claim_due_schedules('s', 10, 3601)$$,
    'RQ003', 'schedule.invalid_lease_seconds', 'lease_seconds over an hour is refused');

SELECT * FROM finish();
ROLLBACK;
