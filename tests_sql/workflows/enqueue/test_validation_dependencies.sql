-- Dependencies are checked one by one: shape, release mode, self-edges, unknown steps,
-- duplicates, and the step and edge limits.
BEGIN;
SELECT plan(9);

-- TEST: edges
SELECT throws_ok(
    $$SELECT * FROM pgrun.enqueue_workflow('{"steps": [{"key": "a", "job_type": "t"}, {"key": "b", "job_type": "t", "depends_on": ["zz"]}]}')$$,
    'RQ003', 'workflow.unknown_dependency', 'a dependency on a step that does not exist');
SELECT throws_ok(
    $$SELECT * FROM pgrun.enqueue_workflow('{"steps": [{"key": "a", "job_type": "t", "depends_on": ["a"]}]}')$$,
    'RQ003', 'workflow.self_dependency', 'a step that depends on itself');
SELECT throws_ok(
    $$SELECT * FROM pgrun.enqueue_workflow('{"steps": [{"key": "a", "job_type": "t"}, {"key": "b", "job_type": "t", "depends_on": [{"step": "a", "release_mode": "always"}]}]}')$$,
    'RQ003', 'workflow.invalid_release_mode', 'an unknown release mode');
SELECT throws_ok(
    $$SELECT * FROM pgrun.enqueue_workflow('{"steps": [{"key": "a", "job_type": "t"}, {"key": "b", "job_type": "t", "depends_on": [{"key": "a"}]}]}')$$,
    'RQ003', 'workflow.invalid_dependency', 'a dependency object without "step"');
SELECT throws_ok(
    $$SELECT * FROM pgrun.enqueue_workflow('{"steps": [{"key": "a", "job_type": "t"}, {"key": "b", "job_type": "t", "depends_on": "a"}]}')$$,
    'RQ003', 'workflow.invalid_dependency', 'depends_on that is not an array');
SELECT throws_ok(
    $$SELECT * FROM pgrun.enqueue_workflow('{"steps": [{"key": "a", "job_type": "t"}, {"key": "b", "job_type": "t", "depends_on": ["a", {"step": "a", "release_mode": "on_terminal"}]}]}')$$,
    'RQ003', 'workflow.duplicate_dependency', 'the same prerequisite listed twice');

-- TEST: limits
SELECT throws_ok(
    $$SELECT * FROM pgrun.enqueue_workflow(jsonb_build_object('steps', (
        SELECT jsonb_agg(jsonb_build_object('key', 'k' || g, 'job_type', 't')) FROM generate_series(1, 10001) AS g)))$$,
    'RQ003', 'workflow.too_many_steps', '10,001 steps');
SELECT lives_ok(
    $$SELECT * FROM pgrun.enqueue_workflow(jsonb_build_object('steps', (
        SELECT jsonb_agg(jsonb_build_object('key', 'k' || g, 'kind', 'external')) FROM generate_series(1, 10000) AS g)))$$,
    '10,000 steps are allowed');
-- 400 steps each depending on the same 251 roots: 100,400 edges
SELECT throws_ok(
    $$SELECT * FROM pgrun.enqueue_workflow(jsonb_build_object('steps',
        (SELECT jsonb_agg(jsonb_build_object('key', 'r' || g, 'kind', 'external')) FROM generate_series(1, 251) AS g)
        || (SELECT jsonb_agg(jsonb_build_object('key', 'd' || g, 'kind', 'external', 'depends_on',
                (SELECT jsonb_agg('r' || h) FROM generate_series(1, 251) AS h)))
            FROM generate_series(1, 400) AS g)))$$,
    'RQ003', 'workflow.too_many_dependencies', 'over 100,000 dependencies');

SELECT * FROM finish();
ROLLBACK;
