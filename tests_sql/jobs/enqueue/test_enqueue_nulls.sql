-- NULL for any optional argument means "not given": definition or built-in default.
BEGIN;
SELECT plan(2);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT pgrun.upsert_job_definition('report.build', queue => 'reports', priority => 5);

-- TEST: every optional argument NULL
SELECT results_eq(
    $$SELECT created, status, run_at FROM pgrun.enqueue_job(
        job_type => 'report.build', payload => NULL, queue => NULL, priority => NULL, run_at => NULL,
        delay => NULL, max_attempts => NULL, timeout_seconds => NULL, idempotency_key => NULL,
        organization_id => NULL
    )$$,
    $$VALUES (true, 'queued'::text, '2030-01-01 00:00:00+00'::timestamptz)$$,
    'all-NULL optional arguments enqueue a job ready now'
);
SELECT row_eq(
    $$SELECT queue, priority, max_attempts, timeout_seconds, payload, organization_id, idempotency_key
      FROM pgrun.jobs$$,
    ROW('reports'::text, 5, 20, NULL::integer, '{}'::jsonb, NULL::uuid, NULL::text),
    'the definition and the built-in defaults fill every NULL'
);

SELECT * FROM finish();
ROLLBACK;
