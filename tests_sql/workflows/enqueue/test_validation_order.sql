-- A spec with several faults reports the one its earliest check finds, whatever the
-- steps' order: the checks run in the order pgrun._workflow_check_steps documents
-- (plpgsql/workflows/_validate.sql): the array and the step count; each step's fields,
-- then each job step's placement, then each depends_on's type (each in array order);
-- duplicate keys; the dependency count, then each dependency (by step, then by entry);
-- duplicate dependencies; cycles. Where it can, a case puts the later check's fault in an
-- earlier step, so a check that ran out of order, or a step order that won over the check
-- order, shows as another error. Nothing is stored.
BEGIN;
SELECT plan(12);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
CREATE FUNCTION pg_temp.enqueue(p_steps jsonb) RETURNS text LANGUAGE sql AS $$
    SELECT format('SELECT * FROM pgrun.enqueue_workflow(%L)', jsonb_build_object('steps', p_steps))
$$;
SELECT pgrun_test.fingerprint() AS before \gset

-- TEST: each case's steps raise the error of its earliest check
CREATE TEMP TABLE cases (n integer, steps jsonb, want text, description text);
INSERT INTO cases VALUES
(1, '[{"key": 1}]'::jsonb
    || (SELECT jsonb_agg(jsonb_build_object('key', 's' || g, 'job_type', 't')) FROM generate_series(1, 10000) AS g),
    'workflow.too_many_steps: 10001 steps; a run has at most 10000',
    'the step count before a malformed step'),
(2, '[{"key": "a", "job_type": "t", "delay": -1}, {"key": "b"}]',
    'workflow.missing_job_type: step 2 (b): a job step names no job_type',
    'every step''s fields (a later step''s missing job_type) before an earlier step''s bad delay'),
(3, '[{"key": "a", "job_type": "t", "depends_on": "b"}, {"key": "b", "job_type": "t", "run_at": "soon"}]',
    'workflow.invalid_step: step 2 (b): run_at "soon" is not a finite time between 0001-01-02 and 100 years from now',
    'every step''s placement (a later step''s bad run_at) before an earlier step''s depends_on string'),
(4, '[{"key": "a", "job_type": "t"}, {"key": "a", "job_type": "t", "depends_on": {"step": "a"}}]',
    'workflow.invalid_dependency: step 2 (a): depends_on is a JSON object, not an array',
    'every depends_on type before duplicate keys'),
(5, '[{"key": "b", "job_type": "t", "depends_on": [1, "zz", "b"]}, {"key": "a", "job_type": "t"}, {"key": "a", "job_type": "t"}]',
    'workflow.duplicate_step_key: step key ''a'' is used more than once',
    'duplicate keys before malformed, unknown and self dependencies'),
(6, '[{"key": "a", "job_type": "t", "depends_on": [1]}]'::jsonb
    || (SELECT jsonb_agg(jsonb_build_object('key', 'd' || g, 'kind', 'external', 'depends_on',
            (SELECT jsonb_agg('a'::text) FROM generate_series(1, 251) AS h)))
        FROM generate_series(1, 400) AS g),
    'workflow.too_many_dependencies: 100401 dependencies in one call; the limit is 100000',
    'the dependency count before a malformed dependency'),
(7, '[{"key": "a", "job_type": "t", "depends_on": ["zz"]}, {"key": "b", "job_type": "t", "depends_on": [1]}]',
    'workflow.unknown_dependency: step a: it depends on ''zz'', which is not a step of the workflow',
    'dependencies by step: an earlier step''s unknown dependency before a later step''s malformed one'),
(8, '[{"key": "b", "job_type": "t", "depends_on": ["b", {"step": "a", "release_mode": "never"}]}, {"key": "a", "job_type": "t"}]',
    'workflow.self_dependency: step b: it depends on itself',
    'then by entry: an earlier entry''s self-edge before a later entry''s bad release mode'),
(9, '[{"key": "a", "job_type": "t", "depends_on": ["b", "b"]}, {"key": "b", "job_type": "t", "depends_on": ["b"]}]',
    'workflow.self_dependency: step b: it depends on itself',
    'every dependency (a later step''s self-edge) before an earlier step''s duplicate dependency'),
(10, '[{"key": "a", "job_type": "t", "depends_on": ["b"]}, {"key": "b", "job_type": "t", "depends_on": ["a", "a"]}]',
    'workflow.duplicate_dependency: step b lists its dependency on a more than once',
    'a duplicate dependency before the cycle it is part of');

SELECT is(pgrun_test.error_of(pg_temp.enqueue(c.steps)), 'RQ003 ' || c.want, c.description)
FROM cases AS c
ORDER BY c.n;
SELECT throws_ok(
    pg_temp.enqueue('[{"key": "a", "job_type": "t", "depends_on": ["b"]}, {"key": "b", "job_type": "t", "depends_on": ["a"]}]'),
    'RQ003', 'workflow.cycle_detected', 'and the cycle once nothing else is wrong'
);

SELECT is(pgrun_test.fingerprint(), :'before', 'no table changed');

SELECT * FROM finish();
ROLLBACK;
