-- pause_unplannable_schedule: a scheduler that cannot plan a schedule it claimed (a stored
-- expression outside the grammar, from an older install; a zone it does not know) pauses it
-- with the reason, under its claim, instead of letting it be claimed again every lease.
BEGIN;
SELECT plan(18);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT pgrun_test.make_schedule('old') AS s \gset
SELECT pgrun_test.make_schedule('other') AS other \gset
-- an older install stored an expression the grammar now refuses
UPDATE pgrun.job_schedules SET cron = '0 0 15W * *' WHERE id = :'s';
SELECT pgrun_test.freeze_time('2030-01-01 00:10:00+00');
SELECT claim_token AS tok FROM pgrun.claim_due_schedules('sched-1', 10, 60) WHERE schedule_id = :'s' \gset
SELECT pgrun_test.fingerprint() AS before \gset

-- TEST: arguments and the claim
SELECT throws_ok(format($$SELECT pgrun.pause_unplannable_schedule(%L, NULL, 'x')$$, :'s'),
    'RQ003', 'schedule.invalid_argument', 'a NULL claim_token is refused');
SELECT throws_ok(format($$SELECT pgrun.pause_unplannable_schedule(NULL, %L, 'x')$$, :'tok'),
    'RQ003', 'schedule.invalid_argument', 'a NULL schedule_id is refused');
SELECT throws_ok(format($$SELECT pgrun.pause_unplannable_schedule(%L, %L, NULL)$$, :'s', :'tok'),
    'RQ003', 'schedule.invalid_argument', 'a NULL reason is refused');
SELECT throws_ok(format($$SELECT pgrun.pause_unplannable_schedule(%L, %L, '  ')$$, :'s', :'tok'),
    'RQ003', 'schedule.invalid_argument', 'a blank reason is refused');
SELECT throws_ok(format($$SELECT pgrun.pause_unplannable_schedule(%L, %L, 'x')$$, :'s', gen_random_uuid()),
    'RQ004', 'schedule.claim_lost', 'another token is not the claim');
SELECT throws_ok(format($$SELECT pgrun.pause_unplannable_schedule(%L, %L, 'x')$$, gen_random_uuid(), :'tok'),
    'RQ002', 'schedule.not_found', 'an unknown schedule is not found');
SELECT is(pgrun_test.fingerprint(), :'before', 'no refused call changed anything');

-- TEST: under the live claim it pauses the schedule with the reason
SELECT is((SELECT pgrun.pause_unplannable_schedule(:'s', :'tok',
    'cron ''0 0 15W * *'': day of month field ''15W'': not *, */S, A, A-B, A-B/S or A/S' || repeat('!', 2000))),
    '2030-01-01 00:10:00+00'::timestamptz, 'paused now');
SELECT is((SELECT (paused_at IS NOT NULL, claim_token IS NULL, length(paused_reason), left(paused_reason, 10))::text
    FROM pgrun.job_schedules WHERE id = :'s'), ROW(true, true, 1000, 'cron ''0 0 ')::text,
    'paused, claim released, the reason kept (clipped to 1000 characters)');
SELECT is((SELECT left(paused_reason, 10) FROM pgrun.list_schedules() WHERE name = 'old'), 'cron ''0 0 ',
    'list_schedules shows why');
SELECT is((SELECT count(*) FROM pgrun.audit_log WHERE action = 'schedule.paused' AND subject = :'s'
    AND detail ? 'reason'), 1::bigint, 'the audit log records the pause and its reason');
SELECT pgrun_test.advance_time(interval '1 hour');
SELECT is((SELECT count(*) FROM pgrun.claim_due_schedules('sched-2', 10, 60) WHERE schedule_id = :'s'), 0::bigint,
    'no scheduler claims it again');
SELECT throws_ok(format($$SELECT pgrun.pause_unplannable_schedule(%L, %L, 'x')$$, :'s', :'tok'),
    'RQ004', 'schedule.claim_lost', 'the claim is gone');

-- TEST: a restated declaration resumes it; an unchanged one does not
SELECT is((SELECT changed FROM pgrun.upsert_schedule('old', '*/5 * * * *', 'test.cron')), true,
    'upsert restates the schedule');
SELECT is((SELECT (paused_at, paused_reason)::text FROM pgrun.job_schedules WHERE id = :'s'), '(,)',
    'a schedule the scheduler paused is resumed by a changed declaration');
SELECT is((SELECT changed FROM pgrun.pause_schedule('other')), true, 'an operator pauses the other');
SELECT pgrun.upsert_schedule('other', '*/10 * * * *', 'test.cron');
SELECT is((SELECT paused_at IS NOT NULL AND paused_reason IS NULL FROM pgrun.job_schedules WHERE id = :'other'), true,
    'the operator''s pause survives any upsert');

-- TEST: resume clears the reason
UPDATE pgrun.job_schedules SET paused_at = pgrun.now(), paused_reason = 'x' WHERE id = :'s';
SELECT pgrun.resume_schedule('old');
SELECT is((SELECT paused_reason FROM pgrun.job_schedules WHERE id = :'s'), NULL, 'resume_schedule clears the reason');

SELECT * FROM finish();
ROLLBACK;
