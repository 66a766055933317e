-- A schedule's payload keeps the nesting rule of every job payload (pgrun._json_depth_ok,
-- through enqueue's own checker): over 100 levels is job.invalid_payload and nothing is
-- stored; 100 levels are stored, and the jobs it fires carry them (a scope adds no level).
BEGIN;
SELECT plan(6);

-- SETUP: {"a": [[...]]}: the object and n arrays, n + 1 levels
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT ('{"a": ' || repeat('[', 100) || repeat(']', 100) || '}')::jsonb AS deep \gset
SELECT ('{"a": ' || repeat('[', 99) || repeat(']', 99) || '}')::jsonb AS edge \gset

-- TEST: refused, nothing stored
SELECT throws_ok(
    format('SELECT pgrun.upsert_schedule(%L, %L, %L, payload => %L::jsonb)', 'deep', '* * * * *', 'test.cron', :'deep'),
    'RQ003', 'job.invalid_payload', 'a payload 101 levels deep'
);
SELECT is(
    pgrun_test.error_detail(format('SELECT pgrun.upsert_schedule(%L, %L, %L, payload => %L::jsonb)', 'deep', '* * * * *', 'test.cron', :'deep')),
    'payload is nested more than 100 levels deep (arrays and objects)',
    'DETAIL says why'
);
SELECT is((SELECT count(*) FROM pgrun.job_schedules WHERE name = 'deep'), 0::bigint, 'nothing was stored');

-- TEST: 100 levels are stored and fired
SELECT schedule_id AS edge_schedule FROM pgrun.upsert_schedule('edge', '* * * * *', 'test.cron', payload => :'edge',
    scope_kind => 'key', scopes => ARRAY['k1']) \gset
SELECT is((SELECT payload FROM pgrun.job_schedules WHERE id = :'edge_schedule'), :'edge'::jsonb, 'a payload 100 levels deep is stored');
SELECT pgrun_test.fire(:'edge_schedule', ARRAY['2029-12-31 23:59:00+00'::timestamptz]);
SELECT is(
    (SELECT payload FROM pgrun.jobs WHERE schedule_id = :'edge_schedule'),
    :'edge'::jsonb || '{"scope": "k1"}'::jsonb,
    'the fired job carries it, with its scope'
);
SELECT ok((SELECT pgrun._json_depth_ok(payload) FROM pgrun.jobs WHERE schedule_id = :'edge_schedule'), 'within the rule');

SELECT * FROM finish();
ROLLBACK;
