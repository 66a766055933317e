-- The lifecycle writes check (id, lease_token, lease_expires_at > now) and rely on
-- jobs_lease_check for "status = 'running'": a job holds a lease token exactly while it
-- runs. If this constraint ever loosens, the lease check must spell the status out again.
BEGIN;
SELECT plan(6);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT job_id AS job, lease_token AS token FROM pgrun_test.running_job() \gset
SELECT pgrun_test.make_job() AS queued \gset

-- TEST: no token outside running, no running without a token
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

-- TEST: a running job names its worker; worker_id alone outlives the lease (0006)
SELECT throws_ok(
    format('UPDATE pgrun.jobs SET worker_id = NULL WHERE id = %L', :'job'),
    '23514', NULL, 'a running job cannot drop its worker'
);
SELECT lives_ok(
    format('UPDATE pgrun.jobs SET worker_id = ''w'' WHERE id = %L', :'queued'),
    'a queued job may name the worker that ran it last'
);

-- TEST: so a matching token means running
SELECT is(
    (SELECT status FROM pgrun.jobs WHERE lease_token = :'token'),
    'running',
    'the job holding the token is running'
);

SELECT * FROM finish();
ROLLBACK;
