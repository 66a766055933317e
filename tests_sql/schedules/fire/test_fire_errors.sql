-- fire_schedule's errors: arguments, unknown schedule, a claim that is no longer ours.
BEGIN;
SELECT plan(11);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT pgrun_test.make_schedule('five') AS s \gset
SELECT pgrun_test.freeze_time('2030-01-01 00:10:00+00');

-- TEST: arguments
SELECT throws_ok($$SELECT pgrun.fire_schedule(NULL, '{}', '2030-01-01 00:15:00+00')$$,
    'RQ003', 'schedule.invalid_argument', 'a NULL schedule_id is refused');
SELECT throws_ok(format($$SELECT pgrun.fire_schedule(%L, NULL, '2030-01-01 00:15:00+00')$$, :'s'),
    'RQ003', 'schedule.invalid_plan_times', 'NULL plan_times are refused');
SELECT throws_ok(format($$SELECT pgrun.fire_schedule(%L, ARRAY[NULL]::timestamptz[], '2030-01-01 00:15:00+00')$$, :'s'),
    'RQ003', 'schedule.invalid_plan_times', 'a NULL plan time is refused');
SELECT throws_ok(format($$SELECT pgrun.fire_schedule(%L, '{{2030-01-01,2030-01-01}}', '2030-01-02')$$, :'s'),
    'RQ003', 'schedule.invalid_plan_times', 'a two-dimensional array is refused');
SELECT throws_ok(format($$SELECT pgrun.fire_schedule(%L, '{2030-01-01 00:15:00+00}', '2030-01-01 00:20:00+00')$$, :'s'),
    'RQ003', 'schedule.invalid_plan_times', 'a plan time after the database''s now is refused');
SELECT throws_ok(format($$SELECT pgrun.fire_schedule(%L, '{2030-01-01 00:05:00+00}', '2030-01-01 00:20:00+00',
    planned_until => '2030-01-01 00:01:00+00')$$, :'s'),
    'RQ003', 'schedule.invalid_plan_times', 'planned_until before a plan time is refused');
SELECT throws_ok(format($$SELECT pgrun.fire_schedule(%L, '{2030-01-01 00:05:00+00}', '2030-01-01 00:05:00+00')$$, :'s'),
    'RQ003', 'schedule.invalid_next_run_at', 'next_run_at not after the plan times is refused');
SELECT throws_ok(format($$SELECT pgrun.fire_schedule(%L, '{}', NULL)$$, :'s'),
    'RQ003', 'schedule.invalid_next_run_at', 'a NULL next_run_at is refused');

-- TEST: unknown schedule
SELECT throws_ok($$SELECT pgrun.fire_schedule(gen_random_uuid(), '{}', '2030-01-01 00:15:00+00')$$,
    'RQ002', 'schedule.not_found', 'an unknown schedule is not found');

-- TEST: a claim that is no longer ours
SELECT claim_token AS old FROM pgrun.claim_due_schedules('s1', 1, 1) \gset
SELECT pgrun_test.freeze_time('2030-01-01 00:10:05+00');
SELECT pgrun.claim_due_schedules('s2', 1, 30);
SELECT throws_ok(format($$SELECT pgrun.fire_schedule(%L, '{2030-01-01 00:10:00+00}', '2030-01-01 00:15:00+00', %L)$$,
    :'s', :'old'),
    'RQ004', 'schedule.claim_lost', 'a fire under a claim another scheduler took over is refused');
SELECT is((SELECT count(*) FROM pgrun.schedule_ticks), 0::bigint, 'and writes nothing');

SELECT * FROM finish();
ROLLBACK;
