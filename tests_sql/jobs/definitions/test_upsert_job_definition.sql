-- upsert_job_definition creates a definition, and a second call replaces it as a whole.
BEGIN;
SELECT plan(4);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');

-- TEST: create with the defaults
SELECT row_eq(
    $$SELECT job_type, queue, priority, max_attempts, timeout_seconds, backoff_base_seconds,
             backoff_max_seconds, backoff_jitter, created_at, updated_at
      FROM pgrun.upsert_job_definition('mail.send')$$,
    ROW('mail.send'::text, 'default'::text, 100, 20, NULL::integer, 2::double precision,
        3600::double precision, 0.2::double precision, '2030-01-01 00:00:00+00'::timestamptz,
        '2030-01-01 00:00:00+00'::timestamptz),
    'a definition with only a type gets the built-in defaults, and is returned'
);

-- TEST: replace
SELECT pgrun_test.freeze_time('2030-01-02 00:00:00+00');
SELECT pgrun.upsert_job_definition(
    'mail.send', queue => 'mail', priority => 1, max_attempts => 5, timeout_seconds => 30,
    backoff_base_seconds => 0.5, backoff_max_seconds => 60, backoff_jitter => 0
);
SELECT row_eq(
    $$SELECT queue, priority, max_attempts, timeout_seconds, backoff_base_seconds, backoff_max_seconds,
             backoff_jitter, created_at, updated_at
      FROM pgrun.job_definitions WHERE job_type = 'mail.send'$$,
    ROW('mail'::text, 1, 5, 30, 0.5::double precision, 60::double precision, 0::double precision,
        '2030-01-01 00:00:00+00'::timestamptz, '2030-01-02 00:00:00+00'::timestamptz),
    'every field is replaced; created_at stays, updated_at moves'
);

-- TEST: a call is the whole definition, not a merge
SELECT pgrun.upsert_job_definition('mail.send', priority => 7);
SELECT row_eq(
    $$SELECT queue, priority, max_attempts, timeout_seconds FROM pgrun.job_definitions WHERE job_type = 'mail.send'$$,
    ROW('default'::text, 7, 20, NULL::integer),
    'arguments left out go back to the built-in defaults'
);
SELECT is((SELECT count(*) FROM pgrun.job_definitions), 1::bigint, 'still one row per job type');

SELECT * FROM finish();
ROLLBACK;
