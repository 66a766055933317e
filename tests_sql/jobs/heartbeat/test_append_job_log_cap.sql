-- An attempt keeps its first 1000 log lines; later ones are not stored but counted, and
-- get_job shows the counts per attempt. The next attempt starts afresh.
BEGIN;
SELECT plan(9);

-- SETUP: 1003 lines in the first attempt
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT job_id AS job, lease_token AS token FROM pgrun_test.running_job() \gset
SELECT count(pgrun.append_job_log(:'job', :'token', 'line ' || g.i)) AS stored_ids
FROM generate_series(1, 1000) AS g (i) \gset

-- TEST: the first 1000 lines are stored, with ids
SELECT is(:'stored_ids'::integer, 1000, 'each of the first 1000 lines returns its id');
SELECT is(pgrun.append_job_log(:'job', :'token', 'line 1001'), NULL::bigint, 'line 1001 returns NULL');
SELECT is(pgrun.append_job_log(:'job', :'token', 'line 1002', 'error'), NULL::bigint, 'and so does line 1002');
SELECT is(
    (SELECT count(*)::integer FROM pgrun.job_logs WHERE job_id = :'job'),
    1000,
    'only 1000 lines are stored'
);
SELECT is(
    (SELECT message FROM pgrun.job_logs WHERE job_id = :'job' ORDER BY id DESC LIMIT 1),
    'line 1000',
    'the kept lines are the first ones'
);

-- TEST: get_job counts them per attempt
SELECT is(
    pgrun.get_job(:'job') -> 'attempts' -> 0 -> 'log_lines',
    '1000'::jsonb,
    'the attempt shows 1000 lines kept'
);
SELECT is(
    pgrun.get_job(:'job') -> 'attempts' -> 0 -> 'log_lines_dropped',
    '2'::jsonb,
    'and 2 dropped'
);

-- TEST: a new attempt has its own budget
SELECT * FROM pgrun.fail_job(:'job', :'token', 'e', 'again', retry_delay => '0 seconds');
SELECT pgrun_test.claim_job(:'job') AS token2 \gset
SELECT isnt(pgrun.append_job_log(:'job', :'token2', 'second attempt'), NULL::bigint, 'the next attempt logs again');
SELECT is(
    jsonb_path_query_array(pgrun.get_job(:'job'), '$.attempts[*].log_lines_dropped'),
    '[2, 0]'::jsonb,
    'each attempt keeps its own count'
);

SELECT * FROM finish();
ROLLBACK;
