-- upsert_schedule creates, restates without a write when nothing changed, and on a change
-- drops the current claim and re-plans at once; an operator's pause survives it.
BEGIN;
SELECT plan(11);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT schedule_id AS s1 FROM pgrun.upsert_schedule('nightly', '0 3 * * *', 'test.cron') \gset

-- TEST: a new schedule
SELECT is((SELECT (planned_until, next_run_at)::text FROM pgrun.job_schedules WHERE id = :'s1'),
    ROW('2030-01-01 00:00:00+00'::timestamptz, '2030-01-01 00:00:00+00'::timestamptz)::text,
    'a new schedule owes nothing before its creation and is due at once (to be planned)');
SELECT is((SELECT cron FROM pgrun.job_schedules WHERE id = :'s1'), '0 3 * * *', 'the expression is stored');

-- TEST: the same declaration again
SELECT pgrun_test.freeze_time('2030-01-01 00:05:00+00');
SELECT is((SELECT (created, changed)::text FROM pgrun.upsert_schedule('nightly', '0  3 * * *', 'test.cron')),
    '(f,f)', 'an identical restatement (blanks aside) changes nothing');
SELECT is((SELECT updated_at FROM pgrun.job_schedules WHERE id = :'s1'), '2030-01-01 00:00:00+00'::timestamptz,
    'and writes nothing');

-- TEST: a change drops the claim and re-plans
SELECT pgrun.claim_due_schedules('sched-1');
SELECT isnt(pgrun_test.claim_token_of(:'s1'), NULL, 'claimed');
SELECT is((SELECT (created, changed)::text FROM pgrun.upsert_schedule('nightly', '0 4 * * *', 'test.cron')),
    '(f,t)', 'a changed expression is a change');
SELECT is(pgrun_test.claim_token_of(:'s1'), NULL, 'the claim is dropped');
SELECT is((SELECT next_run_at FROM pgrun.job_schedules WHERE id = :'s1'), pgrun.now(), 'due again at once');

-- TEST: a pause survives an upsert
SELECT pgrun.pause_schedule('nightly');
SELECT pgrun.upsert_schedule('nightly', '0 5 * * *', 'test.cron', priority => 7);
SELECT isnt((SELECT paused_at FROM pgrun.job_schedules WHERE id = :'s1'), NULL, 'still paused after a change');

-- TEST: name per organization
SELECT isnt(
    (SELECT schedule_id FROM pgrun.upsert_schedule('nightly', '0 3 * * *', 'test.cron',
        organization_id => '11111111-1111-1111-1111-111111111111')),
    :'s1'::uuid, 'the same name in an organization is another schedule');
SELECT is((SELECT count(*) FROM pgrun.job_schedules), 2::bigint, 'two schedules');

SELECT * FROM finish();
ROLLBACK;
