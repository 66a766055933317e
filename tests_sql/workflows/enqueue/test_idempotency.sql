-- Keyed enqueue is idempotent by the canonical request: the same request with steps and
-- dependencies in another order returns the run; any real change is a conflict.
BEGIN;
SELECT plan(13);

-- SETUP
SELECT run_id AS run FROM pgrun.enqueue_workflow('{
    "idempotency_key": "order-42",
    "name": "ship",
    "metadata": {"m": 1},
    "steps": [
        {"key": "a", "job_type": "t.a", "payload": {"x": 1, "y": 2}},
        {"key": "b", "job_type": "t.b", "priority": 5},
        {"key": "c", "job_type": "t.c", "depends_on": ["a", {"step": "b", "release_mode": "on_terminal"}]}
    ]}') \gset

-- TEST: the same request, reordered
SELECT results_eq(
    $$SELECT run_id, created, status FROM pgrun.enqueue_workflow('{
        "metadata": {"m": 1},
        "name": "ship",
        "idempotency_key": "order-42",
        "steps": [
            {"key": "c", "job_type": "t.c", "depends_on": [{"step": "b", "release_mode": "on_terminal"}, {"step": "a"}]},
            {"key": "b", "kind": "job", "job_type": "t.b", "priority": 5, "payload": {}},
            {"key": "a", "job_type": "t.a", "payload": {"y": 2, "x": 1}}
        ]}')$$,
    format($$VALUES (%L::uuid, false, 'running')$$, :'run'),
    'steps, dependencies and payload keys in another order, defaults spelt out: the same run'
);
SELECT is((SELECT count(*) FROM pgrun.workflow_runs), 1::bigint, 'no second run');
SELECT is((SELECT count(*) FROM pgrun.jobs), 2::bigint, 'no second set of root jobs');

-- TEST: the stored snapshot is the normal form
SELECT is(
    (SELECT enqueue_request -> 'steps' -> 2 -> 'depends_on' FROM pgrun.workflow_runs WHERE id = :'run'),
    '[{"step": "a", "release_mode": "on_success"}, {"step": "b", "release_mode": "on_terminal"}]'::jsonb,
    'dependencies are sorted and their release modes filled in'
);

-- TEST: a retry after the run moved on still matches
SELECT pgrun_test.wf_succeed(:'run', 'a');
SELECT is(
    (SELECT created FROM pgrun.enqueue_workflow((SELECT jsonb_build_object('idempotency_key', 'order-42') || enqueue_request
        FROM pgrun.workflow_runs WHERE id = :'run'))),
    false,
    'the snapshot is compared, not the live steps'
);

-- TEST: changes are conflicts
SELECT throws_ok(
    $$SELECT * FROM pgrun.enqueue_workflow('{"idempotency_key": "order-42", "name": "ship", "metadata": {"m": 1}, "steps": [
        {"key": "a", "job_type": "t.a", "payload": {"x": 1, "y": 3}},
        {"key": "b", "job_type": "t.b", "priority": 5},
        {"key": "c", "job_type": "t.c", "depends_on": ["a", {"step": "b", "release_mode": "on_terminal"}]}]}')$$,
    'RQ001', 'workflow.enqueue_conflicting_retry', 'a changed payload');
SELECT throws_ok(
    $$SELECT * FROM pgrun.enqueue_workflow('{"idempotency_key": "order-42", "name": "ship", "metadata": {"m": 1}, "steps": [
        {"key": "a", "job_type": "t.a", "payload": {"x": 1, "y": 2}},
        {"key": "b", "job_type": "t.b", "priority": 6},
        {"key": "c", "job_type": "t.c", "depends_on": ["a", {"step": "b", "release_mode": "on_terminal"}]}]}')$$,
    'RQ001', 'workflow.enqueue_conflicting_retry', 'a changed priority');
SELECT throws_ok(
    $$SELECT * FROM pgrun.enqueue_workflow('{"idempotency_key": "order-42", "name": "ship", "metadata": {"m": 1}, "steps": [
        {"key": "a", "job_type": "t.a", "payload": {"x": 1, "y": 2}},
        {"key": "b", "job_type": "t.b", "priority": 5},
        {"key": "c", "job_type": "t.c", "depends_on": ["a", "b"]}]}')$$,
    'RQ001', 'workflow.enqueue_conflicting_retry', 'a changed release mode');
SELECT throws_ok(
    $$SELECT * FROM pgrun.enqueue_workflow('{"idempotency_key": "order-42", "name": "ship", "metadata": {"m": 1}, "steps": [
        {"key": "a", "job_type": "t.a", "payload": {"x": 1, "y": 2}},
        {"key": "b", "job_type": "t.b", "priority": 5},
        {"key": "c", "job_type": "t.c", "depends_on": ["a"]}]}')$$,
    'RQ001', 'workflow.enqueue_conflicting_retry', 'a removed edge');
SELECT throws_ok(
    $$SELECT * FROM pgrun.enqueue_workflow('{"idempotency_key": "order-42", "name": "ship", "metadata": {"m": 2}, "steps": [
        {"key": "a", "job_type": "t.a", "payload": {"x": 1, "y": 2}},
        {"key": "b", "job_type": "t.b", "priority": 5},
        {"key": "c", "job_type": "t.c", "depends_on": ["a", {"step": "b", "release_mode": "on_terminal"}]}]}')$$,
    'RQ001', 'workflow.enqueue_conflicting_retry', 'changed metadata');

-- TEST: the DETAIL says what differs
CREATE FUNCTION pg_temp.conflict_detail(p_spec jsonb) RETURNS text LANGUAGE plpgsql AS $$
DECLARE v_detail text;
BEGIN
    PERFORM pgrun.enqueue_workflow(p_spec);
    RETURN NULL;
EXCEPTION WHEN SQLSTATE 'RQ001' THEN
    GET STACKED DIAGNOSTICS v_detail = PG_EXCEPTION_DETAIL;
    RETURN v_detail;
END;
$$;
SELECT matches(
    pg_temp.conflict_detail('{"idempotency_key": "order-42", "name": "ship", "metadata": {"m": 1}, "steps": [
        {"key": "a", "job_type": "t.a", "payload": {"x": 1, "y": 2}},
        {"key": "b", "job_type": "t.b", "priority": 9},
        {"key": "d", "job_type": "t.c", "depends_on": ["a", {"step": "b", "release_mode": "on_terminal"}]}]}'),
    'differs in: step b, step c \(only in the stored request\), step d \(only in the new request\)\)$',
    'the DETAIL names the steps that differ'
);

-- TEST: keys are per organization
SELECT is(
    (SELECT created FROM pgrun.enqueue_workflow('{"idempotency_key": "order-42", "organization_id": "22222222-2222-2222-2222-222222222222",
        "steps": [{"key": "z", "job_type": "t"}]}')),
    true,
    'the same key in another organization is another run'
);
SELECT is(
    (SELECT created FROM pgrun.enqueue_workflow('{"steps": [{"key": "a", "job_type": "t.a", "payload": {"x": 1, "y": 2}}]}')),
    true,
    'an unkeyed enqueue always creates a run'
);

SELECT * FROM finish();
ROLLBACK;
