-- A job definition supplies the defaults; explicit arguments override it field by field.
BEGIN;
SELECT plan(3);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT pgrun.upsert_job_definition(
    'report.build', queue => 'reports', priority => 5, max_attempts => 4, timeout_seconds => 60,
    backoff_base_seconds => 1, backoff_max_seconds => 30, backoff_jitter => 0
);
SELECT job_id AS defaulted FROM pgrun.enqueue_job('report.build', '{"n": 1}') \gset
SELECT job_id AS overridden FROM pgrun.enqueue_job(
    'report.build', '{"n": 2}', queue => 'urgent', priority => 0, max_attempts => 1, timeout_seconds => 5
) \gset

-- TEST: defaults from the definition
SELECT row_eq(
    format(
        'SELECT queue, priority, max_attempts, timeout_seconds, backoff_base_seconds, backoff_max_seconds,
                backoff_jitter
         FROM pgrun.jobs WHERE id = %L', :'defaulted'
    ),
    ROW('reports'::text, 5, 4, 60, 1::double precision, 30::double precision, 0::double precision),
    'queue, priority, attempts, timeout and backoff come from the definition'
);

-- TEST: explicit arguments win
SELECT row_eq(
    format(
        'SELECT queue, priority, max_attempts, timeout_seconds, backoff_base_seconds
         FROM pgrun.jobs WHERE id = %L', :'overridden'
    ),
    ROW('urgent'::text, 0, 1, 5, 1::double precision),
    'given queue, priority, attempts and timeout override it; backoff still comes from it'
);

-- TEST: a later definition change does not touch existing jobs
SELECT pgrun.upsert_job_definition('report.build', queue => 'elsewhere');
SELECT is(
    (SELECT queue FROM pgrun.jobs WHERE id = :'defaulted'),
    'reports',
    'jobs keep the values they were enqueued with'
);

SELECT * FROM finish();
ROLLBACK;
