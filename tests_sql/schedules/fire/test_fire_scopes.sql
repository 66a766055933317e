-- Scoped schedules: one tick and one job per scope and plan time; each scope fires
-- independently (a scope added later gets its own ticks for plan times already fired).
BEGIN;
SELECT plan(7);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT pgrun_test.make_schedule('per-key', p_scope_kind => 'key', p_scopes => '{b,a}') AS k \gset
SELECT pgrun_test.make_schedule('per-org', p_scope_kind => 'organization',
    p_scopes => '{22222222-2222-2222-2222-222222222222,11111111-1111-1111-1111-111111111111}') AS o \gset
SELECT pgrun_test.freeze_time('2030-01-01 00:10:00+00');

-- TEST: one tick per scope
SELECT is(pgrun_test.fire(:'k', '{2030-01-01 00:05:00+00,2030-01-01 00:10:00+00}'), 4::bigint,
    'two plan times x two scopes make four jobs');
SELECT set_eq($$SELECT scope || '@' || to_char(plan_time AT TIME ZONE 'UTC', 'HH24:MI') FROM pgrun.schedule_ticks
    WHERE schedule_id = (SELECT id FROM pgrun.job_schedules WHERE name = 'per-key')$$,
    ARRAY['a@00:05', 'b@00:05', 'a@00:10', 'b@00:10'], 'ticks are per (scope, plan time)');
SELECT set_eq($$SELECT payload ->> 'scope' FROM pgrun.jobs WHERE schedule_id =
    (SELECT id FROM pgrun.job_schedules WHERE name = 'per-key')$$,
    ARRAY['a', 'a', 'b', 'b'], 'each job names its scope in the payload');

-- TEST: organization scopes make the organizations' jobs
SELECT is(pgrun_test.fire(:'o', '{2030-01-01 00:10:00+00}'), 2::bigint, 'one job per organization');
SELECT set_eq($$SELECT organization_id FROM pgrun.jobs WHERE schedule_id =
    (SELECT id FROM pgrun.job_schedules WHERE name = 'per-org')$$,
    ARRAY['11111111-1111-1111-1111-111111111111', '22222222-2222-2222-2222-222222222222']::uuid[],
    'each belongs to its organization');

-- TEST: scopes fire independently
SELECT pgrun.upsert_schedule('per-key', '*/5 * * * *', 'test.cron', scope_kind => 'key', scopes => '{a,b,c}');
SELECT is(pgrun_test.fire(:'k', '{2030-01-01 00:10:00+00}'), 1::bigint,
    'a plan time fired for a and b fires once more, for the new scope c only');
SELECT is((SELECT count(*) FROM pgrun.schedule_ticks WHERE schedule_id = :'k'), 5::bigint, 'five ticks');

SELECT * FROM finish();
ROLLBACK;
