-- list_schedules pages like list_jobs: in id (creation) order, max_rows 1..1000 (default
-- 100), the next page after the last id seen.
BEGIN;
SELECT plan(9);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT count(pgrun_test.make_schedule('s' || lpad(i::text, 3, '0'))) FROM generate_series(1, 150) AS g (i);
SELECT schedule_id AS last_of_first FROM pgrun.list_schedules() ORDER BY schedule_id DESC LIMIT 1 \gset

-- TEST: pages
SELECT is((SELECT count(*) FROM pgrun.list_schedules()), 100::bigint, 'the default page is 100 schedules');
SELECT is((SELECT array_agg(name) FROM pgrun.list_schedules(max_rows => 3)), ARRAY['s001', 's002', 's003'],
    'in creation order');
SELECT is((SELECT count(*) FROM pgrun.list_schedules(after_id => :'last_of_first', max_rows => 1000)), 50::bigint,
    'after the last id of the first page: the other 50');
SELECT is((SELECT min(name) FROM pgrun.list_schedules(after_id => :'last_of_first')), 's101',
    'starting right after it');
SELECT is((SELECT count(*) FROM pgrun.list_schedules(max_rows => 1000)), 150::bigint, 'max_rows 1000 is allowed');
SELECT is((SELECT count(*) FROM pgrun.list_schedules(after_id => gen_random_uuid(), max_rows => 1000)) >= 0, true,
    'an after_id that names no schedule is a position, not an error');

-- TEST: max_rows outside 1..1000
SELECT throws_ok($$SELECT pgrun.list_schedules(max_rows => 0)$$, 'RQ003', 'schedule.invalid_max_rows',
    'max_rows 0 is refused');
SELECT throws_ok($$SELECT pgrun.list_schedules(max_rows => 1001)$$, 'RQ003', 'schedule.invalid_max_rows',
    'max_rows over 1000 is refused');
SELECT is((SELECT count(*) FROM pgrun.list_schedules(max_rows => NULL)), 100::bigint, 'NULL: the default');

SELECT * FROM finish();
ROLLBACK;
