-- A result over the job type's cap (max_result_bytes, else 1 MiB of jsonb) is refused:
-- complete_job raises job.result_too_large and writes nothing; complete_jobs reports the job
-- as result_too_large (lost_reason NULL) and commits the rest of its batch.
BEGIN;
SELECT plan(17);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT jsonb_build_object('blob', repeat('x', 1100000)) AS big \gset
SELECT job_id AS job, lease_token AS token FROM pgrun_test.running_job() \gset
SELECT pgrun_test.job_fingerprint(:'job') AS before \gset

-- TEST: complete_job refuses a result over the built-in 1 MiB, and writes nothing
SELECT throws_ok(
    format('SELECT pgrun.complete_job(%L, %L, %L::jsonb)', :'job', :'token', :'big'),
    'RQ003', 'job.result_too_large', 'a 1.1 MB result is over the default cap'
);
SELECT alike(
    pgrun_test.error_detail(format('SELECT pgrun.complete_job(%L, %L, %L::jsonb)', :'job', :'token', :'big')),
    'result is % bytes of jsonb; the limit for job type test.job is 1048576',
    'DETAIL gives the size and the limit, not the value'
);
SELECT is(pgrun_test.job_fingerprint(:'job'), :'before', 'nothing was written');
SELECT is(pgrun.complete_job(:'job', :'token', '{"ok": true}'), 'succeeded', 'the job still runs and completes with a small result');

-- TEST: a batch: the oversized job is reported, its batch-mates are committed
SELECT job_id AS ok_job, lease_token AS ok_token FROM pgrun_test.running_job() \gset
SELECT job_id AS big_job, lease_token AS big_token FROM pgrun_test.running_job() \gset
SELECT job_id AS lost_job, lease_token AS lost_token FROM pgrun_test.running_job() \gset
SELECT pgrun_test.job_fingerprint(:'big_job') AS big_before \gset
SELECT results_eq(
    format(
        'SELECT job_id, outcome, lost_reason FROM pgrun.complete_jobs(ARRAY[%L, %L, %L]::uuid[], '
        'ARRAY[%L, %L, gen_random_uuid()]::uuid[], ARRAY[''1''::jsonb, %L::jsonb, ''2''::jsonb])',
        :'ok_job', :'big_job', :'lost_job', :'ok_token', :'big_token', :'big'
    ),
    format(
        'VALUES (%L::uuid, ''succeeded'', NULL::text), (%L::uuid, ''result_too_large'', NULL), '
        '(%L::uuid, ''lease_lost'', ''token_mismatch'')',
        :'ok_job', :'big_job', :'lost_job'
    ),
    'one row each: succeeded, result_too_large (no lost_reason), lease_lost'
);
SELECT is((SELECT result FROM pgrun.jobs WHERE id = :'ok_job'), '1'::jsonb, 'the batch-mate is committed');
SELECT is(pgrun_test.job_fingerprint(:'big_job'), :'big_before', 'nothing was written for the oversized job');
SELECT is((SELECT status FROM pgrun.jobs WHERE id = :'big_job'), 'running', 'it still runs under its lease');

-- TEST: a lost lease with an oversized result is a lost lease
SELECT results_eq(
    format(
        'SELECT outcome, lost_reason FROM pgrun.complete_jobs(ARRAY[%L]::uuid[], ARRAY[gen_random_uuid()], '
        'ARRAY[%L::jsonb])',
        :'big_job', :'big'
    ),
    $$VALUES ('lease_lost', 'token_mismatch')$$,
    'the lease is checked before the size'
);

-- TEST: a per-type cap, lower and higher than the default
SELECT pgrun.upsert_job_definition('test.small', max_result_bytes => 2048);
SELECT pgrun.upsert_job_definition('test.large', max_result_bytes => 16777216);
SELECT job_id AS small_job, lease_token AS small_token FROM pgrun_test.running_job(p_job_type => 'test.small') \gset
SELECT throws_ok(
    format('SELECT pgrun.complete_job(%L, %L, %L::jsonb)', :'small_job', :'small_token',
        jsonb_build_object('s', repeat('y', 3000))),
    'RQ003', 'job.result_too_large', 'a 3000-byte result is over a 2048-byte cap'
);
SELECT is(
    pgrun.complete_job(:'small_job', :'small_token', jsonb_build_object('s', repeat('y', 1500))),
    'succeeded',
    'a 1500-byte result fits it'
);
SELECT job_id AS large_job, lease_token AS large_token FROM pgrun_test.running_job(p_job_type => 'test.large') \gset
SELECT is(pgrun.complete_job(:'large_job', :'large_token', :'big'), 'succeeded', 'a 16 MiB cap takes the 1.1 MB result');
SELECT is(
    (SELECT octet_length(result::text) > 1048576 FROM pgrun.jobs WHERE id = :'large_job'),
    true,
    'and stores it whole'
);

-- TEST: the cap is read at completion, so it applies to jobs enqueued before a change
SELECT job_id AS later_job, lease_token AS later_token FROM pgrun_test.running_job(p_job_type => 'test.later') \gset
SELECT pgrun.upsert_job_definition('test.later', max_result_bytes => 1024);
SELECT throws_ok(
    format('SELECT pgrun.complete_job(%L, %L, %L::jsonb)', :'later_job', :'later_token',
        jsonb_build_object('s', repeat('z', 1100))),
    'RQ003', 'job.result_too_large', 'a definition changed after the claim applies'
);
SELECT is(
    pgrun.complete_job(:'later_job', :'later_token', jsonb_build_object('s', repeat('z', 900))),
    'succeeded',
    'a result within 1 KiB always fits'
);

-- TEST: a cancelled job drops its result, so its size does not matter
SELECT job_id AS cancel_job, lease_token AS cancel_token FROM pgrun_test.running_job() \gset
SELECT pgrun.cancel_job(:'cancel_job', 'stop');
SELECT is(pgrun.complete_job(:'cancel_job', :'cancel_token', :'big'), 'cancelled', 'the cancel wins over the size');
SELECT is((SELECT result FROM pgrun.jobs WHERE id = :'cancel_job'), NULL::jsonb, 'no result is stored');

SELECT * FROM finish();
ROLLBACK;
