-- Every input error of upsert_schedule, by code, and nothing is stored by a refused call.
BEGIN;
SELECT plan(33);

-- TEST: name
SELECT throws_ok($$SELECT pgrun.upsert_schedule(NULL, '* * * * *', 'test.cron')$$,
    'RQ003', 'schedule.invalid_name', 'a NULL name is refused');
SELECT throws_ok($$SELECT pgrun.upsert_schedule('', '* * * * *', 'test.cron')$$,
    'RQ003', 'schedule.invalid_name', 'an empty name is refused');
SELECT throws_ok($$SELECT pgrun.upsert_schedule(' x', '* * * * *', 'test.cron')$$,
    'RQ003', 'schedule.invalid_name', 'a name with surrounding blanks is refused');

-- TEST: cron shape
SELECT throws_ok($$SELECT pgrun.upsert_schedule('c', NULL, 'test.cron')$$,
    'RQ003', 'schedule.invalid_cron', 'a NULL expression is refused');
SELECT throws_ok($$SELECT pgrun.upsert_schedule('c', '* * * *', 'test.cron')$$,
    'RQ003', 'schedule.invalid_cron', '4 fields are refused');
SELECT throws_ok($$SELECT pgrun.upsert_schedule('c', '* * * * * * *', 'test.cron')$$,
    'RQ003', 'schedule.invalid_cron', '7 fields are refused');
SELECT throws_ok($$SELECT pgrun.upsert_schedule('c', '61 * * * *', 'test.cron')$$,
    'RQ003', 'schedule.invalid_cron', 'a minute outside 0..59 is refused');
SELECT throws_ok($$SELECT pgrun.upsert_schedule('c', '* 24 * * *', 'test.cron')$$,
    'RQ003', 'schedule.invalid_cron', 'an hour outside 0..23 is refused');
SELECT throws_ok($$SELECT pgrun.upsert_schedule('c', '* * 0 * *', 'test.cron')$$,
    'RQ003', 'schedule.invalid_cron', 'day of month 0 is refused');
SELECT throws_ok($$SELECT pgrun.upsert_schedule('c', '* * * 1-13 *', 'test.cron')$$,
    'RQ003', 'schedule.invalid_cron', 'month 13 in a range is refused');
SELECT throws_ok($$SELECT pgrun.upsert_schedule('c', '* * * * * 60', 'test.cron')$$,
    'RQ003', 'schedule.invalid_cron', 'second 60 is refused');
SELECT throws_ok($$SELECT pgrun.upsert_schedule('c', '*/0 * * * *', 'test.cron')$$,
    'RQ003', 'schedule.invalid_cron', 'a zero step is refused');
SELECT throws_ok($$SELECT pgrun.upsert_schedule('c', '* * * * MOM', 'test.cron')$$,
    'RQ003', 'schedule.invalid_cron', 'an unknown weekday name is refused');
SELECT throws_ok($$SELECT pgrun.upsert_schedule('c', '* * * * ; DROP', 'test.cron')$$,
    'RQ003', 'schedule.invalid_cron', 'characters a field cannot hold are refused');
SELECT throws_ok($$SELECT pgrun.upsert_schedule('c', '@fortnightly', 'test.cron')$$,
    'RQ003', 'schedule.invalid_cron', 'an unknown macro is refused');

-- TEST: time zone
SELECT throws_ok($$SELECT pgrun.upsert_schedule('c', '* * * * *', 'test.cron', timezone => 'Mars/Olympus')$$,
    'RQ003', 'schedule.invalid_timezone', 'an unknown zone is refused');
SELECT throws_ok($$SELECT pgrun.upsert_schedule('c', '* * * * *', 'test.cron', timezone => NULL)$$,
    'RQ003', 'schedule.invalid_timezone', 'a NULL zone is refused');

-- TEST: the job template, with enqueue_job's codes
SELECT throws_ok($$SELECT pgrun.upsert_schedule('c', '* * * * *', 'Not A Type')$$,
    'RQ003', 'job.invalid_type', 'a malformed job type is refused');
SELECT throws_ok($$SELECT pgrun.upsert_schedule('c', '* * * * *', 'test.cron', payload => '[1]')$$,
    'RQ003', 'job.invalid_payload', 'a payload that is not an object is refused');
SELECT throws_ok($$SELECT pgrun.upsert_schedule('c', '* * * * *', 'test.cron', queue => 'Q!')$$,
    'RQ003', 'job.invalid_queue', 'a malformed queue is refused');
SELECT throws_ok($$SELECT pgrun.upsert_schedule('c', '* * * * *', 'test.cron', priority => -1)$$,
    'RQ003', 'job.invalid_priority', 'a priority outside 0..32767 is refused');

-- TEST: policy and limits
SELECT throws_ok($$SELECT pgrun.upsert_schedule('c', '* * * * *', 'test.cron', catch_up => 'some')$$,
    'RQ003', 'schedule.invalid_catch_up', 'an unknown catch-up policy is refused');
SELECT throws_ok($$SELECT pgrun.upsert_schedule('c', '* * * * *', 'test.cron', backfill_limit => 0)$$,
    'RQ003', 'schedule.invalid_backfill_limit', 'backfill_limit 0 is refused');
SELECT throws_ok($$SELECT pgrun.upsert_schedule('c', '* * * * *', 'test.cron', backfill_limit => 10001)$$,
    'RQ003', 'schedule.invalid_backfill_limit', 'backfill_limit over 10000 is refused');
SELECT throws_ok(
    $$SELECT pgrun.upsert_schedule('c', '* * * * *', 'test.cron', misfire_grace_seconds => 0)$$,
    'RQ003', 'schedule.invalid_misfire_grace', 'a misfire grace of 0 s is refused');

-- TEST: scopes
SELECT throws_ok($$SELECT pgrun.upsert_schedule('c', '* * * * *', 'test.cron', scope_kind => 'tenant')$$,
    'RQ003', 'schedule.invalid_scopes', 'an unknown scope kind is refused');
SELECT throws_ok($$SELECT pgrun.upsert_schedule('c', '* * * * *', 'test.cron', scope_kind => 'key')$$,
    'RQ003', 'schedule.invalid_scopes', 'a scoped schedule without scopes is refused');
SELECT throws_ok(
    $$SELECT pgrun.upsert_schedule('c', '* * * * *', 'test.cron', scope_kind => 'key', scopes => '{a,a}')$$,
    'RQ003', 'schedule.invalid_scopes', 'a repeated scope is refused');
SELECT throws_ok(
    $$SELECT pgrun.upsert_schedule('c', '* * * * *', 'test.cron', scope_kind => 'organization', scopes => '{x}')$$,
    'RQ003', 'schedule.invalid_scopes', 'organization scopes must be uuids');
SELECT throws_ok(
    $$SELECT pgrun.upsert_schedule('c', '* * * * *', 'test.cron', scopes => '{a}')$$,
    'RQ003', 'schedule.invalid_scopes', 'scopes without a scope kind are refused');
SELECT throws_ok(
    $$SELECT pgrun.upsert_schedule('c', '* * * * *', 'test.cron', scope_kind => 'key', scopes => '{a}',
        payload => '{"scope": 1}')$$,
    'RQ003', 'schedule.reserved_payload_key', 'a scoped schedule''s payload cannot carry "scope"');

-- TEST: nothing was stored; the same arguments done right are accepted
SELECT is((SELECT count(*) FROM pgrun.job_schedules), 0::bigint, 'no refused call stored anything');
SELECT lives_ok(
    $$SELECT pgrun.upsert_schedule('c', ' 0  9 * JAN-DEC MON-FRI ', 'test.cron', timezone => 'Europe/Berlin',
        scope_kind => 'key', scopes => '{b,a}')$$,
    'names, ranges and extra blanks are fine');

SELECT * FROM finish();
ROLLBACK;
