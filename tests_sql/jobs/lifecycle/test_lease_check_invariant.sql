-- The lifecycle writes check (id, lease_token, lease_expires_at > now) and rely on
-- jobs_lease_check for "status = 'running'": a lease expiry exists exactly while the job
-- runs. A succeeded job keeps the token of the attempt that succeeded (0023: the job row
-- records that attempt), never its expiry, so no write accepts that token again. If this
-- constraint ever loosens further, the lease check must spell the status out again.
BEGIN;
SELECT plan(16);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT job_id AS job, lease_token AS token FROM pgrun_test.running_job() \gset
SELECT pgrun_test.make_job() AS queued \gset
SELECT job_id AS done, lease_token AS done_token FROM pgrun_test.running_job() \gset
SELECT pgrun.complete_job(:'done', :'done_token');
SELECT job_id AS dead, lease_token AS dead_token FROM pgrun_test.running_job() \gset
SELECT * FROM pgrun.fail_job(:'dead', :'dead_token', retryable => false);

-- TEST: no lease outside running, no running without one
SELECT throws_ok(
    format('UPDATE pgrun.jobs SET lease_token = gen_random_uuid(), lease_expires_at = pgrun.now(), worker_id = ''w'' WHERE id = %L', :'queued'),
    '23514', NULL, 'a queued job cannot hold a lease'
);
SELECT throws_ok(
    format('UPDATE pgrun.jobs SET status = ''succeeded'', finished_at = pgrun.now() WHERE id = %L', :'job'),
    '23514', NULL, 'a job cannot leave running with its lease'
);
SELECT throws_ok(
    format('UPDATE pgrun.jobs SET lease_token = NULL WHERE id = %L', :'job'),
    '23514', NULL, 'a running job cannot drop its lease token alone'
);
SELECT throws_ok(
    format('UPDATE pgrun.jobs SET lease_expires_at = NULL WHERE id = %L', :'job'),
    '23514', NULL, 'a running job cannot drop its expiry alone'
);

-- TEST: a token without an expiry is a succeeded attempt's, and only that
SELECT lives_ok(
    format('UPDATE pgrun.jobs SET lease_token = NULL WHERE id = %L', :'done'),
    'a succeeded job may have no token (it succeeded before 0023)'
);
SELECT lives_ok(
    format('UPDATE pgrun.jobs SET lease_token = %L WHERE id = %L', :'done_token', :'done'),
    'a succeeded job may keep its last attempt''s token'
);
SELECT throws_ok(
    format('UPDATE pgrun.jobs SET lease_expires_at = pgrun.now() + interval ''1 minute'' WHERE id = %L', :'done'),
    '23514', NULL, 'a succeeded job cannot hold an expiry'
);
SELECT throws_ok(
    format('UPDATE pgrun.jobs SET lease_token = gen_random_uuid() WHERE id = %L', :'dead'),
    '23514', NULL, 'a dead job cannot keep a token'
);
SELECT throws_ok(
    format('UPDATE pgrun.jobs SET lease_token = gen_random_uuid(), worker_id = ''w'' WHERE id = %L', :'queued'),
    '23514', NULL, 'a queued job cannot hold a token without an expiry either'
);

-- TEST: a running job names its worker; worker_id alone outlives the lease (0006)
SELECT throws_ok(
    format('UPDATE pgrun.jobs SET worker_id = NULL WHERE id = %L', :'job'),
    '23514', NULL, 'a running job cannot drop its worker'
);
SELECT throws_ok(
    format('UPDATE pgrun.jobs SET worker_id = NULL WHERE id = %L', :'done'),
    '23514', NULL, 'a succeeded job with its token names its worker'
);
SELECT lives_ok(
    format('UPDATE pgrun.jobs SET worker_id = ''w'' WHERE id = %L', :'queued'),
    'a queued job may name the worker that ran it last'
);

-- TEST: so a matching token with a live expiry means running, and the token a succeeded job
-- kept opens no write
SELECT is(
    (SELECT status FROM pgrun.jobs WHERE lease_token = :'token' AND lease_expires_at > pgrun.now()),
    'running',
    'the job holding the token with a live expiry is running'
);
SELECT pgrun_test.job_fingerprint(:'done') AS done_before \gset
SELECT throws_ok(
    format('SELECT pgrun.report_progress(%L, %L, ''{"p": 1}'')', :'done', :'done_token'),
    'RQ004', 'job.lease_lost', 'report_progress refuses the kept token'
);
SELECT is(
    pgrun_test.as_role('pgrun_tap_worker', format(
        $$SELECT concat_ws(',',
            (SELECT outcome FROM pgrun.fail_jobs(ARRAY[%1$L]::uuid[], ARRAY[%2$L]::uuid[])),
            (SELECT count(*) FROM pgrun.heartbeat_jobs('worker-1', 30, ARRAY[%1$L]::uuid[], ARRAY[%2$L]::uuid[]) AS h
             WHERE h.renewed),
            (SELECT outcome FROM pgrun.complete_jobs(ARRAY[%1$L]::uuid[], ARRAY[%2$L]::uuid[])),
            (SELECT outcome FROM pgrun.release_jobs(ARRAY[%1$L]::uuid[], ARRAY[%2$L]::uuid[])))$$,
        :'done', :'done_token'
    )),
    'lease_lost,0,lease_lost,lease_lost',
    'fail_jobs, heartbeat_jobs, complete_jobs and release_jobs refuse it too'
);
SELECT is(pgrun_test.job_fingerprint(:'done'), :'done_before', 'and the succeeded job is unchanged');

SELECT * FROM finish();
ROLLBACK;
