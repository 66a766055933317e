-- Length before regex: huge arguments are refused by their length, at once, and every value
-- echoed in DETAIL is clipped (pgrun._clip, 200 characters). Nothing is stored.
BEGIN;
SELECT plan(16);

-- SETUP
SELECT pgrun_test.fingerprint() AS before \gset
CREATE TEMP TABLE huge ON COMMIT DROP AS SELECT repeat('1 ', 5000000) AS v;

-- TEST: a 10 MB cron expression is refused by its length, quickly
SELECT clock_timestamp() AS t0 \gset
SELECT is(pgrun_test.error_of(format('SELECT pgrun.upsert_schedule(%L, %L, %L)', 'c', (SELECT v FROM huge), 'test.cron')),
    'RQ003 schedule.invalid_cron: cron ''' || repeat('1 ', 100) || '''... (10000000 characters): the expression is 10000000 characters long (at most 200)',
    'a 10 MB expression: refused by its length, echoed clipped');
SELECT cmp_ok(clock_timestamp() - :'t0'::timestamptz, '<', interval '5 seconds',
    'in well under the 26 s a regex took');
SELECT throws_ok(format('SELECT pgrun.upsert_schedule(%L, %L, %L)', 'c', repeat('*', 201), 'test.cron'),
    'RQ003', 'schedule.invalid_cron', '201 characters are refused');

-- TEST: every other argument of upsert_schedule: refused, DETAIL clipped
SELECT cmp_ok(length(pgrun_test.error_detail(format('SELECT pgrun.upsert_schedule(%L, %L, %L)',
    (SELECT v FROM huge), '* * * * *', 'test.cron'))), '<=', 300, 'a huge name: DETAIL clipped');
SELECT throws_ok(format('SELECT pgrun.upsert_schedule(%L, %L, %L)', ' ' || repeat('x', 300), '* * * * *', 'test.cron'),
    'RQ003', 'schedule.invalid_name', 'an over-long name with blanks: invalid_name');
SELECT cmp_ok(length(pgrun_test.error_detail(format('SELECT pgrun.upsert_schedule(%L, %L, %L, timezone => %L)',
    'c', '* * * * *', 'test.cron', (SELECT v FROM huge)))), '<=', 300, 'a huge time zone: DETAIL clipped');
SELECT throws_ok(format('SELECT pgrun.upsert_schedule(%L, %L, %L, timezone => %L)',
    'c', '* * * * *', 'test.cron', repeat('Europe/', 100)),
    'RQ003', 'schedule.invalid_timezone', 'an over-long time zone is refused');
SELECT cmp_ok(length(pgrun_test.error_detail(format('SELECT pgrun.upsert_schedule(%L, %L, %L, catch_up => %L)',
    'c', '* * * * *', 'test.cron', (SELECT v FROM huge)))), '<=', 300, 'a huge catch_up: DETAIL clipped');
SELECT cmp_ok(length(pgrun_test.error_detail(format('SELECT pgrun.upsert_schedule(%L, %L, %L, scope_kind => %L)',
    'c', '* * * * *', 'test.cron', (SELECT v FROM huge)))), '<=', 300, 'a huge scope_kind: DETAIL clipped');
SELECT throws_ok(format('SELECT pgrun.upsert_schedule(%L, %L, %L, scope_kind => %L, scopes => ARRAY[%L])',
    'c', '* * * * *', 'test.cron', 'organization', (SELECT v FROM huge)),
    'RQ003', 'schedule.invalid_scopes', 'a huge organization scope is refused by its length');

-- TEST: the operator's functions and the scheduler's
SELECT cmp_ok(length(pgrun_test.error_detail(format('SELECT pgrun.pause_schedule(%L)', (SELECT v FROM huge)))),
    '<=', 300, 'pause_schedule of a huge name: not found, DETAIL clipped');
SELECT cmp_ok(length(pgrun_test.error_detail(format('SELECT pgrun.run_schedule_now(%L)', (SELECT v FROM huge)))),
    '<=', 300, 'run_schedule_now of a huge name: DETAIL clipped');
SELECT is(pgrun_test.error_of(format('SELECT pgrun.claim_due_schedules(%L)', (SELECT v FROM huge))),
    'RQ003 schedule.invalid_scheduler_id: scheduler_id ''' || repeat('1 ', 100) || '''... (10000000 characters) is NULL, blank or longer than 200 characters',
    'claim_due_schedules: a huge scheduler_id is refused, echoed clipped');
SELECT throws_ok(format('SELECT pgrun.claim_due_schedules(%L)', ' ' || repeat(' ', 300)),
    'RQ003', 'schedule.invalid_scheduler_id', 'a long blank scheduler_id is refused');
SELECT cmp_ok(length(pgrun_test.error_detail(format('SELECT pgrun.claim_due_schedules(%L, max_schedules => 0)',
    'ok'))), '<=', 300, 'a bad max_schedules: DETAIL short');

-- TEST: nothing changed
SELECT is(pgrun_test.fingerprint(), :'before', 'no refused call changed anything');

SELECT * FROM finish();
ROLLBACK;
