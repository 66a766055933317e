-- list_jobs pages in ascending id order: after_id = the last id of a page gives the next one.
BEGIN;
SELECT plan(5);

-- SETUP
SELECT count(*) FROM pgrun.enqueue_jobs((SELECT jsonb_agg(jsonb_build_object('job_type', 'a', 'payload', jsonb_build_object('n', n))) FROM generate_series(1, 5) AS n));
CREATE TEMP TABLE all_ids ON COMMIT DROP AS SELECT id FROM pgrun.jobs;
SELECT id AS p1_last FROM pgrun.list_jobs(max_rows => 2) ORDER BY id DESC LIMIT 1 \gset
SELECT id AS p2_last FROM pgrun.list_jobs(after_id => :'p1_last', max_rows => 2) ORDER BY id DESC LIMIT 1 \gset

-- TEST: pages
SELECT results_eq(
    'SELECT id FROM pgrun.list_jobs(max_rows => 2)',
    'SELECT id FROM all_ids ORDER BY id LIMIT 2',
    'the first page holds the two oldest jobs, oldest first'
);
SELECT results_eq(
    format('SELECT id FROM pgrun.list_jobs(after_id => %L, max_rows => 2)', :'p1_last'),
    'SELECT id FROM all_ids ORDER BY id OFFSET 2 LIMIT 2',
    'the second page continues after the first'
);
SELECT results_eq(
    format('SELECT id FROM pgrun.list_jobs(after_id => %L, max_rows => 2)', :'p2_last'),
    'SELECT id FROM all_ids ORDER BY id OFFSET 4',
    'the last page holds the rest'
);
SELECT is_empty(
    format('SELECT id FROM pgrun.list_jobs(after_id => (SELECT max(id::text)::uuid FROM all_ids))'),
    'after the last id there is nothing'
);

-- TEST: the default page size
SELECT count(*) FROM pgrun.enqueue_jobs((SELECT jsonb_agg('{"job_type": "b"}'::jsonb) FROM generate_series(1, 60)));
SELECT is((SELECT count(*) FROM pgrun.list_jobs()), 50::bigint, 'max_rows defaults to 50');

SELECT * FROM finish();
ROLLBACK;
