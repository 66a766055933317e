-- A different request under a used idempotency key raises job.enqueue_conflicting_retry and writes nothing.
BEGIN;
SELECT plan(7);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT job_id AS job FROM pgrun.enqueue_job(
    'invoice.send', '{"invoice": 7}', run_at => '2030-01-02 00:00:00+00', idempotency_key => 'inv-7'
) \gset

-- TEST: each field of the request counts
SELECT throws_ok(
    $$SELECT * FROM pgrun.enqueue_job('invoice.send', '{"invoice": 8}', run_at => '2030-01-02 00:00:00+00', idempotency_key => 'inv-7')$$,
    'RQ001', 'job.enqueue_conflicting_retry', 'another payload conflicts'
);
SELECT throws_ok(
    $$SELECT * FROM pgrun.enqueue_job('invoice.send', '{"invoice": 7}', run_at => '2030-01-03 00:00:00+00', idempotency_key => 'inv-7')$$,
    'RQ001', 'job.enqueue_conflicting_retry', 'another run_at conflicts'
);
SELECT throws_ok(
    $$SELECT * FROM pgrun.enqueue_job('invoice.send', '{"invoice": 7}', run_at => '2030-01-02 00:00:00+00', queue => 'other', idempotency_key => 'inv-7')$$,
    'RQ001', 'job.enqueue_conflicting_retry', 'an added queue conflicts'
);
SELECT throws_ok(
    $$SELECT * FROM pgrun.enqueue_job('invoice.send', '{"invoice": 7}', run_at => '2030-01-02 00:00:00+00', priority => 100, idempotency_key => 'inv-7')$$,
    'RQ001', 'job.enqueue_conflicting_retry', 'passing the default priority explicitly is a different request'
);

-- TEST: the DETAIL names the job and the differing fields
SELECT is(
    pgrun_test.error_of($$SELECT * FROM pgrun.enqueue_job('invoice.send', '{"invoice": 8}', priority => 1, run_at => '2030-01-02 00:00:00+00', idempotency_key => 'inv-7')$$),
    format('RQ001 job.enqueue_conflicting_retry: the idempotency key already names job %s, enqueued with a different request (differs in: payload, priority)', :'job'),
    'DETAIL says which job holds the key and what differs'
);

-- TEST: nothing was written
SELECT is((SELECT count(*) FROM pgrun.jobs), 1::bigint, 'still one job');
SELECT is((SELECT payload FROM pgrun.jobs WHERE id = :'job'), '{"invoice": 7}'::jsonb, 'the job is untouched');

SELECT * FROM finish();
ROLLBACK;
