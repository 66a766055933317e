-- release_jobs: only a live lease under its own token releases; a lost lease is reported in
-- its row and nothing is written for it; the rest of the batch is released.
BEGIN;
SELECT plan(9);

-- SETUP: a owned; b claimed but passed with another token; c's lease expired; d finished;
-- e unknown
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT job_id AS a, lease_token AS a_token FROM pgrun_test.running_job() \gset
SELECT job_id AS b, lease_token AS b_token FROM pgrun_test.running_job() \gset
SELECT job_id AS c, lease_token AS c_token FROM pgrun_test.running_job(p_lease_seconds => 10) \gset
SELECT job_id AS d, lease_token AS d_token FROM pgrun_test.running_job() \gset
SELECT pgrun.complete_job(:'d', :'d_token');
SELECT gen_random_uuid() AS e \gset
SELECT pgrun_test.advance_time('15 seconds');
SELECT pgrun_test.job_fingerprint(:'b') AS b_before \gset
SELECT pgrun_test.job_fingerprint(:'c') AS c_before \gset
SELECT pgrun_test.job_fingerprint(:'d') AS d_before \gset

CREATE TEMP TABLE outcome ON COMMIT DROP AS
SELECT *, row_number() OVER () AS n
FROM pgrun.release_jobs(
    job_ids => ARRAY[:'b', :'c', :'a', :'d', :'e']::uuid[],
    lease_tokens => ARRAY[gen_random_uuid(), :'c_token', :'a_token', :'d_token', gen_random_uuid()]::uuid[]
);

-- TEST: one row per input in input order; the lost leases with their reasons (the test
-- runs as an admin, which is told the precise reason)
SELECT results_eq(
    'SELECT job_id, outcome, lost_reason FROM outcome ORDER BY n',
    format(
        'VALUES (%L::uuid, ''lease_lost'', ''token_mismatch''), (%L::uuid, ''lease_lost'', ''lease_expired''), '
        '(%L::uuid, ''released'', NULL::text), (%L::uuid, ''lease_lost'', ''not_running''), '
        '(%L::uuid, ''lease_lost'', ''unknown_job'')',
        :'b', :'c', :'a', :'d', :'e'
    ),
    'a wrong token, an expired lease, a finished job and an unknown id release nothing'
);

-- TEST: nothing written for any of them
SELECT is(pgrun_test.job_fingerprint(:'b'), :'b_before', 'a wrong token changes nothing');
SELECT is(pgrun_test.job_fingerprint(:'c'), :'c_before', 'an expired lease is not released: the reaper owns it');
SELECT is(pgrun_test.job_fingerprint(:'d'), :'d_before', 'a finished job changes nothing');
SELECT is((SELECT status FROM pgrun.jobs WHERE id = :'b'), 'running', 'b still runs under its owner');
SELECT is((SELECT status FROM pgrun.jobs WHERE id = :'c'), 'running', 'c waits for the reaper');

-- TEST: the owned one was released
SELECT is((SELECT status FROM pgrun.jobs WHERE id = :'a'), 'queued', 'a is queued again');

-- TEST: one event in all
SELECT is(
    (SELECT count(*) FROM pgrun.job_events WHERE event = 'released'),
    1::bigint,
    'exactly one released event'
);

-- TEST: the expired job is reaped as usual afterwards (an attempt spent, the lease's cost)
SELECT results_eq(
    'SELECT job_id, outcome FROM pgrun.reap_expired_leases()',
    format('VALUES (%L::uuid, ''lease_expired'')', :'c'),
    'the reaper takes the expired lease'
);

SELECT * FROM finish();
ROLLBACK;
