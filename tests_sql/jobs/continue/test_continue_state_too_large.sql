-- continue_job refuses a state over the job type's cap (max_result_bytes, else 1 MiB of
-- jsonb) with job.state_too_large and writes nothing; a lost lease is still reported as one.
BEGIN;
SELECT plan(7);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT jsonb_build_object('blob', repeat('x', 1100000)) AS big \gset
SELECT job_id AS job, lease_token AS token FROM pgrun_test.running_job() \gset
SELECT pgrun_test.job_fingerprint(:'job') AS before \gset

-- TEST: over the default cap
SELECT throws_ok(
    format('SELECT * FROM pgrun.continue_job(%L, %L, ''next'', %L::jsonb)', :'job', :'token', :'big'),
    'RQ003', 'job.state_too_large', 'a 1.1 MB state is over the default cap'
);
SELECT is(pgrun_test.job_fingerprint(:'job'), :'before', 'nothing was written');
SELECT alike(
    pgrun_test.error_detail(format('SELECT * FROM pgrun.continue_job(%L, %L, ''next'', %L::jsonb)', :'job', :'token', :'big')),
    'state is % bytes of jsonb; the limit for job type test.job is 1048576',
    'DETAIL gives the size and the limit'
);

-- TEST: a lost lease wins over the size
SELECT throws_ok(
    format('SELECT * FROM pgrun.continue_job(%L, gen_random_uuid(), ''next'', %L::jsonb)', :'job', :'big'),
    'RQ004', 'job.lease_lost', 'another token is a lost lease, whatever the state'
);

-- TEST: a per-type cap
SELECT pgrun.upsert_job_definition('test.small', max_result_bytes => 2048);
SELECT job_id AS small_job, lease_token AS small_token FROM pgrun_test.running_job(p_job_type => 'test.small') \gset
SELECT throws_ok(
    format('SELECT * FROM pgrun.continue_job(%L, %L, ''next'', %L::jsonb)', :'small_job', :'small_token',
        jsonb_build_object('s', repeat('y', 3000))),
    'RQ003', 'job.state_too_large', 'a 3000-byte state is over a 2048-byte cap'
);
SELECT results_eq(
    format('SELECT outcome FROM pgrun.continue_job(%L, %L, ''next'', %L::jsonb)', :'small_job', :'small_token',
        jsonb_build_object('s', repeat('y', 1500))),
    $$VALUES ('continued')$$,
    'a 1500-byte state fits it'
);
SELECT is(
    (SELECT state ->> 's' FROM pgrun.jobs WHERE id = :'small_job'),
    repeat('y', 1500),
    'and is stored'
);

SELECT * FROM finish();
ROLLBACK;
