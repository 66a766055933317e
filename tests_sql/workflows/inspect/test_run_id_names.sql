-- A run's id has one name across the API: run_id (an append's: mutation_id).
-- list_workflow_runs rows and get_workflow_run's object carry it beside id, the compatibility
-- alias kept for existing clients, with the same value; so does each of the run's mutations.
BEGIN;
SELECT plan(6);

-- SETUP
SELECT pgrun_test.wf_enqueue('{"steps": [{"key": "a", "job_type": "t"}]}') AS run \gset
SELECT pgrun_test.wf_enqueue('{"steps": [{"key": "a", "job_type": "t"}]}') AS run2 \gset
SELECT mutation_id AS mutation FROM pgrun.append_workflow_steps(:'run', 'more', '[{"key": "b", "job_type": "t"}]') \gset
SELECT pgrun.get_workflow_run(:'run') AS doc \gset

-- TEST: list_workflow_runs
SELECT results_eq(
    $$SELECT run_id FROM pgrun.list_workflow_runs() ORDER BY run_id$$,
    format('VALUES (%L::uuid), (%L::uuid)', :'run', :'run2'),
    'list_workflow_runs rows carry run_id'
);
SELECT is(
    (SELECT count(*) FROM pgrun.list_workflow_runs() WHERE run_id IS DISTINCT FROM id),
    0::bigint,
    'with the value of id, the alias'
);
SELECT is(
    (SELECT array_agg(a.name ORDER BY a.n) FILTER (WHERE a.mode = 't')
     FROM pg_proc AS p, unnest(p.proargnames, p.proargmodes) WITH ORDINALITY AS a (name, mode, n)
     WHERE p.oid = 'pgrun.list_workflow_runs(text, uuid, uuid, integer)'::regprocedure),
    ARRAY[
        'id', 'name', 'status', 'organization_id', 'idempotency_key', 'metadata', 'open_step_count',
        'cancel_reason', 'created_at', 'updated_at', 'finished_at', 'run_id'
    ]::text[],
    'id keeps its place (the first column) and run_id is added last: no existing column moves'
);

-- TEST: get_workflow_run
SELECT is((:'doc'::jsonb) ->> 'run_id', :'run', 'get_workflow_run has run_id');
SELECT is((:'doc'::jsonb) ->> 'id', (:'doc'::jsonb) ->> 'run_id', 'and id, the alias, with the same value');
SELECT is(
    (SELECT jsonb_agg(jsonb_build_array(m ->> 'mutation_id', m ->> 'id')) FROM jsonb_array_elements((:'doc'::jsonb) -> 'mutations') AS m),
    jsonb_build_array(jsonb_build_array(:'mutation', :'mutation')),
    'each mutation has mutation_id (what append_workflow_steps returned) and id, the alias'
);

SELECT * FROM finish();
ROLLBACK;
