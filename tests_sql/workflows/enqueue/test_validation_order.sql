-- A spec with several faults reports the one its earliest check finds, whatever the
-- steps' order: the checks run in the order pgrun._workflow_check_steps documents
-- (plpgsql/workflows/_validate.sql): the array and the step count; each step's fields,
-- then each job step's placement, then each depends_on's type (each in array order);
-- duplicate keys; the dependency count, then each dependency (by step, then by entry);
-- duplicate dependencies; cycles. Each case puts the later check's fault in an earlier
-- step, so a check that ran out of order, or a step order that won over the check order,
-- shows as another error. Nothing is stored.
BEGIN;
SELECT plan(12);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
CREATE FUNCTION pg_temp.enqueue(p_steps jsonb) RETURNS text LANGUAGE sql AS $$
    SELECT format('SELECT * FROM pgrun.enqueue_workflow(%L)', jsonb_build_object('steps', p_steps))
$$;
SELECT pgrun_test.fingerprint() AS before \gset

-- TEST: the step count comes before any step
SELECT is(
    pgrun_test.error_of(pg_temp.enqueue(
        '[{"key": 1}]'::jsonb
        || (SELECT jsonb_agg(jsonb_build_object('key', 's' || g, 'job_type', 't')) FROM generate_series(1, 10000) AS g)
    )),
    'RQ003 workflow.too_many_steps: 10001 steps; a run has at most 10000',
    'too_many_steps before a malformed step'
);

-- TEST: every step's fields before any step's placement
SELECT is(
    pgrun_test.error_of(pg_temp.enqueue(
        '[{"key": "a", "job_type": "t", "delay": -1}, {"key": "b"}]'
    )),
    'RQ003 workflow.missing_job_type: step 2 (b): a job step names no job_type',
    'a later step''s missing job_type before an earlier step''s bad delay'
);

-- TEST: every step's placement before any step's depends_on type
SELECT is(
    pgrun_test.error_of(pg_temp.enqueue(
        '[{"key": "a", "job_type": "t", "depends_on": "b"}, {"key": "b", "job_type": "t", "run_at": "soon"}]'
    )),
    'RQ003 workflow.invalid_step: step 2 (b): run_at "soon" is not a finite time between 0001-01-02 and 100 years from now',
    'a later step''s bad run_at before an earlier step''s depends_on string'
);

-- TEST: every depends_on type before duplicate keys
SELECT is(
    pgrun_test.error_of(pg_temp.enqueue(
        '[{"key": "a", "job_type": "t"}, {"key": "a", "job_type": "t", "depends_on": {"step": "a"}}]'
    )),
    'RQ003 workflow.invalid_dependency: step 2 (a): depends_on is a JSON object, not an array',
    'a depends_on object before a duplicate key'
);

-- TEST: duplicate keys before the dependencies
SELECT is(
    pgrun_test.error_of(pg_temp.enqueue(
        '[{"key": "b", "job_type": "t", "depends_on": [1, "zz", "b"]}, {"key": "a", "job_type": "t"}, {"key": "a", "job_type": "t"}]'
    )),
    'RQ003 workflow.duplicate_step_key: step key ''a'' is used more than once',
    'a duplicate key before malformed, unknown and self dependencies'
);

-- TEST: the dependency count before any dependency
SELECT is(
    pgrun_test.error_of(pg_temp.enqueue(
        '[{"key": "a", "job_type": "t", "depends_on": [1]}]'::jsonb
        || (SELECT jsonb_agg(jsonb_build_object('key', 'd' || g, 'kind', 'external', 'depends_on',
                (SELECT jsonb_agg('a'::text) FROM generate_series(1, 251) AS h)))
            FROM generate_series(1, 400) AS g)
    )),
    'RQ003 workflow.too_many_dependencies: 100401 dependencies in one call; the limit is 100000',
    'too_many_dependencies before a malformed dependency'
);

-- TEST: dependencies by step, then by entry, whichever rule they break
SELECT is(
    pgrun_test.error_of(pg_temp.enqueue(
        '[{"key": "a", "job_type": "t", "depends_on": ["zz"]}, {"key": "b", "job_type": "t", "depends_on": [1]}]'
    )),
    'RQ003 workflow.unknown_dependency: step a: it depends on ''zz'', which is not a step of the workflow',
    'an earlier step''s unknown dependency before a later step''s malformed one'
);
SELECT is(
    pgrun_test.error_of(pg_temp.enqueue(
        '[{"key": "b", "job_type": "t", "depends_on": ["b", {"step": "a", "release_mode": "never"}]}, {"key": "a", "job_type": "t"}]'
    )),
    'RQ003 workflow.self_dependency: step b: it depends on itself',
    'an earlier entry''s self-edge before a later entry''s bad release mode'
);

-- TEST: every dependency before duplicate dependencies, those before cycles
SELECT is(
    pgrun_test.error_of(pg_temp.enqueue(
        '[{"key": "a", "job_type": "t", "depends_on": ["b", "b"]}, {"key": "b", "job_type": "t", "depends_on": ["b"]}]'
    )),
    'RQ003 workflow.self_dependency: step b: it depends on itself',
    'a later step''s self-edge before an earlier step''s duplicate dependency'
);
SELECT is(
    pgrun_test.error_of(pg_temp.enqueue(
        '[{"key": "a", "job_type": "t", "depends_on": ["b"]}, {"key": "b", "job_type": "t", "depends_on": ["a", "a"]}]'
    )),
    'RQ003 workflow.duplicate_dependency: step b lists its dependency on a more than once',
    'a duplicate dependency before the cycle it is part of'
);
SELECT throws_ok(
    pg_temp.enqueue('[{"key": "a", "job_type": "t", "depends_on": ["b"]}, {"key": "b", "job_type": "t", "depends_on": ["a"]}]'),
    'RQ003', 'workflow.cycle_detected', 'and the cycle once nothing else is wrong'
);

SELECT is(pgrun_test.fingerprint(), :'before', 'no table changed');

SELECT * FROM finish();
ROLLBACK;
