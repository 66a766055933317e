-- The one cron grammar (docs/schedules.md), at the SQL door: what croniter plans and the SQL
-- check used to disagree on, and expressions that can never fire. The whole table of
-- expressions (tests_data/cron_grammar.csv) runs through both sides in
-- tests_py/test_cron_grammar.py; these pin the codes and what is stored.
BEGIN;
SELECT plan(19);

-- TEST: croniter plans it, so SQL accepts it
SELECT is((SELECT created FROM pgrun.upsert_schedule('last', '0 0 L * *', 'test.cron')), true,
    'L (the last day of the month) is accepted');
SELECT is((SELECT cron FROM pgrun.job_schedules WHERE name = 'last'), '0 0 L * *', 'and stored as given');
SELECT lives_ok($$SELECT pgrun.upsert_schedule('feb29', '0 0 29 2 *', 'test.cron')$$,
    '29 February is accepted (it comes every 4 to 8 years)');
SELECT lives_ok($$SELECT pgrun.upsert_schedule('either', '0 0 30 2 1', 'test.cron')$$,
    'day of month and weekday both set: either matches, so 30 February with Mondays fires');
SELECT lives_ok($$SELECT pgrun.upsert_schedule('third-fri', '0 9 ? * fri#3', 'test.cron')$$,
    'an nth weekday with ? as day of month is accepted');
SELECT pgrun.upsert_schedule('tabs', E'0\t9 *  * \t1-5 ', 'test.cron');
SELECT is((SELECT cron FROM pgrun.job_schedules WHERE name = 'tabs'), '0 9 * * 1-5',
    'tabs and repeated blanks separate fields; stored with single blanks');

-- TEST: croniter refuses it, so SQL refuses it
SELECT throws_ok($$SELECT pgrun.upsert_schedule('c', '1,,2 * * * *', 'test.cron')$$,
    'RQ003', 'schedule.invalid_cron', 'an empty list item is refused');
SELECT throws_ok($$SELECT pgrun.upsert_schedule('c', '0 0 * * 1#1,2', 'test.cron')$$,
    'RQ003', 'schedule.invalid_cron', 'nth weekdays mixed with plain ones are refused');
SELECT throws_ok($$SELECT pgrun.upsert_schedule('c', '0 0 * * 5L', 'test.cron')$$,
    'RQ003', 'schedule.invalid_cron', 'a last-weekday form is refused');
SELECT throws_ok($$SELECT pgrun.upsert_schedule('c', E'0\u00a00 * * *', 'test.cron')$$,
    'RQ003', 'schedule.invalid_cron', 'a no-break space is not a field separator');

-- TEST: it never fires (or only decades apart): refused
SELECT throws_ok($$SELECT pgrun.upsert_schedule('c', '0 0 30 2 *', 'test.cron')$$,
    'RQ003', 'schedule.invalid_cron', '30 February is refused');
SELECT throws_ok($$SELECT pgrun.upsert_schedule('c', '0 0 31 4,6,9,11 *', 'test.cron')$$,
    'RQ003', 'schedule.invalid_cron', 'the 31st of months with 30 days is refused');
SELECT throws_ok($$SELECT pgrun.upsert_schedule('c', '0 0 * 2 mon#5', 'test.cron')$$,
    'RQ003', 'schedule.invalid_cron', 'the fifth Monday of February (28 years apart) is refused');
SELECT is(pgrun_test.error_detail($$SELECT pgrun.upsert_schedule('c', '0 0 30,31 FEB *', 'test.cron')$$),
    'cron ''0 0 30,31 FEB *'': day of month ''30,31'' never comes in month ''FEB''',
    'DETAIL says which day never comes in which month');

-- TEST: forms croniter reads surprisingly are refused
SELECT throws_ok($$SELECT pgrun.upsert_schedule('c', '5-5 * * * *', 'test.cron')$$,
    'RQ003', 'schedule.invalid_cron', 'a range that does not rise is refused (croniter reads 5-5 as *)');
SELECT throws_ok($$SELECT pgrun.upsert_schedule('c', '0 0 1 12-1 *', 'test.cron')$$,
    'RQ003', 'schedule.invalid_cron', 'a wrapping range is refused');
SELECT throws_ok($$SELECT pgrun.upsert_schedule('c', '0 0 15W * *', 'test.cron')$$,
    'RQ003', 'schedule.invalid_cron', 'W (nearest weekday) is refused');
SELECT throws_ok($$SELECT pgrun.upsert_schedule('c', '0 0 1 * 1#1', 'test.cron')$$,
    'RQ003', 'schedule.invalid_cron', 'an nth weekday with a day of month is refused');

-- TEST: nothing stored by the refusals
SELECT is((SELECT count(*) FROM pgrun.job_schedules WHERE name = 'c'), 0::bigint, 'no refused call stored anything');

SELECT * FROM finish();
ROLLBACK;
