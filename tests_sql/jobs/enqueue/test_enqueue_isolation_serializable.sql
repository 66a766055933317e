-- Keyed enqueue needs READ COMMITTED: under SERIALIZABLE it is refused too.
BEGIN;
SET TRANSACTION ISOLATION LEVEL SERIALIZABLE;
SELECT plan(2);

-- TEST: keyed
SELECT throws_ok(
    $$SELECT * FROM pgrun.enqueue_job('mail.send', idempotency_key => 'k')$$,
    'RQ006', 'job.enqueue_idempotency_unsupported_isolation', 'a keyed enqueue_job under SERIALIZABLE'
);
SELECT is(
    pgrun_test.error_of($$SELECT * FROM pgrun.enqueue_jobs('[{"job_type": "a"}, {"job_type": "b", "idempotency_key": "k"}]')$$),
    'RQ006 job.enqueue_idempotency_unsupported_isolation: element 2: a keyed enqueue ran at isolation level serializable',
    'the DETAIL names the first keyed element and the level'
);

SELECT * FROM finish();
ROLLBACK;
