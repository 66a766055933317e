-- Keyed enqueue needs READ COMMITTED: under REPEATABLE READ it is refused; unkeyed enqueue works.
BEGIN;
SET TRANSACTION ISOLATION LEVEL REPEATABLE READ;
SELECT plan(3);

-- TEST: keyed, single and bulk
SELECT throws_ok(
    $$SELECT * FROM pgrun.enqueue_job('mail.send', idempotency_key => 'k')$$,
    'RQ006', 'job.enqueue_idempotency_unsupported_isolation', 'a keyed enqueue_job under REPEATABLE READ'
);
SELECT throws_ok(
    $$SELECT * FROM pgrun.enqueue_jobs('[{"job_type": "a"}, {"job_type": "b", "idempotency_key": "k"}]')$$,
    'RQ006', 'job.enqueue_idempotency_unsupported_isolation', 'a batch with one keyed element under REPEATABLE READ'
);

-- TEST: unkeyed
SELECT is(
    (SELECT created FROM pgrun.enqueue_job('mail.send')),
    true,
    'an unkeyed enqueue works at any isolation level'
);

SELECT * FROM finish();
ROLLBACK;
