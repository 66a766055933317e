-- run_schedule_now: the admin's manual "run now". One tick and one job per scope at the
-- database's now, through the same insert the scheduler uses; a second call at the same
-- instant makes nothing; the planning state stays (the cron still owes every plan time);
-- paused, disabled and unknown schedules are refused and nothing is written.
BEGIN;
SELECT plan(12);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT pgrun.upsert_job_definition('test.cron', queue => 'cron');
SELECT pgrun_test.make_schedule('five') AS s \gset
SELECT pgrun_test.make_schedule('per-key', p_scope_kind => 'key', p_scopes => '{b,a}') AS k \gset
SELECT pgrun_test.freeze_time('2030-01-01 00:02:30+00');
SELECT (planned_until, next_run_at, last_plan_at)::text AS planning FROM pgrun.job_schedules WHERE id = :'s' \gset

-- TEST: one job now
SELECT is(
    (SELECT (plan_time, scope, created)::text FROM pgrun.run_schedule_now('five')),
    ('2030-01-01 00:02:30+00'::timestamptz, '', true)::text,
    'one tick at the database''s now, and its job'
);
SELECT is(
    (SELECT (queue, run_at, schedule_id)::text FROM pgrun.jobs WHERE schedule_id = :'s'),
    ('cron', '2030-01-01 00:02:30+00'::timestamptz, :'s'::uuid)::text,
    'an ordinary job of the schedule, ready now, with the definition''s queue'
);
SELECT is((SELECT count(*) FILTER (WHERE created) FROM pgrun.run_schedule_now('five')), 0::bigint,
    'a second call at the same instant makes nothing');
SELECT is((SELECT count(*) FROM pgrun.jobs WHERE schedule_id = :'s'), 1::bigint, 'still one job');
SELECT is(
    (SELECT (planned_until, next_run_at, last_plan_at)::text FROM pgrun.job_schedules WHERE id = :'s'), :'planning',
    'the planning state is untouched: no plan time the cron owes is skipped'
);
SELECT is((SELECT last_fired_at FROM pgrun.job_schedules WHERE id = :'s'), '2030-01-01 00:02:30+00'::timestamptz,
    'last_fired_at says when it fired');
SELECT is((SELECT count(*) FILTER (WHERE created) FROM pgrun.run_schedule_now('per-key')), 2::bigint,
    'a scoped schedule makes one job per scope');

-- TEST: refusals
SELECT pgrun.pause_schedule('five');
SELECT throws_ok($$SELECT pgrun.run_schedule_now('five')$$, 'RQ001', 'schedule.not_active', 'a paused schedule does not run');
SELECT pgrun.resume_schedule('five');
SELECT pgrun.upsert_schedule('five', '*/5 * * * *', 'test.cron', catch_up => 'latest', enabled => false);
SELECT throws_ok($$SELECT pgrun.run_schedule_now('five')$$, 'RQ001', 'schedule.not_active', 'a disabled schedule does not run');
SELECT throws_ok($$SELECT pgrun.run_schedule_now('nope')$$, 'RQ002', 'schedule.not_found', 'an unknown schedule is not found');
SELECT throws_ok($$SELECT pgrun.run_schedule_now(NULL)$$, 'RQ003', 'schedule.invalid_name', 'a NULL name is refused');
SELECT is((SELECT count(*) FROM pgrun.jobs WHERE schedule_id = :'s'), 1::bigint, 'none of them made a job');

SELECT * FROM finish();
ROLLBACK;
