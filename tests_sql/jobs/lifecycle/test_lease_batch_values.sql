-- A batch write's view of its batch (pgrun._lease_batch_values): one row per job in input
-- order, with its position, its value's size in bytes of jsonb (NULL for none) and whether the
-- value's nesting is allowed; both statements of complete_jobs (results) and of continue_jobs
-- (states) judge values by it.
BEGIN;
SELECT plan(4);

-- SETUP: three jobs: a small value, none, one nested 101 levels
SELECT gen_random_uuid() AS a, gen_random_uuid() AS b, gen_random_uuid() AS c \gset
SELECT gen_random_uuid() AS ta, gen_random_uuid() AS tb, gen_random_uuid() AS tc \gset
SELECT (repeat('[', 101) || repeat(']', 101))::jsonb AS deep \gset
CREATE TEMP TABLE got ON COMMIT DROP AS
SELECT * FROM pgrun._lease_batch_values(
    ARRAY[:'a', :'b', :'c']::uuid[],
    ARRAY[:'ta', :'tb', :'tc']::uuid[],
    ARRAY['{"n": 1}', NULL, :'deep']::jsonb[]
);

-- TEST: one row per job, in input order, with its token
SELECT results_eq(
    'SELECT id, token, ord FROM got ORDER BY ord',
    format('VALUES (%L::uuid, %L::uuid, 1::bigint), (%L, %L, 2), (%L, %L, 3)', :'a', :'ta', :'b', :'tb', :'c', :'tc'),
    'each job with its token and 1-based position'
);

-- TEST: the value's size, and its nesting verdict
SELECT is((SELECT value_bytes FROM got WHERE ord = 1), pg_column_size('{"n": 1}'::jsonb), 'size in bytes of jsonb');
SELECT is((SELECT value_bytes FROM got WHERE ord = 2), NULL::integer, 'no value: no size');
SELECT results_eq(
    'SELECT value_ok FROM got ORDER BY ord',
    $$VALUES (true), (true), (false)$$,
    'a value nested 101 levels is not allowed; a small one and none are'
);

SELECT * FROM finish();
ROLLBACK;
