-- delete_schedule removes the schedule and its ticks, not its jobs; list_schedules shows next
-- and last fire times, per organization when asked.
BEGIN;
SELECT plan(9);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT pgrun_test.make_schedule('gone') AS g \gset
SELECT pgrun_test.make_schedule('org', p_organization_id => '11111111-1111-1111-1111-111111111111') AS o \gset
SELECT pgrun_test.freeze_time('2030-01-01 00:10:00+00');
SELECT pgrun_test.fire(:'g', '{2030-01-01 00:05:00+00,2030-01-01 00:10:00+00}');

-- TEST: list
SELECT is((SELECT (next_run_at, last_plan_at, last_fired_at)::text FROM pgrun.list_schedules() WHERE name = 'gone'),
    ROW('2030-01-01 01:10:00+00'::timestamptz, '2030-01-01 00:10:00+00'::timestamptz,
        '2030-01-01 00:10:00+00'::timestamptz)::text,
    'list_schedules shows the next run and the last plan time and fire');
SELECT is((SELECT count(*) FROM pgrun.list_schedules()), 2::bigint, 'without an organization: all schedules');
SELECT is((SELECT array_agg(name) FROM pgrun.list_schedules('11111111-1111-1111-1111-111111111111')),
    ARRAY['org'], 'with one: only its schedules');

-- TEST: delete
SELECT is((SELECT ticks_deleted FROM pgrun.delete_schedule('gone')), 2::bigint, 'delete reports its ticks');
SELECT is((SELECT count(*) FROM pgrun.job_schedules WHERE id = :'g'), 0::bigint, 'the schedule is gone');
SELECT is((SELECT count(*) FROM pgrun.schedule_ticks), 0::bigint, 'with its ticks');
SELECT is((SELECT count(*) FROM pgrun.jobs WHERE schedule_id = :'g'), 2::bigint, 'its jobs stay');
SELECT throws_ok($$SELECT pgrun.delete_schedule('gone')$$, 'RQ002', 'schedule.not_found', 'deleting again: not found');
SELECT throws_ok($$SELECT pgrun.delete_schedule(NULL)$$, 'RQ003', 'schedule.invalid_name', 'a NULL name is refused');

SELECT * FROM finish();
ROLLBACK;
