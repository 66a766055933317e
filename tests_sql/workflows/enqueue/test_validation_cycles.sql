-- Cycles are refused, short or long, and the error names the cycle.
BEGIN;
SELECT plan(6);

-- TEST: short cycles
SELECT throws_ok(
    $$SELECT * FROM pgrun.enqueue_workflow('{"steps": [{"key": "a", "job_type": "t", "depends_on": ["b"]}, {"key": "b", "job_type": "t", "depends_on": ["a"]}]}')$$,
    'RQ003', 'workflow.cycle_detected', 'a two-step cycle');
SELECT throws_ok(
    $$SELECT * FROM pgrun.enqueue_workflow('{"steps": [{"key": "root", "job_type": "t"}, {"key": "a", "job_type": "t", "depends_on": ["root", "c"]}, {"key": "b", "job_type": "t", "depends_on": ["a"]}, {"key": "c", "job_type": "t", "depends_on": ["b"]}]}')$$,
    'RQ003', 'workflow.cycle_detected', 'a three-step cycle behind a root');

-- TEST: the DETAIL names the cycle, prerequisites first
CREATE FUNCTION pg_temp.cycle_detail(p_spec jsonb) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pgrun.enqueue_workflow(p_spec);
    RETURN NULL;
EXCEPTION WHEN SQLSTATE 'RQ003' THEN
    DECLARE v_detail text;
    BEGIN
        GET STACKED DIAGNOSTICS v_detail = PG_EXCEPTION_DETAIL;
        RETURN v_detail;
    END;
END;
$$;
SELECT is(
    pg_temp.cycle_detail('{"steps": [{"key": "x", "job_type": "t"}, {"key": "a", "job_type": "t", "depends_on": ["c"]}, {"key": "b", "job_type": "t", "depends_on": ["a", "x"]}, {"key": "c", "job_type": "t", "depends_on": ["b"]}]}'),
    'the dependencies form a cycle of 3 steps: b -> c -> a -> b (each step is needed by the next)',
    'the DETAIL lists the cycle'
);

-- TEST: long cycles: a 5,000-step chain whose first step depends on its last
SELECT throws_ok(
    $$SELECT * FROM pgrun.enqueue_workflow(jsonb_set(pgrun_test.wf_chain_spec(5000), '{steps,0,depends_on}', '["s5000"]'))$$,
    'RQ003', 'workflow.cycle_detected', 'a 5,000-step cycle');
SELECT matches(
    pg_temp.cycle_detail(jsonb_set(pgrun_test.wf_chain_spec(5000), '{steps,0,depends_on}', '["s5000"]')),
    '^the dependencies form a cycle of 5000 steps: .* -> \.\.\. -> ',
    'a long cycle is named in short'
);

-- TEST: a long acyclic chain is fine
SELECT lives_ok(
    $$SELECT * FROM pgrun.enqueue_workflow(pgrun_test.wf_chain_spec(5000))$$,
    'a 5,000-step chain without a cycle is accepted'
);

SELECT * FROM finish();
ROLLBACK;
