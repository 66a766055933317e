-- The CHECK constraints of jobs and job_events in their compact forms (migration 0021): each
-- means what its old form meant, row for row. The old forms are written out below as they
-- stood before 0021; each stored constraint (read back from the catalog, so the test checks
-- what the database enforces, not a copy) is evaluated beside its old form over a grid of
-- values with NULLs and both sides of every bound: the two must agree on every row (a CHECK
-- passes when its expression is not false), and the grid must hold rows each refuses and
-- rows each accepts. Then the constraints are validated and enforced on direct writes.
BEGIN;
SELECT plan(19);

-- SETUP
-- (disagreements, accepted > 0, refused > 0) of a stored constraint against its old form
CREATE FUNCTION pg_temp.compare(p_table regclass, p_constraint text, p_old text, p_grid text)
RETURNS text
LANGUAGE plpgsql
AS $$
DECLARE
    v_new text;
    v_out text;
BEGIN
    SELECT substring(pg_get_constraintdef(c.oid) FROM '^CHECK \((.*)\)$') INTO v_new
    FROM pg_constraint AS c
    WHERE c.conrelid = p_table AND c.conname = p_constraint;
    EXECUTE format(
        'SELECT format(''%%s %%s %%s'', '
        'count(*) FILTER (WHERE ((%1$s) IS NOT FALSE) IS DISTINCT FROM ((%2$s) IS NOT FALSE)), '
        'count(*) FILTER (WHERE (%1$s) IS NOT FALSE) > 0, count(*) FILTER (WHERE (%1$s) IS FALSE) > 0) '
        'FROM (%3$s) AS g',
        v_new, p_old, p_grid
    ) INTO v_out;
    RETURN v_out;
END;
$$;

SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT pgrun_test.make_job() AS job \gset

-- TEST: each compact form means what its old form meant
SELECT is(
    pg_temp.compare('pgrun.jobs', 'jobs_status_check',
        $$status IN ('queued', 'running', 'succeeded', 'dead', 'cancelled')$$,
        $$SELECT s AS status FROM unnest(ARRAY['queued', 'running', 'succeeded', 'dead', 'cancelled',
            'Queued', '', 'finished', NULL]) AS s$$),
    '0 t t', 'jobs_status_check: the same five statuses'
);
SELECT is(
    pg_temp.compare('pgrun.jobs', 'jobs_finished_check',
        $$(status IN ('succeeded', 'dead', 'cancelled')) = (finished_at IS NOT NULL)$$,
        $$SELECT s AS status, f AS finished_at
          FROM unnest(ARRAY['queued', 'running', 'succeeded', 'dead', 'cancelled']) AS s,
               unnest(ARRAY[NULL, '2030-01-01']::timestamptz[]) AS f$$),
    '0 t t', 'jobs_finished_check: finished_at exactly on the finished statuses'
);
SELECT is(
    pg_temp.compare('pgrun.jobs', 'jobs_priority_check',
        $$priority BETWEEN 0 AND 32767$$,
        $$SELECT p AS priority FROM unnest(ARRAY[NULL, -2147483648, -1, 0, 1, 100, 32766, 32767, 32768,
            2147483647]::integer[]) AS p$$),
    '0 t t', 'jobs_priority_check: 0..32767, both ends included'
);
SELECT is(
    pg_temp.compare('pgrun.jobs', 'jobs_idempotency_check',
        $$(idempotency_key IS NULL) = (enqueue_request IS NULL) AND length(idempotency_key) BETWEEN 1 AND 256$$,
        $$SELECT k AS idempotency_key, r AS enqueue_request
          FROM unnest(ARRAY[NULL, '', 'k', repeat('k', 255), repeat('k', 256), repeat('k', 257)]) AS k,
               unnest(ARRAY[NULL, '{}']::jsonb[]) AS r$$),
    '0 t t', 'jobs_idempotency_check: a key of 1..256 characters exactly with a snapshot'
);
SELECT is(
    pg_temp.compare('pgrun.jobs', 'jobs_step_max_attempts_check',
        $$step_max_attempts BETWEEN 1 AND 1000$$,
        $$SELECT a AS step_max_attempts FROM unnest(ARRAY[NULL, -1, 0, 1, 2, 999, 1000, 1001]::integer[]) AS a$$),
    '0 t t', 'jobs_step_max_attempts_check: 1..1000 or NULL'
);
SELECT is(
    pg_temp.compare('pgrun.jobs', 'jobs_step_retry_delay_check',
        $$pg_catalog.extract('epoch', step_retry_delay) BETWEEN 0 AND 3155760000$$,
        $$SELECT d AS step_retry_delay FROM unnest(ARRAY[NULL, '-1 day', '-00:00:00.000001', '0', '00:00:00.000001',
            '1 hour', '1 mon', '100 years', '100 years 1 day', '3155760000 seconds',
            '3155760000.000001 seconds', '1000 years']::interval[]) AS d$$),
    '0 t t', 'jobs_step_retry_delay_check: 0 s..100 Julian years or NULL'
);
SELECT is(
    pg_temp.compare('pgrun.job_events', 'job_events_event_check',
        $$event IN ('enqueued', 'claimed', 'succeeded', 'retry_scheduled', 'dead', 'continued',
            'cancel_requested', 'cancelled', 'requeued', 'lease_expired', 'released')$$,
        $$SELECT e AS event FROM unnest(ARRAY['enqueued', 'claimed', 'succeeded', 'retry_scheduled', 'dead',
            'continued', 'cancel_requested', 'cancelled', 'requeued', 'lease_expired', 'released',
            'queued', 'Succeeded', '', NULL]) AS e$$),
    '0 t t', 'job_events_event_check: the same eleven events'
);
SELECT is(
    pg_temp.compare('pgrun.job_events', 'job_events_attempt_check',
        $$(
            outcome IS NULL AND step IS NULL AND lease_token IS NULL AND started_at IS NULL
            AND error_code IS NULL AND error_message IS NULL
        )
        OR (
            outcome IN ('succeeded', 'failed', 'timed_out', 'crashed', 'lease_expired', 'cancelled', 'continued')
            AND coalesce(from_status = 'running', FALSE)
            AND event <> 'cancel_requested'
            AND started_at IS NOT NULL
            AND lease_token IS NOT NULL
            AND worker_id IS NOT NULL
        )$$,
        $$SELECT o AS outcome, s AS step, l AS lease_token, t AS started_at, c AS error_code,
                 m AS error_message, f AS from_status, e AS event, w AS worker_id
          FROM unnest(ARRAY[NULL, 'succeeded', 'continued', 'finished']) AS o,
               unnest(ARRAY[NULL, 'step-2']) AS s,
               unnest(ARRAY[NULL, '01890000-0000-7000-8000-000000000001']::uuid[]) AS l,
               unnest(ARRAY[NULL, '2030-01-01']::timestamptz[]) AS t,
               unnest(ARRAY[NULL, 'boom']) AS c,
               unnest(ARRAY[NULL, 'it broke']) AS m,
               unnest(ARRAY[NULL, 'running', 'queued']) AS f,
               unnest(ARRAY['succeeded', 'cancel_requested', NULL]) AS e,
               unnest(ARRAY[NULL, 'worker-1']) AS w$$),
    '0 t t', 'job_events_attempt_check: attempt columns only, and all of them, on an attempt''s end'
);

-- TEST: the stored rows were checked (0022): every constraint of both tables is validated
SELECT is(
    (SELECT array_agg(c.conname::text ORDER BY c.conname) FROM pg_constraint AS c
     WHERE c.conrelid IN ('pgrun.jobs'::regclass, 'pgrun.job_events'::regclass)
       AND c.contype = 'c' AND NOT c.convalidated),
    NULL,
    'no CHECK constraint of jobs or job_events is left NOT VALID'
);

-- TEST: enforced on direct writes, each naming its constraint
SELECT throws_ok(
    format($$UPDATE pgrun.jobs SET status = 'finished' WHERE id = %L$$, :'job'),
    '23514', 'new row for relation "jobs" violates check constraint "jobs_status_check"',
    'an unknown status is refused'
);
SELECT throws_ok(
    format($$UPDATE pgrun.jobs SET status = 'dead' WHERE id = %L$$, :'job'),
    '23514', 'new row for relation "jobs" violates check constraint "jobs_finished_check"',
    'a finished status without finished_at is refused'
);
SELECT throws_ok(
    format($$UPDATE pgrun.jobs SET priority = 32768 WHERE id = %L$$, :'job'),
    '23514', 'new row for relation "jobs" violates check constraint "jobs_priority_check"',
    'a priority past 32767 is refused'
);
SELECT throws_ok(
    format($$UPDATE pgrun.jobs SET idempotency_key = repeat('k', 257), enqueue_request = '{}' WHERE id = %L$$, :'job'),
    '23514', 'new row for relation "jobs" violates check constraint "jobs_idempotency_check"',
    'a key of 257 characters is refused'
);
SELECT throws_ok(
    format($$UPDATE pgrun.jobs SET step_max_attempts = 0 WHERE id = %L$$, :'job'),
    '23514', 'new row for relation "jobs" violates check constraint "jobs_step_max_attempts_check"',
    'a step budget of 0 is refused'
);
SELECT throws_ok(
    format($$UPDATE pgrun.jobs SET step_retry_delay = '-1 second' WHERE id = %L$$, :'job'),
    '23514', 'new row for relation "jobs" violates check constraint "jobs_step_retry_delay_check"',
    'a negative step retry delay is refused'
);
SELECT throws_ok(
    format($$INSERT INTO pgrun.job_events (job_id, event, from_status, to_status, attempt)
        VALUES (%L, 'finished', 'running', 'succeeded', 1)$$, :'job'),
    '23514', 'new row for relation "job_events" violates check constraint "job_events_event_check"',
    'an unknown event is refused'
);
SELECT throws_ok(
    format($$INSERT INTO pgrun.job_events (job_id, event, from_status, to_status, attempt, worker_id, error_message)
        VALUES (%L, 'requeued', 'dead', 'queued', 1, 'worker-1', 'boom')$$, :'job'),
    '23514', 'new row for relation "job_events" violates check constraint "job_events_attempt_check"',
    'an attempt column on an event that ends no attempt is refused'
);
SELECT lives_ok(
    format($$UPDATE pgrun.jobs SET priority = 32767, step_max_attempts = 1000, step_retry_delay = '100 years',
        idempotency_key = repeat('k', 256), enqueue_request = '{}' WHERE id = %L$$, :'job'),
    'the upper ends are accepted'
);
SELECT lives_ok(
    format($$UPDATE pgrun.jobs SET priority = 0, step_max_attempts = 1, step_retry_delay = '0',
        idempotency_key = 'k', enqueue_request = '{}' WHERE id = %L$$, :'job'),
    'the lower ends are accepted'
);

SELECT * FROM finish();
ROLLBACK;
