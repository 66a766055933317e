-- get_workflow_run shows each step's organization_id, delay (seconds) and run_at; the live
-- job_status of a step's job only when the caller may see that job.
BEGIN;
SELECT plan(6);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT '11111111-1111-1111-1111-111111111111' AS org_a, '22222222-2222-2222-2222-222222222222' AS org_b \gset
SELECT pgrun.set_role_access('pgrun_tap_tenant_a', organization_ids => ARRAY[:'org_a'::uuid]);
SELECT pgrun_test.wf_enqueue(format('{"organization_id": "%s", "steps": [
    {"key": "a", "job_type": "t.a", "delay": 1.5},
    {"key": "b", "job_type": "t.b", "organization_id": "%s", "run_at": "2030-01-01T03:00:00+01:00"},
    {"key": "c", "kind": "external"}]}', :'org_a', :'org_b')::jsonb) AS run \gset

-- TEST: the three fields, for every step
SELECT is(
    (SELECT jsonb_agg(jsonb_build_object('key', s ->> 'key', 'organization_id', s -> 'organization_id',
        'delay', s -> 'delay', 'run_at', s -> 'run_at') ORDER BY s ->> 'key')
     FROM jsonb_array_elements(pgrun.get_workflow_run(:'run') -> 'steps') AS s),
    format('[{"key": "a", "organization_id": null, "delay": 1.5, "run_at": null},
             {"key": "b", "organization_id": "%s", "delay": null, "run_at": %s},
             {"key": "c", "organization_id": null, "delay": null, "run_at": null}]',
        :'org_b', to_jsonb('2030-01-01 02:00:00+00'::timestamptz))::jsonb,
    'organization_id, delay in seconds and run_at; NULL when not given'
);
SELECT is(
    (SELECT (s ->> 'delay')::numeric FROM jsonb_array_elements(pgrun.get_workflow_run(:'run') -> 'steps') AS s
     WHERE s ->> 'key' = 'a'),
    1.5,
    'delay is a number of seconds, as given'
);

-- TEST: job_status of a job the caller may not see
SELECT is(
    (SELECT jsonb_object_agg(s ->> 'key', s -> 'job_status') FROM jsonb_array_elements(pgrun.get_workflow_run(:'run') -> 'steps') AS s),
    '{"a": "queued", "b": "queued", "c": null}'::jsonb,
    'an admin sees every step''s job status'
);
SELECT is(
    pgrun_test.as_role('pgrun_tap_tenant_a', format(
        $$SELECT jsonb_object_agg(s ->> 'key', s -> 'job_status') FROM jsonb_array_elements(pgrun.get_workflow_run(%L) -> 'steps') AS s$$, :'run')),
    '{"a": "queued", "b": null, "c": null}',
    'the run''s tenant sees its own job''s status, not that of the job in B'
);
SELECT is(
    pgrun_test.as_role('pgrun_tap_tenant_a', format(
        $$SELECT (s ->> 'job_id') IS NOT NULL FROM jsonb_array_elements(pgrun.get_workflow_run(%L) -> 'steps') AS s WHERE s ->> 'key' = 'b'$$, :'run')),
    'true',
    'the step still says it has a job'
);
SELECT is(
    (SELECT jsonb_object_agg(s ->> 'key', s -> 'job_status') FROM jsonb_array_elements(pgrun.get_workflow_run(:'run', :'org_a') -> 'steps') AS s),
    '{"a": "queued", "b": null, "c": null}'::jsonb,
    'an admin naming organization A sees A''s jobs only'
);

SELECT * FROM finish();
ROLLBACK;
