-- A step's organization_id, delay and run_at are part of the canonical request: the same
-- values (however spelt) replay, a different one is workflow.enqueue_conflicting_retry.
-- A step that names none of them has the normal form it had before they existed.
BEGIN;
SELECT plan(13);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT run_id AS run FROM pgrun.enqueue_workflow('{
    "idempotency_key": "k", "name": "placed",
    "steps": [
        {"key": "a", "job_type": "t.a", "organization_id": "22222222-2222-2222-2222-222222222222"},
        {"key": "b", "job_type": "t.b", "delay": 30, "depends_on": ["a"]},
        {"key": "c", "job_type": "t.c", "run_at": "2030-01-01T01:00:00Z", "depends_on": ["a"]},
        {"key": "d", "job_type": "t.d", "depends_on": ["a"]}
    ]}') \gset
CREATE FUNCTION pg_temp.retry(p_a jsonb, p_b jsonb, p_c jsonb) RETURNS text LANGUAGE sql AS $$
    SELECT format('SELECT run_id, created FROM pgrun.enqueue_workflow(%L)', jsonb_build_object(
        'idempotency_key', 'k', 'name', 'placed',
        'steps', jsonb_build_array(
            '{"key": "a", "job_type": "t.a"}'::jsonb || p_a,
            '{"key": "b", "job_type": "t.b", "depends_on": ["a"]}'::jsonb || p_b,
            '{"key": "c", "job_type": "t.c", "depends_on": ["a"]}'::jsonb || p_c,
            '{"key": "d", "job_type": "t.d", "depends_on": ["a"]}'::jsonb
        )
    ))
$$;

-- TEST: the snapshot holds the values in normal form, and nothing for a step without them
SELECT is(
    (SELECT jsonb_agg(jsonb_build_object('k', s ->> 'key', 'o', s -> 'organization_id', 'd', s -> 'delay', 'r', s -> 'run_at') ORDER BY s ->> 'key')
     FROM pgrun.workflow_runs AS r, jsonb_array_elements(r.enqueue_request -> 'steps') AS s WHERE r.id = :'run'),
    '[{"k": "a", "o": "22222222-2222-2222-2222-222222222222", "d": null, "r": null},
      {"k": "b", "o": null, "d": 30, "r": null},
      {"k": "c", "o": null, "d": null, "r": "2030-01-01T01:00:00.000000Z"},
      {"k": "d", "o": null, "d": null, "r": null}]'::jsonb,
    'organization_id as a uuid, delay as given, run_at in UTC'
);
SELECT is(
    (SELECT array_agg(s ->> 'key' ORDER BY s ->> 'key') FROM pgrun.workflow_runs AS r,
        jsonb_array_elements(r.enqueue_request -> 'steps') AS s
     WHERE r.id = :'run' AND s ?| ARRAY['organization_id', 'delay', 'run_at']),
    ARRAY['a', 'b', 'c'],
    'a step that names none of the three has no such keys (as before they existed)'
);

-- TEST: the same values, spelt differently, replay
SELECT results_eq(
    pg_temp.retry(
        '{"organization_id": "22222222222222222222222222222222"}', '{"delay": 30.0, "run_at": null}',
        '{"run_at": "2030-01-01 03:00:00+02", "organization_id": null}'),
    format($$VALUES (%L::uuid, false)$$, :'run'),
    'uuid without dashes, 30.0 for 30, another time zone, explicit nulls: the same request'
);
SET LOCAL TIME ZONE 'America/New_York';
SELECT results_eq(
    pg_temp.retry('{"organization_id": "22222222-2222-2222-2222-222222222222"}', '{"delay": 30}', '{"run_at": "2030-01-01T01:00:00Z"}'),
    format($$VALUES (%L::uuid, false)$$, :'run'),
    'the session time zone does not change the normal form'
);
RESET TIME ZONE;

-- TEST: each change is a conflict naming the step
SELECT throws_ok(pg_temp.retry('{"organization_id": "33333333-3333-3333-3333-333333333333"}', '{"delay": 30}', '{"run_at": "2030-01-01T01:00:00Z"}'),
    'RQ001', 'workflow.enqueue_conflicting_retry', 'another organization');
SELECT throws_ok(pg_temp.retry('{}', '{"delay": 30}', '{"run_at": "2030-01-01T01:00:00Z"}'),
    'RQ001', 'workflow.enqueue_conflicting_retry', 'the organization left out');
SELECT throws_ok(pg_temp.retry('{"organization_id": "22222222-2222-2222-2222-222222222222"}', '{"delay": 31}', '{"run_at": "2030-01-01T01:00:00Z"}'),
    'RQ001', 'workflow.enqueue_conflicting_retry', 'another delay');
SELECT throws_ok(pg_temp.retry('{"organization_id": "22222222-2222-2222-2222-222222222222"}', '{}', '{"run_at": "2030-01-01T01:00:00Z"}'),
    'RQ001', 'workflow.enqueue_conflicting_retry', 'the delay left out');
SELECT throws_ok(pg_temp.retry('{"organization_id": "22222222-2222-2222-2222-222222222222"}', '{"delay": 30}', '{"run_at": "2030-01-01T01:00:01Z"}'),
    'RQ001', 'workflow.enqueue_conflicting_retry', 'another run_at');
SELECT throws_ok(pg_temp.retry('{"organization_id": "22222222-2222-2222-2222-222222222222"}', '{"delay": 30}', '{"delay": 3600}'),
    'RQ001', 'workflow.enqueue_conflicting_retry', 'a delay instead of a run_at');
SELECT matches(
    pgrun_test.error_of(pg_temp.retry('{"organization_id": "22222222-2222-2222-2222-222222222222"}', '{"delay": 45}', '{"run_at": "2031-01-01T00:00:00Z"}')),
    'differs in: step b, step c\)$',
    'the DETAIL names the steps whose placement differs'
);

-- TEST: a retry is validated before it is compared
SELECT throws_ok(pg_temp.retry('{"organization_id": "22222222-2222-2222-2222-222222222222"}', '{"delay": 30}', '{"run_at": "2030-01-01T01:00:00Z", "delay": 0}'),
    'RQ003', 'workflow.invalid_step', 'validation comes before the comparison');
SELECT is((SELECT count(*) FROM pgrun.workflow_runs), 1::bigint, 'still one run');

SELECT * FROM finish();
ROLLBACK;
