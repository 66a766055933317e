-- pgrun._lease_batch_left: the answer for the jobs a batch write left unwritten. A job the
-- batch still owns had its value refused (the caller's names for too large and too deep); any
-- other lost its lease, with the reason; the written positions are left out. complete_jobs and
-- continue_jobs answer their left-over jobs through it.
BEGIN;
SELECT plan(3);

-- SETUP: a (capped type, value too large), b (value too deep), c (written), d (stale token)
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT pgrun.upsert_job_definition('test.small', max_result_bytes => 2048);
SELECT job_id AS a, lease_token AS ta FROM pgrun_test.running_job(p_job_type => 'test.small') \gset
SELECT job_id AS b, lease_token AS tb FROM pgrun_test.running_job() \gset
SELECT job_id AS c, lease_token AS tc FROM pgrun_test.running_job() \gset
SELECT job_id AS d FROM pgrun_test.running_job() \gset
SELECT jsonb_build_object('s', repeat('y', 3000)) AS big, (repeat('[', 101) || repeat(']', 101))::jsonb AS deep \gset

CREATE TEMP TABLE got ON COMMIT DROP AS
SELECT * FROM pgrun._lease_batch_left(
    ARRAY[:'a', :'b', :'c', :'d']::uuid[],
    ARRAY[:'ta', :'tb', :'tc', gen_random_uuid()]::uuid[],
    ARRAY[:'big', :'deep', NULL, NULL]::jsonb[],
    ARRAY[3]::bigint[],
    pgrun.now(),
    'too_large', 'too_deep'
);

-- TEST: every position not written, with its outcome
SELECT results_eq(
    'SELECT id, outcome, lost_reason, ord FROM got ORDER BY ord',
    format(
        'VALUES (%L::uuid, ''too_large'', NULL::text, 1::bigint), (%L, ''too_deep'', NULL, 2), '
        '(%L, ''lease_lost'', ''token_mismatch'', 4)',
        :'a', :'b', :'d'
    ),
    'owned jobs: their value refused, by the caller''s names; the stale one: its lease lost'
);

-- TEST: a value within the type's cap is not refused (the job then counts as lost: the caller
-- asks only for jobs it did not write)
SELECT is(
    (SELECT outcome FROM pgrun._lease_batch_left(
        ARRAY[:'a']::uuid[], ARRAY[:'ta']::uuid[], ARRAY[jsonb_build_object('s', repeat('y', 1500))],
        NULL, pgrun.now(), 'too_large', 'too_deep'
    )),
    'lease_lost',
    'a value within the cap is no refusal'
);

-- TEST: nothing written (NULL) leaves every position in
SELECT is(
    (SELECT count(*) FROM pgrun._lease_batch_left(
        ARRAY[:'b', :'d']::uuid[], ARRAY[:'tb', gen_random_uuid()]::uuid[], NULL, NULL, pgrun.now(), 'x', 'y'
    )),
    2::bigint,
    'with no position written, every job is answered'
);

SELECT * FROM finish();
ROLLBACK;
