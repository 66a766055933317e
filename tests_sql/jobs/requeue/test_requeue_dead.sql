-- requeue_job brings a dead job back: queued, fresh attempt budget, dead letter stamped,
-- one requeued event; it then runs like any job.
BEGIN;
SELECT plan(7);

-- SETUP: a job that died on its only attempt
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT job_id AS job, lease_token AS token FROM pgrun_test.running_job(p_max_attempts => 1) \gset
SELECT * FROM pgrun.fail_job(:'job', :'token', 'boom');
SELECT pgrun_test.freeze_time('2030-01-01 01:00:00+00');

-- TEST: back in the queue
SELECT is(pgrun.requeue_job(:'job'), '2030-01-01 01:00:00+00'::timestamptz, 'returns when it runs: now');
SELECT results_eq(
    format('SELECT status, run_at, attempt, total_attempts, finished_at FROM pgrun.jobs WHERE id = %L', :'job'),
    $$VALUES ('queued', '2030-01-01 01:00:00+00'::timestamptz, 0, 1, NULL::timestamptz)$$,
    'queued, attempt budget fresh, total_attempts kept, no longer finished'
);

-- TEST: the dead letter remembers
SELECT results_eq(
    format('SELECT reason, requeued_at FROM pgrun.job_dead_letters WHERE job_id = %L', :'job'),
    $$VALUES ('attempts_exhausted', '2030-01-01 01:00:00+00'::timestamptz)$$,
    'the dead letter is kept, stamped with requeued_at'
);

-- TEST: one requeued event
SELECT results_eq(
    format('SELECT event, from_status, to_status FROM pgrun.job_events WHERE job_id = %L ORDER BY id', :'job'),
    $$VALUES ('dead', 'running', 'dead'), ('requeued', 'dead', 'queued')$$,
    'dead, requeued: one event per transition (the claim wrote none)'
);

-- TEST: it runs again with a full budget
SELECT results_eq(
    'SELECT attempt, max_attempts FROM pgrun.claim_jobs(worker_id => ''w'')',
    $$VALUES (1, 1)$$,
    'the requeued job is claimed as attempt 1 again'
);
SELECT is(
    (SELECT array_agg(attempt ORDER BY attempt) FROM pgrun.job_attempts WHERE job_id = :'job'),
    ARRAY[1, 2],
    'its attempt rows keep numbering on'
);

-- TEST: a later run_at
SELECT * FROM pgrun.fail_job(:'job', pgrun_test.token(:'job'), retryable => false);
SELECT is(
    pgrun.requeue_job(:'job', run_at => '2030-01-02 00:00:00+00'),
    '2030-01-02 00:00:00+00'::timestamptz,
    'run_at delays the requeued job'
);

SELECT * FROM finish();
ROLLBACK;
