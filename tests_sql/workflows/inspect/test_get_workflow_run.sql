-- get_workflow_run: the run, its steps (with their jobs' live status), edges and appends.
BEGIN;
SELECT plan(8);

-- SETUP
SELECT pgrun_test.wf_enqueue('{"name": "n", "idempotency_key": "k1", "organization_id": "11111111-1111-1111-1111-111111111111",
    "metadata": {"m": true}, "steps": [
    {"key": "a", "job_type": "t", "payload": {"p": 1}},
    {"key": "b", "kind": "external", "depends_on": [{"step": "a", "release_mode": "on_terminal"}]}]}') AS run \gset
SELECT pgrun_test.wf_start(:'run', 'a');
SELECT * FROM pgrun.append_workflow_steps(:'run', 'more', '[{"key": "c", "job_type": "t", "depends_on": ["b"]}]');
SELECT pgrun.get_workflow_run(:'run') AS doc \gset

-- TEST: the run
SELECT is((:'doc'::jsonb) ->> 'id', :'run', 'the id');
SELECT is((:'doc'::jsonb) - 'steps' - 'dependencies' - 'mutations' - 'id' - 'run_id' - 'created_at' - 'updated_at',
    '{"name": "n", "status": "running", "metadata": {"m": true}, "finished_at": null, "cancel_reason": null,
      "idempotency_key": "k1", "organization_id": "11111111-1111-1111-1111-111111111111",
      "open_step_count": 3}'::jsonb,
    'the run''s columns, without the request snapshot');

-- TEST: steps
SELECT is(
    (SELECT jsonb_agg(jsonb_build_array(s ->> 'key', s ->> 'status', s ->> 'job_status', s -> 'dependency_count_pending')
        ORDER BY s ->> 'key') FROM jsonb_array_elements((:'doc'::jsonb) -> 'steps') AS s),
    '[["a", "released", "running", 0], ["b", "blocked", null, 1], ["c", "blocked", null, 1]]'::jsonb,
    'steps by key with their status, their job''s live status and counters');
SELECT is(
    (SELECT s -> 'payload' FROM jsonb_array_elements((:'doc'::jsonb) -> 'steps') AS s WHERE s ->> 'key' = 'a'),
    '{"p": 1}'::jsonb, 'the job template');

-- TEST: edges and appends
SELECT is(
    (SELECT jsonb_agg(e - 'resolved_at') FROM jsonb_array_elements((:'doc'::jsonb) -> 'dependencies') AS e),
    '[{"step": "b", "depends_on": "a", "release_mode": "on_terminal", "resolved": false},
      {"step": "c", "depends_on": "b", "release_mode": "on_success", "resolved": false}]'::jsonb,
    'edges with their release modes');
SELECT is(
    (SELECT jsonb_agg(m - 'id' - 'mutation_id' - 'created_at') FROM jsonb_array_elements((:'doc'::jsonb) -> 'mutations') AS m),
    '[{"mutation_key": "more", "step_keys": ["c"]}]'::jsonb,
    'the append');

-- TEST: tenancy
SELECT throws_ok(format($$SELECT pgrun.get_workflow_run(%L, '22222222-2222-2222-2222-222222222222')$$, :'run'),
    'RQ002', 'workflow.run_not_found', 'another organization''s run is not found');
SELECT throws_ok($$SELECT pgrun.get_workflow_run(gen_random_uuid())$$,
    'RQ002', 'workflow.run_not_found', 'an unknown run');

SELECT * FROM finish();
ROLLBACK;
