-- pause_schedule stops claims (and drops a current claim); resume_schedule makes the schedule
-- due at once and replays the paused window only for catch_up all.
BEGIN;
SELECT plan(12);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT pgrun_test.make_schedule('latest', p_catch_up => 'latest') AS l \gset
SELECT pgrun_test.make_schedule('all', p_catch_up => 'all') AS a \gset
SELECT pgrun_test.make_schedule('none', p_catch_up => 'none') AS n \gset
SELECT pgrun_test.freeze_time('2030-01-01 00:10:00+00');
SELECT pgrun.claim_due_schedules('s1', 10, 600);

-- TEST: pause
SELECT is((SELECT changed FROM pgrun.pause_schedule('latest')), TRUE, 'pausing changes the schedule');
SELECT is((SELECT changed FROM pgrun.pause_schedule('latest')), FALSE, 'pausing again changes nothing');
SELECT is(pgrun_test.claim_token_of(:'l'), NULL, 'the current claim is dropped');
SELECT pgrun.pause_schedule('all');
SELECT pgrun.pause_schedule('none');
SELECT pgrun_test.freeze_time('2030-01-01 02:00:00+00');
SELECT is_empty($$SELECT * FROM pgrun.claim_due_schedules('s2')$$, 'paused schedules are not claimed');

-- TEST: resume
SELECT pgrun_test.freeze_time('2030-01-01 03:00:00+00');
SELECT is((SELECT (changed, next_run_at)::text FROM pgrun.resume_schedule('latest')),
    ROW(TRUE, '2030-01-01 03:00:00+00'::timestamptz)::text, 'resuming makes the schedule due at once');
SELECT is((SELECT changed FROM pgrun.resume_schedule('latest')), FALSE, 'resuming again changes nothing');
SELECT pgrun.resume_schedule('all');
SELECT pgrun.resume_schedule('none');
SELECT is((SELECT planned_until FROM pgrun.job_schedules WHERE id = :'l'), '2030-01-01 03:00:00+00'::timestamptz,
    'latest: the paused window is not owed');
SELECT is((SELECT planned_until FROM pgrun.job_schedules WHERE id = :'n'), '2030-01-01 03:00:00+00'::timestamptz,
    'none: the paused window is not owed');
SELECT is((SELECT planned_until FROM pgrun.job_schedules WHERE id = :'a'), '2030-01-01 00:00:00+00'::timestamptz,
    'all: the paused window is owed (replayed up to backfill_limit)');
SELECT set_eq($$SELECT schedule_id FROM pgrun.claim_due_schedules('s3')$$, ARRAY[:'l', :'a', :'n']::uuid[],
    'all three are claimable again');

-- TEST: unknown names
SELECT throws_ok($$SELECT pgrun.pause_schedule('nope')$$, 'RQ002', 'schedule.not_found', 'pause: not found');
SELECT throws_ok($$SELECT pgrun.resume_schedule('latest', '11111111-1111-1111-1111-111111111111')$$,
    'RQ002', 'schedule.not_found', 'resume: another organization''s name is not found');

SELECT * FROM finish();
ROLLBACK;
