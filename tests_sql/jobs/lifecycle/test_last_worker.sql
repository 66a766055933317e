-- worker_id outlives the lease (migration 0006): every write that ends an attempt clears
-- the token and expiry and keeps the worker that ran it; the next claim overwrites it.
BEGIN;
SELECT plan(9);

-- SETUP: one running job per way an attempt ends, each claimed by its own worker
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT job_id AS done, lease_token AS done_token FROM pgrun_test.running_job('w-done') \gset
SELECT job_id AS retry, lease_token AS retry_token FROM pgrun_test.running_job('w-retry') \gset
SELECT job_id AS dead, lease_token AS dead_token FROM pgrun_test.running_job('w-dead', p_max_attempts => 1) \gset
SELECT job_id AS cont, lease_token AS cont_token FROM pgrun_test.running_job('w-cont') \gset
SELECT job_id AS cancel, lease_token AS cancel_token FROM pgrun_test.running_job('w-cancel') \gset
SELECT job_id AS lost, lease_token AS lost_token FROM pgrun_test.running_job('w-lost', p_lease_seconds => 5) \gset

SELECT pgrun.complete_job(job_id => :'done', lease_token => :'done_token');
SELECT * FROM pgrun.fail_job(job_id => :'retry', lease_token => :'retry_token', error_code => 'boom', message => 'x');
SELECT * FROM pgrun.fail_job(job_id => :'dead', lease_token => :'dead_token', error_code => 'boom', message => 'x');
SELECT pgrun.continue_job(job_id => :'cont', lease_token => :'cont_token', next_step => 'two');
SELECT pgrun.cancel_job(job_id => :'cancel');
SELECT pgrun.complete_job(job_id => :'cancel', lease_token => :'cancel_token');
SELECT pgrun_test.advance_time(interval '10 seconds');
SELECT count(*) FROM pgrun.reap_expired_leases();

-- TEST: each ending keeps the worker and clears the lease; success keeps its token (0023)
SELECT results_eq(
    format(
        $$SELECT id, status, worker_id, (status = 'succeeded' OR lease_token IS NULL) AND lease_expires_at IS NULL
          FROM pgrun.jobs WHERE id IN (%L, %L, %L, %L, %L, %L) ORDER BY id$$,
        :'done', :'retry', :'dead', :'cont', :'cancel', :'lost'
    ),
    format(
        $$VALUES (%L::uuid, 'succeeded'::text, 'w-done'::text, true), (%L, 'queued', 'w-retry', true),
                 (%L, 'dead', 'w-dead', true), (%L, 'queued', 'w-cont', true),
                 (%L, 'cancelled', 'w-cancel', true), (%L, 'queued', 'w-lost', true)$$,
        :'done', :'retry', :'dead', :'cont', :'cancel', :'lost'
    ),
    'complete, fail (retry and dead), continue, the write after a cancel request and the reaper keep the worker'
);

-- TEST: the attempts and their ending events name the same worker
SELECT results_eq(
    format(
        $$SELECT job_id, worker_id, outcome FROM pgrun.job_attempts
          WHERE job_id IN (%L, %L, %L, %L, %L, %L) ORDER BY job_id$$,
        :'done', :'retry', :'dead', :'cont', :'cancel', :'lost'
    ),
    format(
        $$VALUES (%L::uuid, 'w-done'::text, 'succeeded'::text), (%L, 'w-retry', 'failed'), (%L, 'w-dead', 'failed'),
                 (%L, 'w-cont', 'continued'), (%L, 'w-cancel', 'cancelled'), (%L, 'w-lost', 'lease_expired')$$,
        :'done', :'retry', :'dead', :'cont', :'cancel', :'lost'
    ),
    'each finished attempt records its worker'
);

-- TEST: the next claim takes the job over, and a write with the old token still fails
SELECT pgrun_test.advance_time(interval '1 hour');
SELECT pgrun_test.claim_job(:'retry', 'w-next') AS retry_token2 \gset
SELECT is(
    (SELECT worker_id FROM pgrun.jobs WHERE id = :'retry'),
    'w-next',
    'a new claim overwrites the last worker'
);
SELECT throws_ok(
    format('SELECT pgrun.complete_job(job_id => %L, lease_token => %L)', :'retry', :'retry_token'),
    'RQ004', 'job.lease_lost', 'the previous lease stays lost although its worker was named on the row'
);
SELECT is(
    pgrun.complete_job(job_id => :'retry', lease_token => :'retry_token2'),
    'succeeded',
    'the new lease completes'
);
SELECT is(
    (SELECT worker_id FROM pgrun.jobs WHERE id = :'retry'),
    'w-next',
    'and the job keeps the worker that finished it'
);

-- TEST: heartbeat checks the worker only together with a live lease
SELECT pgrun_test.claim_job(:'lost', 'w-hb') AS hb_token \gset
SELECT results_eq(
    format(
        $$SELECT renewed FROM pgrun.heartbeat_jobs(worker_id => 'w-lost', lease_seconds => 30,
            job_ids => ARRAY[%L::uuid], lease_tokens => ARRAY[%L::uuid])$$,
        :'lost', :'lost_token'
    ),
    $$VALUES (false)$$,
    'the worker that lost the lease cannot renew it with its old token'
);
SELECT results_eq(
    format(
        $$SELECT renewed FROM pgrun.heartbeat_jobs(worker_id => 'w-hb', lease_seconds => 30,
            job_ids => ARRAY[%L::uuid], lease_tokens => ARRAY[%L::uuid])$$,
        :'lost', :'hb_token'
    ),
    $$VALUES (true)$$,
    'the new holder renews'
);

-- TEST: a job never claimed has no worker
SELECT is(
    (SELECT worker_id FROM pgrun.jobs WHERE id = pgrun_test.make_job()),
    NULL,
    'a queued job that never ran names no worker'
);

SELECT * FROM finish();
ROLLBACK;
