-- enqueue_workflow refuses a malformed spec before writing anything: the spec itself,
-- its top-level fields, its size.
BEGIN;
SELECT plan(11);

-- TEST: the spec and its fields
SELECT throws_ok($$SELECT * FROM pgrun.enqueue_workflow(NULL)$$,
    'RQ003', 'workflow.invalid_spec', 'a NULL spec');
SELECT throws_ok($$SELECT * FROM pgrun.enqueue_workflow('[]')$$,
    'RQ003', 'workflow.invalid_spec', 'a spec that is not an object');
SELECT throws_ok($$SELECT * FROM pgrun.enqueue_workflow('{}')$$,
    'RQ003', 'workflow.invalid_spec', 'no steps');
SELECT throws_ok($$SELECT * FROM pgrun.enqueue_workflow('{"steps": []}')$$,
    'RQ003', 'workflow.invalid_spec', 'an empty steps array');
SELECT throws_ok($$SELECT * FROM pgrun.enqueue_workflow('{"steps": [{"key": "a", "job_type": "t"}], "stpes": 1}')$$,
    'RQ003', 'workflow.invalid_spec', 'an unknown top-level field');
SELECT throws_ok($$SELECT * FROM pgrun.enqueue_workflow('{"steps": [{"key": "a", "job_type": "t"}], "metadata": [1]}')$$,
    'RQ003', 'workflow.invalid_spec', 'metadata that is not an object');
SELECT throws_ok($$SELECT * FROM pgrun.enqueue_workflow('{"steps": [{"key": "a", "job_type": "t"}], "idempotency_key": ""}')$$,
    'RQ003', 'workflow.invalid_spec', 'an empty idempotency key');
SELECT throws_ok($$SELECT * FROM pgrun.enqueue_workflow('{"steps": [{"key": "a", "job_type": "t"}], "organization_id": "nope"}')$$,
    'RQ003', 'workflow.invalid_spec', 'an organization_id that is not a uuid');

-- TEST: size limits
SELECT throws_ok(
    format($$SELECT * FROM pgrun.enqueue_workflow('{"steps": [{"key": "a", "job_type": "t"}], "metadata": {"x": "%s"}}')$$,
        repeat('m', 70000)),
    'RQ003', 'workflow.payload_too_large', 'metadata over 64 KiB'
);
SELECT throws_ok(
    format($$SELECT * FROM pgrun.enqueue_workflow(jsonb_build_object('steps', (
        SELECT jsonb_agg(jsonb_build_object('key', 'k' || g, 'job_type', 't', 'payload', jsonb_build_object('x', %L || g)))
        FROM generate_series(1, 20) AS g)))$$, repeat(md5('x'), 30000)),
    'RQ003', 'workflow.spec_too_large', 'a spec over 16 MiB'
);

-- TEST: nothing was written
SELECT is((SELECT count(*) FROM pgrun.workflow_runs), 0::bigint, 'no run was created');

SELECT * FROM finish();
ROLLBACK;
