-- append_job_logs: many lines in one call, one outcome per line in input order (logged,
-- counted, lease_lost, invalid); a job's lines kept in input order up to its attempt's cap;
-- malformed batches refused whole.
BEGIN;
SELECT plan(22);

-- SETUP: two running jobs, a third whose lease has expired
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT job_id AS a, lease_token AS a_token FROM pgrun_test.running_job() \gset
SELECT job_id AS b, lease_token AS b_token FROM pgrun_test.running_job() \gset
SELECT job_id AS gone, lease_token AS gone_token FROM pgrun_test.running_job('worker-1', 5) \gset
SELECT pgrun_test.advance_time('10 seconds');

-- TEST: lines of two jobs, interleaved, with the outcome of each in input order
CREATE TEMP TABLE got AS
SELECT row_number() OVER () AS n, r.*
FROM pgrun.append_job_logs(
    ARRAY[:'a', :'b', :'a', :'gone', :'a', :'a', :'b']::uuid[],
    ARRAY[:'a_token', :'b_token', :'a_token', :'gone_token', gen_random_uuid(), :'a_token', :'b_token']::uuid[],
    ARRAY['a one', 'b one', 'a two', 'expired', 'wrong token', 'a bad level', 'b with fields'],
    ARRAY[NULL, 'warning', 'error', NULL, NULL, 'loud', 'debug'],
    ARRAY[NULL, NULL, NULL, NULL, NULL, NULL, '{"k": 1}']::jsonb[]
) AS r;
SELECT is(
    (SELECT array_agg(outcome ORDER BY n) FROM got),
    ARRAY['logged', 'logged', 'logged', 'lease_lost', 'lease_lost', 'invalid', 'logged'],
    'each line has its outcome, in input order'
);
SELECT is(
    (SELECT array_agg(job_id ORDER BY n) FROM got),
    ARRAY[:'a', :'b', :'a', :'gone', :'a', :'a', :'b']::uuid[],
    'each row names its line''s job'
);
SELECT ok(
    (SELECT bool_and(log_id IS NOT NULL) = true FROM got WHERE outcome = 'logged')
    AND (SELECT bool_and(log_id IS NULL) FROM got WHERE outcome <> 'logged'),
    'stored lines return their ids, the others none'
);
SELECT is(
    (SELECT array_agg(n ORDER BY log_id) FROM got WHERE outcome = 'logged'),
    ARRAY[1, 2, 3, 7]::bigint[],
    'the ids follow the input order'
);
SELECT results_eq(
    format(
        'SELECT message, level, fields, created_at FROM pgrun.job_logs WHERE job_id IN (%L, %L) ORDER BY id',
        :'a', :'b'
    ),
    $$VALUES ('a one', 'info', NULL::jsonb, '2030-01-01 00:00:10+00'::timestamptz),
             ('b one', 'warning', NULL, '2030-01-01 00:00:10+00'),
             ('a two', 'error', NULL, '2030-01-01 00:00:10+00'),
             ('b with fields', 'debug', '{"k": 1}', '2030-01-01 00:00:10+00')$$,
    'the stored lines: NULL level is info, fields kept, the clock''s time'
);
SELECT is(
    (SELECT count(*)::integer FROM pgrun.job_logs WHERE job_id = :'gone'),
    0,
    'nothing is written for a lease that expired'
);
SELECT is(
    (SELECT array_agg(stored || '/' || dropped ORDER BY job_id = :'b') FROM pgrun.job_log_counts WHERE job_id IN (:'a', :'b')),
    ARRAY['2/0', '2/0'],
    'the attempts count the stored lines only (not the refused or invalid ones)'
);
SELECT is(
    (SELECT count(*)::integer FROM pgrun.job_log_counts WHERE job_id = :'gone'),
    0,
    'no count is made for a job without a live lease'
);

-- TEST: invalid fields are per line, like a bad level
SELECT is(
    (SELECT array_agg(outcome) FROM pgrun.append_job_logs(
        ARRAY[:'a', :'a', :'a', :'a']::uuid[],
        ARRAY[:'a_token', :'a_token', :'a_token', :'a_token']::uuid[],
        ARRAY['array', 'too big', 'too deep', 'fine'],
        NULL,
        ARRAY[
            '[1]',
            jsonb_build_object('k', repeat('x', 70000)),
            (SELECT (repeat('[', 101) || repeat(']', 101))::jsonb),
            NULL
        ]::jsonb[]
    )),
    ARRAY['invalid', 'invalid', 'invalid', 'logged'],
    'fields that are not an object, over 64 KiB or nested too deep make their line invalid'
);

-- TEST: messages are clipped as append_job_log clips them
SELECT is(
    (SELECT length(l.message) FROM pgrun.append_job_logs(ARRAY[:'b']::uuid[], ARRAY[:'b_token']::uuid[], ARRAY[repeat('m', 9000)]) AS r
     JOIN pgrun.job_logs AS l ON l.id = r.log_id),
    (SELECT length(l.message) FROM pgrun.job_logs AS l WHERE l.id = pgrun.append_job_log(:'b', :'b_token', repeat('m', 9000))),
    'an over-long message is clipped to what append_job_log keeps'
);

-- TEST: the cap: an attempt at 998 lines takes two more and counts the rest, in input order
SELECT count(pgrun.append_job_log(:'a', :'a_token', 'filler ' || g.i)) FROM generate_series(1, 995) AS g (i);
SELECT is(
    (SELECT stored FROM pgrun.job_log_counts WHERE job_id = :'a'),
    998,
    'the attempt holds 998 lines'
);
SELECT is(
    (SELECT array_agg(outcome) FROM pgrun.append_job_logs(
        ARRAY[:'a', :'a', :'a', :'a']::uuid[],
        ARRAY[:'a_token', :'a_token', :'a_token', :'a_token']::uuid[],
        ARRAY['999', '1000', '1001', '1002']
    )),
    ARRAY['logged', 'logged', 'counted', 'counted'],
    'the lines up to the cap are logged, the later ones counted'
);
SELECT is(
    (SELECT message FROM pgrun.job_logs WHERE job_id = :'a' ORDER BY id DESC LIMIT 1),
    '1000',
    'the kept lines are the first ones'
);
SELECT is(
    pgrun.get_job(:'a') -> 'attempts' -> 0 -> 'log_lines_dropped',
    '2'::jsonb,
    'get_job counts the dropped lines'
);
SELECT is(
    pgrun.get_job(:'a') -> 'attempts' -> 0 -> 'log_lines',
    '1000'::jsonb,
    'and the kept ones'
);

-- TEST: an empty batch writes nothing
SELECT is_empty(
    'SELECT * FROM pgrun.append_job_logs(''{}''::uuid[], ''{}''::uuid[], ''{}''::text[])',
    'an empty batch returns no row'
);

-- TEST: malformed batches are refused whole
SELECT throws_ok(
    format('SELECT * FROM pgrun.append_job_logs(ARRAY[%L]::uuid[], NULL, ARRAY[''x''])', :'b'),
    'RQ003', 'job.invalid_batch', 'NULL lease_tokens'
);
SELECT throws_ok(
    format('SELECT * FROM pgrun.append_job_logs(ARRAY[%L]::uuid[], ARRAY[%L]::uuid[], ARRAY[''x'', ''y''])', :'b', :'b_token'),
    'RQ003', 'job.invalid_batch', 'messages of another length'
);
SELECT throws_ok(
    format(
        'SELECT * FROM pgrun.append_job_logs(ARRAY[%L]::uuid[], ARRAY[%L]::uuid[], ARRAY[''x''], ARRAY[''info'', ''info''])',
        :'b', :'b_token'
    ),
    'RQ003', 'job.invalid_batch', 'levels of another length'
);
SELECT throws_ok(
    format('SELECT * FROM pgrun.append_job_logs(ARRAY[%L]::uuid[], ARRAY[%L]::uuid[], ARRAY[NULL::text])', :'b', :'b_token'),
    'RQ003', 'job.invalid_batch', 'a NULL message'
);
SELECT throws_ok(
    format(
        'SELECT * FROM pgrun.append_job_logs(ARRAY[ARRAY[%L]]::uuid[], ARRAY[ARRAY[%L]]::uuid[], ARRAY[ARRAY[''x'']])',
        :'b', :'b_token'
    ),
    'RQ003', 'job.invalid_batch', 'two-dimensional arrays'
);
SELECT throws_ok(
    format(
        'SELECT * FROM pgrun.append_job_logs(array_fill(%L::uuid, ARRAY[10001]), array_fill(%L::uuid, ARRAY[10001]), array_fill(''x''::text, ARRAY[10001]))',
        :'b', :'b_token'
    ),
    'RQ003', 'job.invalid_batch', 'more than 10000 lines'
);

SELECT * FROM finish();
ROLLBACK;
