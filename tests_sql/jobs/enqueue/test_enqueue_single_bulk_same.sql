-- enqueue_job takes its own lean path (typed arguments straight into the shared insert), so
-- this pins that a request means the same through both doors: the same job row (settings,
-- payload, run_at, snapshot) and the same error code for the same bad request, including
-- the ones only a typed argument can carry (a BC timestamp, a JSON null payload).
BEGIN;
SELECT plan(12);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT pgrun.upsert_job_definition('def.job', queue => 'defq', priority => 7, max_attempts => 3);

-- the columns a request decides (not the id)
CREATE TEMP VIEW made AS
SELECT job_type, queue, priority, status, payload, run_at, max_attempts, timeout_seconds,
    backoff_base_seconds, backoff_max_seconds, backoff_jitter, organization_id, idempotency_key,
    enqueue_request
FROM pgrun.jobs;

-- TEST: the same rows through both doors
SELECT pgrun.enqueue_job('def.job', '{"a": 1}');
SELECT pgrun.enqueue_jobs('[{"job_type": "def.job", "payload": {"a": 1}}]');
SELECT pgrun.enqueue_job('def.job', NULL, queue => 'q1', priority => 0, max_attempts => 1000, timeout_seconds => 5);
SELECT pgrun.enqueue_jobs('[{"job_type": "def.job", "payload": null, "queue": "q1", "priority": 0,
    "max_attempts": 1000, "timeout_seconds": 5}]');
SELECT pgrun.enqueue_job('plain.job', 'null'::jsonb, delay => interval '90 seconds', idempotency_key => 'k1');
SELECT pgrun.enqueue_jobs('[{"job_type": "plain.job", "payload": null, "delay": 90, "idempotency_key": "k2"}]');
SELECT pgrun.enqueue_job('plain.job', '{}', run_at => '2030-02-01 00:00:00+00', idempotency_key => 'k3',
    organization_id => '22222222-2222-2222-2222-222222222222');
SELECT pgrun.enqueue_jobs('[{"job_type": "plain.job", "payload": {}, "run_at": "2030-02-01T00:00:00Z",
    "idempotency_key": "k4", "organization_id": "22222222-2222-2222-2222-222222222222"}]');

SELECT is(
    (SELECT count(*)::integer FROM made),
    8,
    'eight jobs made'
);
SELECT set_eq(
    $$SELECT job_type, queue, priority, payload, run_at, max_attempts, timeout_seconds, backoff_base_seconds,
        enqueue_request - 'idempotency_key' FROM made WHERE idempotency_key IS NULL OR idempotency_key IN ('k1', 'k3')$$,
    $$SELECT job_type, queue, priority, payload, run_at, max_attempts, timeout_seconds, backoff_base_seconds,
        enqueue_request - 'idempotency_key' FROM made WHERE idempotency_key IS NULL OR idempotency_key IN ('k2', 'k4')$$,
    'enqueue_job and enqueue_jobs make the same rows from the same request'
);
SELECT results_eq(
    $$SELECT queue, priority, max_attempts FROM made WHERE job_type = 'def.job' AND payload = '{"a": 1}'$$,
    $$VALUES ('defq'::text, 7, 3), ('defq'::text, 7, 3)$$,
    'the definition fills what the request leaves out, through both doors'
);
SELECT results_eq(
    $$SELECT payload, run_at, enqueue_request FROM made WHERE idempotency_key IN ('k1', 'k2') ORDER BY idempotency_key$$,
    $$VALUES ('{}'::jsonb, '2030-01-01 00:01:30+00'::timestamptz,
            '{"job_type": "plain.job", "payload": {}, "delay_seconds": 90}'::jsonb),
        ('{}'::jsonb, '2030-01-01 00:01:30+00'::timestamptz,
            '{"job_type": "plain.job", "payload": {}, "delay_seconds": 90}'::jsonb)$$,
    'a JSON null payload is {}, a delay is now + delay, and both snapshots say so'
);

-- TEST: a keyed retry through the lean path returns the job, created = false
SELECT results_eq(
    $$SELECT created, status, run_at FROM pgrun.enqueue_job('plain.job', '{}', delay => interval '90 seconds',
        idempotency_key => 'k1')$$,
    $$VALUES (false, 'queued'::text, '2030-01-01 00:01:30+00'::timestamptz)$$,
    'an identical single retry returns the existing job'
);

-- TEST: the same error code through both doors
SELECT throws_ok(
    $$SELECT pgrun.enqueue_job('plain.job', '{}', run_at => '4713-01-01 00:00:00+00 BC')$$,
    'RQ003', 'job.invalid_schedule',
    'a BC run_at is job.invalid_schedule through enqueue_job'
);
SELECT throws_ok(
    $$SELECT pgrun.enqueue_jobs('[{"job_type": "plain.job", "run_at": "4713-01-01T00:00:00+00:00 BC"}]')$$,
    'RQ003', 'job.invalid_schedule',
    'and through enqueue_jobs'
);
SELECT throws_ok(
    $$SELECT pgrun.enqueue_job('plain.job', '[1]', queue => 'BAD')$$,
    'RQ003', 'job.invalid_payload',
    'the payload is checked before the queue through enqueue_job'
);
SELECT throws_ok(
    $$SELECT pgrun.enqueue_job('plain.job', '{}', queue => 'BAD', priority => -1)$$,
    'RQ003', 'job.invalid_queue',
    'the queue before the priority'
);
SELECT throws_ok(
    $$SELECT pgrun.enqueue_job('plain.job', '{}', priority => 40000, delay => interval '-1 second')$$,
    'RQ003', 'job.invalid_priority',
    'the priority before the schedule'
);
SELECT throws_ok(
    $$SELECT pgrun.enqueue_job('plain.job', '{}', delay => interval '101 years', idempotency_key => '')$$,
    'RQ003', 'job.invalid_schedule',
    'a delay over 100 years before the key'
);

-- TEST: nothing was written by the refused calls
SELECT is(
    (SELECT count(*)::integer FROM made),
    8,
    'the refused calls wrote nothing'
);

SELECT * FROM finish();
ROLLBACK;
