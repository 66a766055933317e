-- The one insert of new jobs (pgrun._enqueue_insert_jobs) inserts a single job straight from
-- pgrun._new_job_row, and several through pgrun._new_job_rows, which reads the same row
-- function per element. This pins the row function's resolution (request, else definition,
-- else built-in default; that the planner inlines it is tests_sql/util/
-- test_sql_helpers_inlined.sql's), and that one job and the same job among several come out
-- as the same row; and, for the one-job path, a key
-- that conflicts (NULL back, nothing written, nobody woken), a key that does not, and a job
-- without one.
BEGIN;
SELECT plan(10);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT pgrun_test.record_notifications();
SELECT pgrun.upsert_job_definition(
    'def.job', queue => 'defq', priority => 7, max_attempts => 3, timeout_seconds => 60,
    backoff_base_seconds => 5, backoff_max_seconds => 50, backoff_jitter => 0.5
);

CREATE TEMP TABLE new_jobs (label text PRIMARY KEY, job pgrun._new_job);
INSERT INTO new_jobs VALUES
    ('bare', ROW('00000000-0000-7000-8000-000000000001', 'def.job', '{"a": 1}', NULL, NULL, NULL, NULL,
        '2030-01-01 00:00:00+00', NULL, NULL, NULL, NULL, NULL, NULL)),
    ('asked', ROW('00000000-0000-7000-8000-000000000002', 'def.job', '{}', 'q1', 0, 1000, 5,
        '2030-01-02 00:00:00+00', '22222222-2222-2222-2222-222222222222', 'k1', '{"job_type": "def.job"}',
        NULL, NULL, NULL)),
    ('undefined', ROW('00000000-0000-7000-8000-000000000003', 'plain.job', '{}', NULL, NULL, NULL, NULL,
        '2030-01-01 00:00:00+00', NULL, NULL, NULL, NULL, NULL, NULL));

-- TEST: pgrun._new_job_row resolves each setting: the request, else the definition, else the
-- built-in default (the backoff: the definition, else the default)
SELECT results_eq(
    $$SELECT n.queue, n.priority, n.max_attempts, n.timeout_seconds, n.backoff_base_seconds,
        n.backoff_max_seconds, n.backoff_jitter, n.status
      FROM new_jobs AS j
      CROSS JOIN LATERAL pgrun._new_job_row(j.job, 'defq', 7, 3, 60, 5, 50, 0.5, now()) AS n
      WHERE j.label = 'bare'$$,
    $$VALUES ('defq'::text, 7, 3, 60, 5::float8, 50::float8, 0.5::float8, 'queued'::text)$$,
    'a request that leaves the settings out gets its definition''s'
);
SELECT results_eq(
    $$SELECT n.queue, n.priority, n.max_attempts, n.timeout_seconds, n.organization_id, n.idempotency_key,
        n.enqueue_request, n.run_at, n.created_at, n.updated_at
      FROM new_jobs AS j
      CROSS JOIN LATERAL pgrun._new_job_row(j.job, 'defq', 7, 3, 60, 5, 50, 0.5, '2029-12-31 00:00:00+00') AS n
      WHERE j.label = 'asked'$$,
    $$VALUES ('q1'::text, 0, 1000, 5, '22222222-2222-2222-2222-222222222222'::uuid, 'k1'::text,
        '{"job_type": "def.job"}'::jsonb, '2030-01-02 00:00:00+00'::timestamptz,
        '2029-12-31 00:00:00+00'::timestamptz, '2029-12-31 00:00:00+00'::timestamptz)$$,
    'a request''s own settings win over the definition; the door''s values and p_now pass through'
);
SELECT results_eq(
    $$SELECT n.queue, n.priority, n.max_attempts, n.timeout_seconds, n.backoff_base_seconds,
        n.backoff_max_seconds, n.backoff_jitter
      FROM new_jobs AS j
      CROSS JOIN LATERAL pgrun._new_job_row(j.job, NULL, NULL, NULL, NULL, NULL, NULL, NULL, now()) AS n
      WHERE j.label = 'undefined'$$,
    $$SELECT d.queue, d.priority, d.max_attempts, d.timeout_seconds, d.backoff_base_seconds,
        d.backoff_max_seconds, d.backoff_jitter FROM pgrun._job_defaults() AS d$$,
    'without a definition, the built-in defaults'
);

-- TEST: one job alone and the same job among several make the same row
SELECT is(
    pgrun._enqueue_insert_jobs(ARRAY(SELECT j.job FROM new_jobs AS j WHERE j.label = 'bare')),
    ARRAY['00000000-0000-7000-8000-000000000001'::uuid],
    'one job: its id back'
);
SELECT is(
    pgrun._enqueue_insert_jobs(ARRAY(
        SELECT (ROW(('00000000-0000-7000-8000-00000000001' || n)::uuid, (j.job).job_type, (j.job).payload,
            (j.job).queue, (j.job).priority, (j.job).max_attempts, (j.job).timeout_seconds, (j.job).run_at,
            (j.job).organization_id, (j.job).idempotency_key, (j.job).enqueue_request, NULL, NULL, NULL)::pgrun._new_job)
        FROM new_jobs AS j CROSS JOIN (VALUES (1), (2)) AS v (n)
        WHERE j.label = 'bare' ORDER BY n
    )),
    ARRAY['00000000-0000-7000-8000-000000000011'::uuid, '00000000-0000-7000-8000-000000000012'],
    'two of the same job: both ids back, in order'
);
SELECT is(
    (SELECT count(DISTINCT (job_type, queue, priority, status, payload, run_at, max_attempts, timeout_seconds,
        backoff_base_seconds, backoff_max_seconds, backoff_jitter, organization_id, idempotency_key,
        enqueue_request, created_at, updated_at))::integer
     FROM pgrun.jobs),
    1,
    'the job inserted alone and the two inserted together are the same row but for the id'
);

-- TEST: one keyed job: a new key goes in and wakes its queue; the same key again (same
-- organization) gives NULL back, writes nothing and wakes nobody
TRUNCATE notify_calls;
SELECT is(
    pgrun._enqueue_insert_jobs(ARRAY(SELECT j.job FROM new_jobs AS j WHERE j.label = 'asked')),
    ARRAY['00000000-0000-7000-8000-000000000002'::uuid],
    'a keyed job with a new key: its id back'
);
SELECT results_eq(
    'SELECT queues FROM notify_calls',
    $$VALUES (ARRAY['q1 1893542400000'])$$,
    'its queue is told when it comes due'
);
TRUNCATE notify_calls;
SELECT is(
    pgrun._enqueue_insert_jobs(ARRAY(
        SELECT (ROW('00000000-0000-7000-8000-000000000099', (j.job).job_type, '{"other": true}', NULL, NULL,
            NULL, NULL, (j.job).run_at, (j.job).organization_id, (j.job).idempotency_key, (j.job).enqueue_request,
            NULL, NULL, NULL)::pgrun._new_job)
        FROM new_jobs AS j WHERE j.label = 'asked'
    )),
    NULL,
    'the same key again: NULL back'
);
SELECT ok(
    (SELECT count(*) FROM pgrun.jobs) = 4
    AND NOT EXISTS (SELECT 1 FROM pgrun.jobs WHERE id = '00000000-0000-7000-8000-000000000099')
    AND NOT EXISTS (SELECT 1 FROM notify_calls),
    'and nothing written, nobody woken'
);

SELECT * FROM finish();
ROLLBACK;
