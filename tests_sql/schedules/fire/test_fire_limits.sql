-- fire_schedule's limits: scheduler_id checked as claim_due_schedules checks it; at most 10000
-- ticks (plan times x scopes) per call, a larger catch-up fired in several calls under one
-- claim (keep_claim); every time argument finite and within its bounds, never a raw 22008.
-- Each refusal writes nothing.
BEGIN;
SELECT plan(23);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT pgrun_test.make_schedule('five') AS s \gset
SELECT pgrun_test.make_schedule('wide', p_scope_kind => 'key',
    p_scopes => ARRAY(SELECT 'k' || i FROM generate_series(1, 5000) AS g (i))) AS wide \gset
SELECT pgrun_test.make_schedule('wider', p_scope_kind => 'key',
    p_scopes => ARRAY(SELECT 'k' || i FROM generate_series(1, 5001) AS g (i))) AS wider \gset
SELECT pgrun_test.make_schedule('dies') AS dies \gset
SELECT pgrun_test.freeze_time('2030-01-01 01:00:00+00');
SELECT pgrun_test.claim_schedule(:'s') AS tok \gset
SELECT pgrun_test.claim_schedule(:'wider') AS wtok \gset
SELECT pgrun_test.fingerprint() AS before \gset

-- TEST: scheduler_id: one check with claim_due_schedules
SELECT throws_ok(format($$SELECT pgrun.fire_schedule(%L, '{}', '2030-01-01 01:05:00+00', %L, scheduler_id => '')$$,
    :'s', :'tok'), 'RQ003', 'schedule.invalid_scheduler_id', 'an empty scheduler_id is refused');
SELECT throws_ok(format($$SELECT pgrun.fire_schedule(%L, '{}', '2030-01-01 01:05:00+00', %L, scheduler_id => '   ')$$,
    :'s', :'tok'), 'RQ003', 'schedule.invalid_scheduler_id', 'a blank scheduler_id is refused');
SELECT throws_ok(format($$SELECT pgrun.fire_schedule(%L, '{}', '2030-01-01 01:05:00+00', %L, scheduler_id => %L)$$,
    :'s', :'tok', repeat('x', 1048576)), 'RQ003', 'schedule.invalid_scheduler_id', 'a 1 MiB scheduler_id is refused');
SELECT cmp_ok(length(pgrun_test.error_detail(format(
    $$SELECT pgrun.fire_schedule(%L, '{}', '2030-01-01 01:05:00+00', %L, scheduler_id => %L)$$,
    :'s', :'tok', repeat('x', 1048576)))), '<=', 300, 'and echoed clipped');

-- TEST: time arguments within their bounds
SELECT throws_ok(format($$SELECT pgrun.fire_schedule(%L, '{1969-12-31 23:59:00+00}', '2030-01-01 01:05:00+00', %L)$$,
    :'s', :'tok'), 'RQ003', 'schedule.invalid_plan_times', 'a plan time before 1970 is refused');
SELECT throws_ok(format($$SELECT pgrun.fire_schedule(%L, '{4713-01-01 00:00:00+00 BC}', '2030-01-01 01:05:00+00', %L)$$,
    :'s', :'tok'), 'RQ003', 'schedule.invalid_plan_times', 'a plan time in 4713 BC is refused');
SELECT throws_ok(format($$SELECT pgrun.fire_schedule(%L, '{-infinity}', '2030-01-01 01:05:00+00', %L)$$,
    :'s', :'tok'), 'RQ003', 'schedule.invalid_plan_times', '-infinity as a plan time is refused');
SELECT throws_ok(format($$SELECT pgrun.fire_schedule(%L, '{}', '2030-01-01 01:05:00+00', %L,
    planned_until => '1900-01-01 00:00:00+00')$$, :'s', :'tok'),
    'RQ003', 'schedule.invalid_plan_times', 'planned_until before 1970 is refused');
SELECT throws_ok(format($$SELECT pgrun.fire_schedule(%L, '{}', '-infinity', %L)$$, :'s', :'tok'),
    'RQ003', 'schedule.invalid_next_run_at', 'next_run_at -infinity is refused');
SELECT throws_ok(format($$SELECT pgrun.fire_schedule(%L, '{}', '1900-01-01 00:00:00+00', %L)$$, :'s', :'tok'),
    'RQ003', 'schedule.invalid_next_run_at', 'next_run_at before 1970 is refused');
SELECT throws_ok(format($$SELECT pgrun.fire_schedule(%L, '{}', '294276-01-01 00:00:00+00', %L)$$, :'s', :'tok'),
    'RQ003', 'schedule.invalid_next_run_at', 'next_run_at at the end of PostgreSQL''s range: refused, no 22008');

-- TEST: at most 10000 ticks per call
SELECT throws_ok(format($$SELECT pgrun.fire_schedule(%L, '{2030-01-01 00:05:00+00,2030-01-01 00:10:00+00}',
    '2030-01-01 01:05:00+00', %L)$$, :'wider', :'wtok'),
    'RQ003', 'schedule.invalid_plan_times', '2 plan times x 5001 scopes (10002 ticks) are refused');
SELECT is(pgrun_test.fingerprint(), :'before', 'no refused call changed anything');
SELECT is((SELECT count(*) FILTER (WHERE created) FROM pgrun.fire_schedule(:'wide',
    '{2030-01-01 00:05:00+00,2030-01-01 00:10:00+00}', '2030-01-01 01:05:00+00', pgrun_test.claim_schedule(:'wide'))),
    10000::bigint, '2 plan times x 5000 scopes (10000 ticks) fire in one call');

-- TEST: a catch-up in several calls under one claim
SELECT is((SELECT count(*) FILTER (WHERE created) FROM pgrun.fire_schedule(:'s',
    '{2030-01-01 00:05:00+00,2030-01-01 00:10:00+00}', '2030-01-01 00:15:00+00', :'tok',
    planned_until => '2030-01-01 00:10:00+00', keep_claim => true)), 2::bigint,
    'a first chunk fires with keep_claim');
SELECT is((SELECT (claim_token, planned_until, next_run_at)::text FROM pgrun.job_schedules WHERE id = :'s'),
    ROW(:'tok'::uuid, '2030-01-01 00:10:00+00'::timestamptz, '2030-01-01 00:15:00+00'::timestamptz)::text,
    'the claim is kept; planned_until is the chunk''s end and the schedule is due at the next plan time');
SELECT is((SELECT count(*) FILTER (WHERE created) FROM pgrun.fire_schedule(:'s',
    '{2030-01-01 00:15:00+00,2030-01-01 00:20:00+00}', '2030-01-01 01:05:00+00', :'tok',
    planned_until => '2030-01-01 01:00:00+00')), 2::bigint, 'the last chunk fires under the same claim');
SELECT is((SELECT (claim_token IS NULL, planned_until, next_run_at)::text FROM pgrun.job_schedules WHERE id = :'s'),
    ROW(true, '2030-01-01 01:00:00+00'::timestamptz, '2030-01-01 01:05:00+00'::timestamptz)::text,
    'and releases it');
SELECT throws_ok(format($$SELECT pgrun.fire_schedule(%L, '{}', '2030-01-01 01:05:00+00', %L)$$, :'s', :'tok'),
    'RQ004', 'schedule.claim_lost', 'the released token fires no more');

-- TEST: a scheduler that dies between chunks leaves the rest to the next claimer
SELECT is((SELECT count(*) FROM pgrun.fire_schedule(:'dies', '{2030-01-01 00:05:00+00,2030-01-01 00:10:00+00}',
    '2030-01-01 00:15:00+00', pgrun_test.claim_schedule(:'dies'), planned_until => '2030-01-01 00:10:00+00',
    keep_claim => true)), 2::bigint, 'one chunk, then silence');
SELECT pgrun_test.advance_time(interval '2 minutes');
SELECT claim_token AS tok3, planned_until AS resumed_from
FROM pgrun.claim_due_schedules('next', 100) WHERE schedule_id = :'dies' \gset
SELECT is(:'resumed_from'::timestamptz, '2030-01-01 00:10:00+00'::timestamptz,
    'once the claim expires the next claimer gets the schedule, planned up to the last chunk');
SELECT is((SELECT array_agg(created ORDER BY plan_time) FROM pgrun.fire_schedule(:'dies',
    '{2030-01-01 00:10:00+00,2030-01-01 00:15:00+00}', '2030-01-01 01:05:00+00', :'tok3')),
    ARRAY[false, true], 'and fires the rest: a plan time already fired is not fired again');
SELECT throws_ok(format($$SELECT pgrun.fire_schedule(%L, '{}', '2030-01-01 01:05:00+00', %L, keep_claim => NULL)$$,
    :'s', pgrun_test.claim_schedule(:'s')), 'RQ003', 'schedule.invalid_argument', 'keep_claim NULL is refused');

SELECT * FROM finish();
ROLLBACK;
