-- fire_schedule makes one job per plan time, ever: firing the same plan times again (another
-- scheduler, a retry) returns the same jobs with created = false and makes nothing.
BEGIN;
SELECT plan(13);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT pgrun.upsert_job_definition('test.cron', queue => 'cron', max_attempts => 3);
SELECT pgrun_test.make_schedule('five', p_catch_up => 'all') AS s \gset
SELECT pgrun_test.freeze_time('2030-01-01 00:10:00+00');
SELECT claim_token AS tok FROM pgrun.claim_due_schedules('sched-1') \gset

-- TEST: the first fire
SELECT is(
    (SELECT count(*) FILTER (WHERE created) FROM pgrun.fire_schedule(:'s',
        ARRAY['2030-01-01 00:05:00+00', '2030-01-01 00:10:00+00']::timestamptz[],
        '2030-01-01 00:15:00+00', :'tok', '2030-01-01 00:10:00+00', 'sched-1')),
    2::bigint, 'two plan times make two jobs');
SELECT is((SELECT count(*) FROM pgrun.jobs WHERE schedule_id = :'s'), 2::bigint, 'the jobs carry schedule_id');
SELECT set_eq($$SELECT run_at FROM pgrun.jobs$$,
    ARRAY['2030-01-01 00:05:00+00', '2030-01-01 00:10:00+00']::timestamptz[], 'run_at is the plan time');
SELECT is((SELECT DISTINCT queue || '/' || max_attempts FROM pgrun.jobs), 'cron/3',
    'settings left out come from the job definition');
SELECT is((SELECT count(*) FROM pgrun.job_events), 0::bigint, 'the fire writes no event (the jobs record it)');
SELECT is(
    (SELECT (planned_until, next_run_at, last_plan_at, last_fired_at, claim_token)::text
     FROM pgrun.job_schedules WHERE id = :'s'),
    ROW('2030-01-01 00:10:00+00'::timestamptz, '2030-01-01 00:15:00+00'::timestamptz,
        '2030-01-01 00:10:00+00'::timestamptz, '2030-01-01 00:10:00+00'::timestamptz, NULL::uuid)::text,
    'the schedule moves on and its claim is released');
SELECT is((SELECT fired_by FROM pgrun.schedule_ticks LIMIT 1), 'sched-1', 'the tick names its scheduler');

-- TEST: the same plan times again, by anyone
SELECT is(
    (SELECT count(*) FILTER (WHERE created) FROM pgrun.fire_schedule(:'s',
        ARRAY['2030-01-01 00:05:00+00', '2030-01-01 00:10:00+00', '2030-01-01 00:10:00+00']::timestamptz[],
        '2030-01-01 00:15:00+00', pgrun_test.claim_schedule(:'s'))),
    0::bigint, 'firing them again creates nothing');
SELECT set_eq(
    $$SELECT job_id FROM pgrun.fire_schedule((SELECT id FROM pgrun.job_schedules),
        ARRAY['2030-01-01 00:10:00+00']::timestamptz[], '2030-01-01 00:15:00+00',
        pgrun_test.claim_schedule((SELECT id FROM pgrun.job_schedules)))$$,
    $$SELECT job_id FROM pgrun.schedule_ticks WHERE plan_time = '2030-01-01 00:10:00+00'$$,
    'and returns the job the tick made');
SELECT is((SELECT count(*) FROM pgrun.jobs), 2::bigint, 'still two jobs');
SELECT is(pgrun_test.fire(:'s', ARRAY['2030-01-01 00:05:00+00', '2030-01-01 00:00:00+00']::timestamptz[]),
    1::bigint, 'a mix of old and new plan times makes jobs only for the new');

-- TEST: an empty plan moves the schedule on without a job
SELECT is((SELECT count(*) FROM pgrun.fire_schedule(:'s', '{}', '2030-01-01 00:20:00+00',
    pgrun_test.claim_schedule(:'s'), planned_until => '2030-01-01 00:10:00+00')), 0::bigint,
    'an empty plan returns no rows');
SELECT is((SELECT next_run_at FROM pgrun.job_schedules WHERE id = :'s'), '2030-01-01 00:20:00+00'::timestamptz,
    'but sets next_run_at');

SELECT * FROM finish();
ROLLBACK;
