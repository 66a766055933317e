-- The same canonical request under the same key returns the existing job with created = false,
-- whatever the job became since; the key is scoped by job type and organization.
BEGIN;
SELECT plan(9);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT job_id AS job, run_at AS first_run_at FROM pgrun.enqueue_job(
    'invoice.send', '{"invoice": 7}', priority => 10, delay => interval '1 minute', idempotency_key => 'inv-7'
) \gset

-- TEST: an identical retry, later
SELECT pgrun_test.advance_time(interval '10 seconds');
SELECT results_eq(
    $$SELECT job_id, created, status, run_at FROM pgrun.enqueue_job(
        'invoice.send', '{"invoice": 7}', priority => 10, delay => interval '1 minute', idempotency_key => 'inv-7'
    )$$,
    format($$VALUES (%L::uuid, false, 'queued'::text, %L::timestamptz)$$, :'job', :'first_run_at'),
    'same request: the same job, created = false, its original run_at'
);
SELECT is((SELECT count(*) FROM pgrun.jobs), 1::bigint, 'no second job');

-- TEST: an equivalent spelling of the same request
SELECT is(
    (SELECT job_id FROM pgrun.enqueue_job(
        'invoice.send', '{ "invoice" : 7 }', priority => 10, delay => interval '60 seconds', idempotency_key => 'inv-7'
    )),
    :'job'::uuid,
    'JSON whitespace and 60 seconds vs 1 minute do not make a different request'
);

-- TEST: after the job has finished
UPDATE pgrun.jobs SET status = 'succeeded', finished_at = pgrun.now(), result = '{"ok": true}' WHERE id = :'job';
SELECT results_eq(
    $$SELECT job_id, created, status FROM pgrun.enqueue_job(
        'invoice.send', '{"invoice": 7}', priority => 10, delay => interval '1 minute', idempotency_key => 'inv-7'
    )$$,
    format($$VALUES (%L::uuid, false, 'succeeded'::text)$$, :'job'),
    'a retry after the job succeeded still returns it, with its current status'
);

-- TEST: the snapshot, not the live row, is compared
UPDATE pgrun.jobs SET priority = 99, payload = '{"changed": true}' WHERE id = :'job';
SELECT is(
    (SELECT job_id FROM pgrun.enqueue_job(
        'invoice.send', '{"invoice": 7}', priority => 10, delay => interval '1 minute', idempotency_key => 'inv-7'
    )),
    :'job'::uuid,
    'changes to the live row do not turn an identical retry into a conflict'
);

-- TEST: a changed definition does not either (the snapshot holds the request, not resolved defaults)
SELECT pgrun.upsert_job_definition('invoice.send', queue => 'billing', max_attempts => 2);
SELECT is(
    (SELECT created FROM pgrun.enqueue_job(
        'invoice.send', '{"invoice": 7}', priority => 10, delay => interval '1 minute', idempotency_key => 'inv-7'
    )),
    false,
    'a new job definition leaves retries of old requests matching'
);

-- TEST: the key is scoped by job type and organization
SELECT is(
    (SELECT created FROM pgrun.enqueue_job(
        'invoice.void', '{"invoice": 7}', priority => 10, delay => interval '1 minute', idempotency_key => 'inv-7'
    )),
    true,
    'the same key under another job type is another job'
);
SELECT is(
    (SELECT created FROM pgrun.enqueue_job(
        'invoice.send', '{"invoice": 7}', priority => 10, delay => interval '1 minute', idempotency_key => 'inv-7',
        organization_id => '11111111-1111-1111-1111-111111111111'
    )),
    true,
    'the same key in an organization is another job'
);

-- TEST: the stored snapshot
SELECT is(
    (SELECT enqueue_request FROM pgrun.jobs WHERE id = :'job'),
    '{"job_type": "invoice.send", "payload": {"invoice": 7}, "priority": 10, "delay_seconds": 60}'::jsonb,
    'the snapshot holds the request as asked: only given fields, delay as seconds'
);

SELECT * FROM finish();
ROLLBACK;
