-- fire_schedule's errors: arguments, unknown schedule, a claim that is no longer ours (taken
-- over, expired, never held), a schedule that is not active. Each refusal writes nothing.
BEGIN;
SELECT plan(18);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT pgrun_test.make_schedule('five') AS s \gset
SELECT pgrun_test.freeze_time('2030-01-01 00:10:00+00');
SELECT gen_random_uuid() AS any_token \gset

-- TEST: arguments (checked before the schedule is looked up, so any token will do)
SELECT throws_ok(format($$SELECT pgrun.fire_schedule(NULL, '{}', '2030-01-01 00:15:00+00', %L)$$, :'any_token'),
    'RQ003', 'schedule.invalid_argument', 'a NULL schedule_id is refused');
SELECT throws_ok(format($$SELECT pgrun.fire_schedule(%L, '{}', '2030-01-01 00:15:00+00')$$, :'s'),
    'RQ003', 'schedule.invalid_argument', 'no claim_token is refused: firing needs a claim');
SELECT throws_ok(format($$SELECT pgrun.fire_schedule(%L, NULL, '2030-01-01 00:15:00+00', %L)$$, :'s', :'any_token'),
    'RQ003', 'schedule.invalid_plan_times', 'NULL plan_times are refused');
SELECT throws_ok(format($$SELECT pgrun.fire_schedule(%L, ARRAY[NULL]::timestamptz[], '2030-01-01 00:15:00+00', %L)$$,
    :'s', :'any_token'),
    'RQ003', 'schedule.invalid_plan_times', 'a NULL plan time is refused');
SELECT throws_ok(format($$SELECT pgrun.fire_schedule(%L, '{{2030-01-01,2030-01-01}}', '2030-01-02', %L)$$,
    :'s', :'any_token'),
    'RQ003', 'schedule.invalid_plan_times', 'a two-dimensional array is refused');
SELECT throws_ok(format($$SELECT pgrun.fire_schedule(%L, '{2030-01-01 00:15:00+00}', '2030-01-01 00:20:00+00', %L)$$,
    :'s', :'any_token'),
    'RQ003', 'schedule.invalid_plan_times', 'a plan time after the database''s now is refused');
SELECT throws_ok(format($$SELECT pgrun.fire_schedule(%L, '{2030-01-01 00:05:00+00}', '2030-01-01 00:20:00+00', %L,
    planned_until => '2030-01-01 00:01:00+00')$$, :'s', :'any_token'),
    'RQ003', 'schedule.invalid_plan_times', 'planned_until before a plan time is refused');
SELECT throws_ok(format($$SELECT pgrun.fire_schedule(%L, '{2030-01-01 00:05:00+00}', '2030-01-01 00:05:00+00', %L)$$,
    :'s', :'any_token'),
    'RQ003', 'schedule.invalid_next_run_at', 'next_run_at not after the plan times is refused');
SELECT throws_ok(format($$SELECT pgrun.fire_schedule(%L, '{}', NULL, %L)$$, :'s', :'any_token'),
    'RQ003', 'schedule.invalid_next_run_at', 'a NULL next_run_at is refused');
SELECT throws_ok(format($$SELECT pgrun.fire_schedule(%L, '{}', '9999-01-01', %L)$$, :'s', :'any_token'),
    'RQ003', 'schedule.invalid_next_run_at', 'a next_run_at more than 10 years ahead is refused (it would stop the schedule)');
SELECT lives_ok(format($$SELECT pgrun.fire_schedule(%L, '{}', '2039-12-31 00:00:00+00', %L)$$,
    :'s', pgrun_test.claim_schedule(:'s')),
    'a next_run_at just under 10 years ahead is accepted');

-- TEST: unknown schedule
SELECT throws_ok(format($$SELECT pgrun.fire_schedule(gen_random_uuid(), '{}', '2030-01-01 00:15:00+00', %L)$$, :'any_token'),
    'RQ002', 'schedule.not_found', 'an unknown schedule is not found');

-- TEST: a token that never held the schedule
SELECT throws_ok(format($$SELECT pgrun.fire_schedule(%L, '{2030-01-01 00:10:00+00}', '2030-01-01 00:15:00+00', %L)$$,
    :'s', :'any_token'),
    'RQ004', 'schedule.claim_lost', 'a token that is not the schedule''s claim fires nothing');

-- TEST: a claim that is no longer ours
UPDATE pgrun.job_schedules SET next_run_at = '2030-01-01 00:10:00+00' WHERE id = :'s';
SELECT claim_token AS old FROM pgrun.claim_due_schedules('s1', 1, 1) \gset
SELECT pgrun_test.freeze_time('2030-01-01 00:10:05+00');
SELECT pgrun.claim_due_schedules('s2', 1, 30);
SELECT throws_ok(format($$SELECT pgrun.fire_schedule(%L, '{2030-01-01 00:10:00+00}', '2030-01-01 00:15:00+00', %L)$$,
    :'s', :'old'),
    'RQ004', 'schedule.claim_lost', 'a fire under a claim another scheduler took over is refused');

-- TEST: our own claim, expired (nobody took it over): no grace
SELECT pgrun_test.claim_schedule(:'s') AS mine \gset
SELECT pgrun_test.advance_time('61 seconds');
SELECT throws_ok(format($$SELECT pgrun.fire_schedule(%L, '{2030-01-01 00:10:00+00}', '2030-01-01 00:15:00+00', %L)$$,
    :'s', :'mine'),
    'RQ004', 'schedule.claim_lost', 'a fire under an expired claim is refused');

-- TEST: a paused or disabled schedule never fires, even holding a claim
SELECT pgrun_test.claim_schedule(:'s') AS mine \gset
UPDATE pgrun.job_schedules SET paused_at = pgrun.now() WHERE id = :'s';
SELECT throws_ok(format($$SELECT pgrun.fire_schedule(%L, '{2030-01-01 00:10:00+00}', '2030-01-01 00:15:00+00', %L)$$,
    :'s', :'mine'),
    'RQ001', 'schedule.not_active', 'a paused schedule does not fire');
UPDATE pgrun.job_schedules SET paused_at = NULL, enabled = false WHERE id = :'s';
SELECT throws_ok(format($$SELECT pgrun.fire_schedule(%L, '{2030-01-01 00:10:00+00}', '2030-01-01 00:15:00+00', %L)$$,
    :'s', :'mine'),
    'RQ001', 'schedule.not_active', 'a disabled schedule does not fire');

SELECT is((SELECT count(*) FROM pgrun.schedule_ticks), 0::bigint, 'and none of them wrote a tick');

SELECT * FROM finish();
ROLLBACK;
