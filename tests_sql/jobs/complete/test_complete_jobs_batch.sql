-- complete_jobs: one statement for a batch; a lost lease is reported in its row, the rest
-- of the batch completes.
BEGIN;
SELECT plan(8);

-- SETUP: three running jobs; b's lease is stale, c is unknown to the database
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT job_id AS a, lease_token AS a_token FROM pgrun_test.running_job() \gset
SELECT job_id AS b, lease_token AS b_token FROM pgrun_test.running_job() \gset
SELECT job_id AS d, lease_token AS d_token FROM pgrun_test.running_job() \gset
SELECT gen_random_uuid() AS c \gset
SELECT pgrun_test.job_fingerprint(:'b') AS b_before \gset

CREATE TEMP TABLE outcome ON COMMIT DROP AS
SELECT *, row_number() OVER () AS n
FROM pgrun.complete_jobs(
    job_ids => ARRAY[:'d', :'b', :'c', :'a']::uuid[],
    lease_tokens => ARRAY[:'d_token', gen_random_uuid(), gen_random_uuid(), :'a_token']::uuid[],
    results => ARRAY['{"n": 4}', NULL, NULL, '{"n": 1}']::jsonb[]
);

-- TEST: one row per input, in input order, each with its outcome
SELECT results_eq(
    'SELECT job_id, outcome, lost_reason FROM outcome ORDER BY n',
    format(
        'VALUES (%L::uuid, ''succeeded'', NULL::text), (%L::uuid, ''lease_lost'', ''token_mismatch''), '
        '(%L::uuid, ''lease_lost'', ''unknown_job''), (%L::uuid, ''succeeded'', NULL::text)',
        :'d', :'b', :'c', :'a'
    ),
    'owned leases succeed; the stale and unknown ones are reported, not raised'
);

-- TEST: the owned jobs are succeeded with their own results
SELECT results_eq(
    format('SELECT id, status, result FROM pgrun.jobs WHERE id IN (%L, %L) ORDER BY id', :'a', :'d'),
    format('VALUES (%L::uuid, ''succeeded'', ''{"n": 1}''::jsonb), (%L::uuid, ''succeeded'', ''{"n": 4}''::jsonb)', :'a', :'d'),
    'each completed job keeps its own result'
);

-- TEST: the stale job is untouched
SELECT is(pgrun_test.job_fingerprint(:'b'), :'b_before', 'nothing was written for the lost lease');
SELECT is((SELECT status FROM pgrun.jobs WHERE id = :'b'), 'running', 'the stale job still runs under its owner');

-- TEST: each completed job's attempt is on its row (its own token), no event is written
SELECT is(
    (SELECT count(*) FROM pgrun.job_events WHERE job_id IN (:'a', :'b', :'d')),
    0::bigint,
    'no event for the batch: the completed jobs'' rows record their attempts'
);
SELECT results_eq(
    format('SELECT job_id, attempt, lease_token, outcome FROM pgrun.job_attempts WHERE job_id IN (%L, %L) ORDER BY job_id', :'a', :'d'),
    format(
        'VALUES (%L::uuid, 1, %L::uuid, ''succeeded''::text), (%L::uuid, 1, %L::uuid, ''succeeded''::text)',
        least(:'a'::uuid, :'d'::uuid),
        CASE WHEN :'a'::uuid < :'d'::uuid THEN :'a_token' ELSE :'d_token' END,
        greatest(:'a'::uuid, :'d'::uuid),
        CASE WHEN :'a'::uuid < :'d'::uuid THEN :'d_token' ELSE :'a_token' END
    ),
    'each completed job''s attempt carries the token it completed under'
);

-- TEST: a batch in which nothing finished still answers every job, in input order
SELECT results_eq(
    format(
        'SELECT job_id, outcome, lost_reason FROM pgrun.complete_jobs(ARRAY[%L, %L, %L]::uuid[], '
        'ARRAY[gen_random_uuid(), %L, gen_random_uuid()]::uuid[])',
        :'b', :'a', :'c', :'a_token'
    ),
    format(
        'VALUES (%L::uuid, ''lease_lost'', ''token_mismatch''), (%L::uuid, ''lease_lost'', ''not_running''), '
        '(%L::uuid, ''lease_lost'', ''unknown_job'')',
        :'b', :'a', :'c'
    ),
    'no job of the batch finished: each lost lease reported in its place'
);

-- TEST: an empty batch is a no-op
SELECT is_empty(
    'SELECT * FROM pgrun.complete_jobs(''{}''::uuid[], ''{}''::uuid[])',
    'an empty batch returns no rows'
);

SELECT * FROM finish();
ROLLBACK;
