-- A schedule's time zone: a name pg_timezone_names lists, exactly (case included). The names
-- it listed at install are kept in pgrun.timezone_names (sql/0025) and looked up by key;
-- pg_timezone_names is read only for a name not found there. Both ways give its answer.
BEGIN;
SELECT plan(11);

-- TEST: the table holds what pg_timezone_names lists on this server
SELECT set_eq(
    $$SELECT t.name FROM pgrun.timezone_names AS t$$,
    $$SELECT z.name FROM pg_catalog.pg_timezone_names AS z$$,
    'pgrun.timezone_names is pg_timezone_names'' list of names'
);

-- TEST: a listed zone is taken, from the table or, when the table lacks it, from pg_timezone_names
SELECT lives_ok(
    $$SELECT pgrun.upsert_schedule('berlin', '0 9 * * *', 'test.cron', timezone => 'Europe/Berlin')$$,
    'a zone in the table is taken'
);
DELETE FROM pgrun.timezone_names WHERE name = 'America/Sao_Paulo';
SELECT lives_ok(
    $$SELECT pgrun.upsert_schedule('sao-paulo', '0 9 * * *', 'test.cron', timezone => 'America/Sao_Paulo')$$,
    'a zone pg_timezone_names lists and the table lacks (the server gained it since) is taken'
);
SELECT results_eq(
    $$SELECT s.name, s.timezone FROM pgrun.job_schedules AS s ORDER BY s.name$$,
    $$VALUES ('berlin'::text, 'Europe/Berlin'::text), ('sao-paulo', 'America/Sao_Paulo')$$,
    'both schedules keep their zone'
);

-- TEST: what PostgreSQL would parse as a zone but pg_timezone_names does not list is refused,
-- whichever way the name is looked up
SELECT throws_ok($$SELECT pgrun.upsert_schedule('c', '* * * * *', 'test.cron', timezone => 'europe/berlin')$$,
    'RQ003', 'schedule.invalid_timezone', 'a zone name in the wrong case is refused');
SELECT throws_ok($$SELECT pgrun.upsert_schedule('c', '* * * * *', 'test.cron', timezone => 'UTC+3')$$,
    'RQ003', 'schedule.invalid_timezone', 'a POSIX offset is refused');
SELECT throws_ok($$SELECT pgrun.upsert_schedule('c', '* * * * *', 'test.cron', timezone => '+03:00')$$,
    'RQ003', 'schedule.invalid_timezone', 'a numeric offset is refused');
SELECT throws_ok($$SELECT pgrun.upsert_schedule('c', '* * * * *', 'test.cron', timezone => 'CEST')$$,
    'RQ003', 'schedule.invalid_timezone', 'an abbreviation is refused');
SELECT throws_ok($$SELECT pgrun.upsert_schedule('c', '* * * * *', 'test.cron', timezone => 'Europe/Berlin ')$$,
    'RQ003', 'schedule.invalid_timezone', 'a zone name with a trailing blank is refused');
SELECT throws_ok($$SELECT pgrun.upsert_schedule('c', '* * * * *', 'test.cron', timezone => '')$$,
    'RQ003', 'schedule.invalid_timezone', 'an empty name is refused');

SELECT is((SELECT count(*) FROM pgrun.job_schedules WHERE name = 'c'), 0::bigint, 'no refused call stored anything');

SELECT * FROM finish();
ROLLBACK;
