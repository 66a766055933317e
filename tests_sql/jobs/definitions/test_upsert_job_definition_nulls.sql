-- NULL arguments to upsert_job_definition mean the built-in defaults (timeout NULL: none).
BEGIN;
SELECT plan(1);

SELECT row_eq(
    $$SELECT queue, priority, max_attempts, timeout_seconds, backoff_base_seconds, backoff_max_seconds,
             backoff_jitter
      FROM pgrun.upsert_job_definition('a', NULL, NULL, NULL, NULL, NULL, NULL, NULL)$$,
    ROW('default'::text, 100, 20, NULL::integer, 2::double precision, 3600::double precision,
        0.2::double precision),
    'every NULL takes its built-in default'
);

SELECT * FROM finish();
ROLLBACK;
