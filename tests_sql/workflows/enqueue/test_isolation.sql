-- Keyed workflow enqueue needs READ COMMITTED; unkeyed enqueue works at any level.
BEGIN;
SET TRANSACTION ISOLATION LEVEL REPEATABLE READ;
SELECT plan(2);

-- TEST: keyed under REPEATABLE READ
SELECT throws_ok(
    $$SELECT * FROM pgrun.enqueue_workflow('{"idempotency_key": "k", "steps": [{"key": "a", "job_type": "t"}]}')$$,
    'RQ006', 'workflow.enqueue_idempotency_unsupported_isolation', 'a keyed enqueue under REPEATABLE READ'
);

-- TEST: unkeyed
SELECT is(
    (SELECT created FROM pgrun.enqueue_workflow('{"steps": [{"key": "a", "job_type": "t"}]}')),
    true,
    'an unkeyed enqueue works under REPEATABLE READ'
);

SELECT * FROM finish();
ROLLBACK;
