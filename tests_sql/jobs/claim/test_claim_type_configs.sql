-- claim_jobs' read of job_runtime_configs (pgrun._claim_type_configs): of the job types asked
-- for (NULL: all), the paused ones are left out and the capped, not paused ones are capped; a
-- paused type with a cap is only left out; types without a config row are neither.
BEGIN;
SELECT plan(5);

-- SETUP
INSERT INTO pgrun.job_runtime_configs (job_type, paused, max_concurrency) VALUES
    ('a.paused', true, NULL),
    ('b.capped', false, 3),
    ('c.both', true, 2),
    ('d.plain', false, NULL);

-- TEST: every type
SELECT results_eq(
    $$SELECT (SELECT array_agg(x ORDER BY x) FROM unnest(t.excluded) AS x),
             (SELECT array_agg(x ORDER BY x) FROM unnest(t.capped) AS x)
      FROM pgrun._claim_type_configs(NULL) AS t$$,
    $$VALUES ('{a.paused,c.both}'::text[], '{b.capped}'::text[])$$,
    'NULL asks for every type: paused ones left out, the capped one that is not paused capped'
);

-- TEST: the types asked for only
SELECT results_eq(
    $$SELECT t.excluded, t.capped FROM pgrun._claim_type_configs('{b.capped,d.plain,e.unknown}') AS t$$,
    $$VALUES ('{}'::text[], '{b.capped}'::text[])$$,
    'only the types asked for; a type without a config row is neither'
);
SELECT results_eq(
    $$SELECT t.excluded, t.capped FROM pgrun._claim_type_configs('{c.both}') AS t$$,
    $$VALUES ('{c.both}'::text[], '{}'::text[])$$,
    'a paused type with a cap is left out, not capped'
);

-- TEST: nothing configured among them: empty arrays, one row
SELECT results_eq(
    $$SELECT t.excluded, t.capped FROM pgrun._claim_type_configs('{d.plain}') AS t$$,
    $$VALUES ('{}'::text[], '{}'::text[])$$,
    'no paused or capped type: two empty arrays'
);
SELECT results_eq(
    $$SELECT t.excluded, t.capped FROM pgrun._claim_type_configs('{}') AS t$$,
    $$VALUES ('{}'::text[], '{}'::text[])$$,
    'an empty list of types: two empty arrays'
);

SELECT * FROM finish();
ROLLBACK;
