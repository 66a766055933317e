-- A result nested more than 100 levels (pgrun._json_depth_ok) is refused like a result over
-- the cap: complete_job raises job.invalid_result and writes nothing; complete_jobs reports
-- the job as result_invalid (lost_reason NULL), writes nothing for it and commits the rest of
-- its batch. The lease is checked first; a cancelled job drops its result.
BEGIN;
SELECT plan(14);

-- SETUP: n nested arrays
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT (repeat('[', 101) || repeat(']', 101))::jsonb AS deep \gset
SELECT (repeat('[', 100) || repeat(']', 100))::jsonb AS edge \gset
SELECT job_id AS job, lease_token AS token FROM pgrun_test.running_job() \gset
SELECT pgrun_test.job_fingerprint(:'job') AS before \gset

-- TEST: complete_job
SELECT throws_ok(
    format('SELECT pgrun.complete_job(%L, %L, %L::jsonb)', :'job', :'token', :'deep'),
    'RQ003', 'job.invalid_result', 'a result 101 levels deep'
);
SELECT is(
    pgrun_test.error_detail(format('SELECT pgrun.complete_job(%L, %L, %L::jsonb)', :'job', :'token', :'deep')),
    'result is nested more than 100 levels deep (arrays and objects)',
    'DETAIL says why'
);
SELECT is(pgrun_test.job_fingerprint(:'job'), :'before', 'nothing was written');
SELECT is(pgrun.complete_job(:'job', :'token', :'edge'), 'succeeded', 'the job still runs and completes with a 100-deep result');
SELECT is((SELECT result FROM pgrun.jobs WHERE id = :'job'), :'edge'::jsonb, 'stored whole');

-- TEST: a batch: the deep result is reported, its batch-mates are committed
SELECT job_id AS ok_job, lease_token AS ok_token FROM pgrun_test.running_job() \gset
SELECT job_id AS deep_job, lease_token AS deep_token FROM pgrun_test.running_job() \gset
SELECT job_id AS lost_job, lease_token AS lost_token FROM pgrun_test.running_job() \gset
SELECT job_id AS big_job, lease_token AS big_token FROM pgrun_test.running_job() \gset
SELECT pgrun_test.job_fingerprint(:'deep_job') AS deep_before \gset
SELECT results_eq(
    format(
        'SELECT job_id, outcome, lost_reason FROM pgrun.complete_jobs(ARRAY[%L, %L, %L, %L]::uuid[], '
        'ARRAY[%L, %L, gen_random_uuid(), %L]::uuid[], ARRAY[''1''::jsonb, %L::jsonb, %L::jsonb, %L::jsonb])',
        :'ok_job', :'deep_job', :'lost_job', :'big_job', :'ok_token', :'deep_token', :'big_token',
        :'deep', :'deep', jsonb_build_object('deep', :'deep'::jsonb, 'blob', repeat('x', 1100000))
    ),
    format(
        'VALUES (%L::uuid, ''succeeded'', NULL::text), (%L::uuid, ''result_invalid'', NULL), '
        '(%L::uuid, ''lease_lost'', ''token_mismatch''), (%L::uuid, ''result_too_large'', NULL)',
        :'ok_job', :'deep_job', :'lost_job', :'big_job'
    ),
    'one row each: succeeded, result_invalid, lease_lost; too large and too deep is result_too_large'
);
SELECT is((SELECT result FROM pgrun.jobs WHERE id = :'ok_job'), '1'::jsonb, 'the batch-mate is committed');
SELECT is(pgrun_test.job_fingerprint(:'deep_job'), :'deep_before', 'nothing was written for the deep result');
SELECT is((SELECT status FROM pgrun.jobs WHERE id = :'deep_job'), 'running', 'it still runs under its lease');

-- TEST: a lost lease with a deep result is a lost lease
SELECT throws_ok(
    format('SELECT pgrun.complete_job(%L, gen_random_uuid(), %L::jsonb)', :'deep_job', :'deep'),
    'RQ004', 'job.lease_lost', 'the lease is checked before the depth'
);

-- TEST: a compressed argument read from a table is walked too
CREATE TEMP TABLE stored (v jsonb COMPRESSION pglz);
INSERT INTO stored
SELECT (repeat(format('{%s:', to_jsonb(repeat('k', 20))), 101) || '1' || repeat('}', 101))::jsonb;
SELECT throws_ok(
    format('SELECT pgrun.complete_job(%L, %L, v) FROM stored', :'deep_job', :'deep_token'),
    'RQ003', 'job.invalid_result', 'a 101-deep result stored compressed in under 808 bytes'
);
SELECT is(pgrun_test.job_fingerprint(:'deep_job'), :'deep_before', 'nothing was written');

-- TEST: a cancelled job drops its result, so its depth does not matter
SELECT pgrun.cancel_job(:'deep_job', 'stop');
SELECT is(pgrun.complete_job(:'deep_job', :'deep_token', :'deep'), 'cancelled', 'the cancel wins over the depth');
SELECT is((SELECT result FROM pgrun.jobs WHERE id = :'deep_job'), NULL::jsonb, 'no result is stored');

SELECT * FROM finish();
ROLLBACK;
