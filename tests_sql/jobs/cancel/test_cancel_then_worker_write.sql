-- After a cancel request the worker's next terminal write ends the job cancelled, whatever
-- it reports: complete (the result is dropped), fail (no retry), continue (the next step
-- is kept for a requeue).
BEGIN;
SELECT plan(9);

-- SETUP: three running jobs, each asked to stop
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT job_id AS c, lease_token AS c_token FROM pgrun_test.running_job() \gset
SELECT job_id AS f, lease_token AS f_token FROM pgrun_test.running_job() \gset
SELECT job_id AS n, lease_token AS n_token FROM pgrun_test.running_job() \gset
SELECT pgrun.cancel_job(id) FROM unnest(ARRAY[:'c', :'f', :'n']::uuid[]) AS id;

-- TEST: complete
SELECT is(pgrun.complete_job(:'c', :'c_token', '{"ok": true}'), 'cancelled', 'complete_job returns cancelled');
SELECT results_eq(
    format('SELECT status, result, lease_token, finished_at FROM pgrun.jobs WHERE id = %L', :'c'),
    $$VALUES ('cancelled', NULL::jsonb, NULL::uuid, '2030-01-01 00:00:00+00'::timestamptz)$$,
    'the job is cancelled, the result dropped'
);

-- TEST: fail
SELECT results_eq(
    format('SELECT * FROM pgrun.fail_job(%L, %L, ''boom'')', :'f', :'f_token'),
    $$VALUES ('cancelled', NULL::timestamptz)$$,
    'fail_job returns cancelled and no retry time'
);
SELECT is((SELECT status FROM pgrun.jobs WHERE id = :'f'), 'cancelled', 'the failing job is cancelled, not retried');

-- TEST: continue
SELECT results_eq(
    format('SELECT * FROM pgrun.continue_job(%L, %L, ''step-2'', ''{"k": 1}'')', :'n', :'n_token'),
    $$VALUES ('cancelled', NULL::timestamptz)$$,
    'continue_job returns cancelled'
);
SELECT results_eq(
    format('SELECT status, step, state FROM pgrun.jobs WHERE id = %L', :'n'),
    $$VALUES ('cancelled', 'step-2', '{"k": 1}'::jsonb)$$,
    'the job is cancelled, its next step and state kept'
);

-- TEST: attempts end cancelled, one cancelled event each, no dead letters
SELECT is(
    (SELECT array_agg(outcome ORDER BY job_id) FROM pgrun.job_attempts),
    ARRAY['cancelled', 'cancelled', 'cancelled'],
    'every attempt ends with outcome cancelled'
);
SELECT is(
    (SELECT array_agg(DISTINCT pgrun_test.events_of(id)) FROM unnest(ARRAY[:'c', :'f', :'n']::uuid[]) AS id),
    ARRAY['cancel_requested,cancelled'],
    'each job: cancel_requested, cancelled (the claim wrote none)'
);
SELECT is((SELECT count(*) FROM pgrun.job_dead_letters), 0::bigint, 'a cancellation is not a death');

SELECT * FROM finish();
ROLLBACK;
