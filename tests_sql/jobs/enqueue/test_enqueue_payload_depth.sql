-- A payload nested more than 100 levels (arrays/objects, pgrun._json_depth_ok) is
-- job.invalid_payload through either door, nothing written; 100 levels are fine. A
-- schedule's payload goes through the same checker (tests_sql/schedules/upsert).
BEGIN;
SELECT plan(9);

-- SETUP: {"a": [[...]]}: the object and n arrays, n + 1 levels
SELECT ('{"a": ' || repeat('[', 100) || repeat(']', 100) || '}')::jsonb AS deep \gset
SELECT ('{"a": ' || repeat('[', 99) || repeat(']', 99) || '}')::jsonb AS edge \gset
SELECT count(*) AS jobs_before FROM pgrun.jobs \gset

-- TEST: enqueue_job
SELECT throws_ok(
    format('SELECT * FROM pgrun.enqueue_job(%L, %L::jsonb)', 'a', :'deep'),
    'RQ003', 'job.invalid_payload', 'a payload 101 levels deep'
);
SELECT throws_ok(
    format('SELECT * FROM pgrun.enqueue_job(%L, (%L || repeat(%L, 5000) || repeat(%L, 5000) || %L)::jsonb)',
        'a', '{"a": ', '[', ']', '}'),
    'RQ003', 'job.invalid_payload', 'a payload 5001 levels deep'
);
SELECT is(
    pgrun_test.error_detail(format('SELECT * FROM pgrun.enqueue_job(%L, %L::jsonb)', 'a', :'deep')),
    'payload is nested more than 100 levels deep (arrays and objects)',
    'DETAIL says why, without echoing the value'
);
SELECT is((SELECT count(*) FROM pgrun.jobs), :jobs_before::bigint, 'nothing was written');
SELECT job_id AS edge_job FROM pgrun.enqueue_job('a', :'edge') \gset
SELECT is((SELECT payload FROM pgrun.jobs WHERE id = :'edge_job'), :'edge'::jsonb, 'a payload 100 levels deep is stored whole');

-- TEST: enqueue_jobs names the element, and writes none of the batch
SELECT throws_ok(
    format('SELECT * FROM pgrun.enqueue_jobs(%L::jsonb)',
        jsonb_build_array(jsonb_build_object('job_type', 'a', 'payload', :'edge'::jsonb),
            jsonb_build_object('job_type', 'a', 'payload', :'deep'::jsonb))),
    'RQ003', 'job.invalid_payload', 'enqueue_jobs: the second element 101 levels deep'
);
SELECT is(
    pgrun_test.error_detail(format('SELECT * FROM pgrun.enqueue_jobs(%L::jsonb)',
        jsonb_build_array(jsonb_build_object('job_type', 'a', 'payload', :'edge'::jsonb),
            jsonb_build_object('job_type', 'a', 'payload', :'deep'::jsonb)))),
    'element 2: payload is nested more than 100 levels deep (arrays and objects)',
    'DETAIL names the element'
);
SELECT is((SELECT count(*) FROM pgrun.jobs), :jobs_before::bigint + 1, 'nothing more was written');

-- TEST: the type is checked first: a deep array is not an object
SELECT throws_ok(
    format('SELECT * FROM pgrun.enqueue_job(%L, (repeat(%L, 200) || repeat(%L, 200))::jsonb)', 'a', '[', ']'),
    'RQ003', 'job.invalid_payload', 'a deep array payload'
);

SELECT * FROM finish();
ROLLBACK;
