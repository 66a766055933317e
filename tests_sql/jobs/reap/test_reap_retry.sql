-- The reaper queues an expired running job for a retry (backoff from its policy): attempt
-- outcome lease_expired, one lease_expired event; live leases are left alone, and the old
-- worker's late write is refused.
BEGIN;
SELECT plan(8);

-- SETUP: one lease expires at 00:00:30, another runs until 00:01:00
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT job_id AS job, lease_token AS token FROM pgrun_test.running_job(p_lease_seconds => 30) \gset
SELECT job_id AS live, lease_token AS live_token FROM pgrun_test.running_job('worker-2', 60) \gset
SELECT pgrun_test.job_fingerprint(:'live') AS live_before \gset

-- TEST: nothing to do before expiry
SELECT pgrun_test.freeze_time('2030-01-01 00:00:29+00');
SELECT is_empty('SELECT * FROM pgrun.reap_expired_leases()', 'no lease has expired yet');

-- TEST: at the expiry instant the job is reaped
SELECT pgrun_test.freeze_time('2030-01-01 00:00:30+00');
SELECT results_eq(
    'SELECT * FROM pgrun.reap_expired_leases()',
    format('VALUES (%L::uuid, ''lease_expired'', ''2030-01-01 00:00:40+00''::timestamptz)', :'job'),
    'the expired job is retried after its backoff (10 s)'
);
SELECT results_eq(
    format(
        'SELECT status, run_at, attempt, lease_token, worker_id, error_code, finished_at FROM pgrun.jobs WHERE id = %L',
        :'job'
    ),
    $$VALUES ('queued', '2030-01-01 00:00:40+00'::timestamptz, 1, NULL::uuid, 'worker-1'::text, 'lease_expired', NULL::timestamptz)$$,
    'queued again, lease cleared, last worker kept, error code lease_expired'
);
SELECT results_eq(
    format('SELECT outcome, error_code, finished_at FROM pgrun.job_attempts WHERE job_id = %L', :'job'),
    $$VALUES ('lease_expired', 'lease_expired', '2030-01-01 00:00:30+00'::timestamptz)$$,
    'the attempt ends with outcome lease_expired'
);
SELECT results_eq(
    format('SELECT event, from_status, to_status, worker_id FROM pgrun.job_events WHERE job_id = %L ORDER BY id', :'job'),
    $$VALUES ('lease_expired', 'running', 'queued', 'worker-1')$$,
    'one lease_expired event naming the worker that lost it (the claim wrote none)'
);

-- TEST: the live lease is untouched
SELECT is(pgrun_test.job_fingerprint(:'live'), :'live_before', 'a live lease is not reaped');

-- TEST: the old worker's late write is refused
SELECT throws_ok(
    format('SELECT pgrun.complete_job(%L, %L)', :'job', :'token'),
    'RQ004', 'job.lease_lost', 'the worker that lost the lease cannot complete the job'
);

-- TEST: a second pass finds nothing more
SELECT is_empty('SELECT * FROM pgrun.reap_expired_leases()', 'reaping is idempotent');

SELECT * FROM finish();
ROLLBACK;
