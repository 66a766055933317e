-- The nil uuid is no organization's id: pause, resume, delete, run_schedule_now and
-- list_schedules refuse it (schedule.invalid_organization), as enqueue_job refuses it
-- (job.invalid_organization), instead of acting on the schedule without an organization.
BEGIN;
SELECT plan(7);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT pgrun_test.make_schedule('plain') AS s \gset
SELECT pgrun_test.fingerprint() AS before \gset

-- TEST: each refuses it
SELECT throws_ok($$SELECT pgrun.pause_schedule('plain', '00000000-0000-0000-0000-000000000000')$$,
    'RQ003', 'schedule.invalid_organization', 'pause_schedule refuses the nil uuid');
SELECT throws_ok($$SELECT pgrun.resume_schedule('plain', '00000000-0000-0000-0000-000000000000')$$,
    'RQ003', 'schedule.invalid_organization', 'resume_schedule refuses the nil uuid');
SELECT throws_ok($$SELECT pgrun.delete_schedule('plain', '00000000-0000-0000-0000-000000000000')$$,
    'RQ003', 'schedule.invalid_organization', 'delete_schedule refuses the nil uuid');
SELECT throws_ok($$SELECT pgrun.run_schedule_now('plain', '00000000-0000-0000-0000-000000000000')$$,
    'RQ003', 'schedule.invalid_organization', 'run_schedule_now refuses the nil uuid');
SELECT throws_ok($$SELECT pgrun.list_schedules('00000000-0000-0000-0000-000000000000')$$,
    'RQ003', 'schedule.invalid_organization', 'list_schedules refuses the nil uuid');
SELECT is(pgrun_test.fingerprint(), :'before', 'the schedule without an organization was not touched');

-- TEST: without an organization it is still found
SELECT is((SELECT changed FROM pgrun.pause_schedule('plain')), true, 'NULL names the schedule without one');

SELECT * FROM finish();
ROLLBACK;
