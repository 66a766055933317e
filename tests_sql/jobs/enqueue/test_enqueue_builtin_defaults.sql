-- A job type nobody defined takes the built-in defaults, and enqueue_job reports what it made.
BEGIN;
SELECT plan(6);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT job_id AS job, created, status, run_at FROM pgrun.enqueue_job('never.defined') \gset

-- TEST: the returned row
SELECT is(:'created'::boolean, TRUE, 'created is true for a new job');
SELECT is(:'status'::text, 'queued', 'a new job is queued');
SELECT is(:'run_at'::timestamptz, '2030-01-01 00:00:00+00'::timestamptz, 'with neither run_at nor delay it is ready now');

-- TEST: the stored row carries the documented built-in defaults
SELECT row_eq(
    format(
        'SELECT queue, priority, max_attempts, timeout_seconds, backoff_base_seconds, backoff_max_seconds,
                backoff_jitter, payload, attempt, total_attempts, idempotency_key, enqueue_request
         FROM pgrun.jobs WHERE id = %L', :'job'
    ),
    ROW('default'::text, 100, 20, NULL::integer, 2::double precision, 3600::double precision,
        0.2::double precision, '{}'::jsonb, 0, 0, NULL::text, NULL::jsonb),
    'queue default, priority 100, 20 attempts, no timeout, backoff 2 s / 3600 s / 0.2, payload {}'
);

-- TEST: the clock is pgrun.now()
SELECT is(
    (SELECT created_at FROM pgrun.jobs WHERE id = :'job'),
    '2030-01-01 00:00:00+00'::timestamptz,
    'created_at comes from pgrun.now()'
);

-- TEST: ids are UUIDv7
SELECT is(substr(:'job'::text, 15, 1), '7', 'the job id is a version 7 uuid');

SELECT * FROM finish();
ROLLBACK;
