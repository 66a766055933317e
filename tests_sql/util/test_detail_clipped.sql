-- A huge bad argument is refused with its documented code, and no DETAIL echoes it whole:
-- every echoed value is cut at about 200 characters (pgrun._shown), so neither the client
-- nor the server log receives a megabyte back. Lengths are tested before patterns.
BEGIN;
SELECT plan(41);

-- SETUP: a 1 MB string that would match the job type, queue and step patterns
SELECT repeat('a', 1000000) AS huge \gset
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT job_id AS job, lease_token AS token FROM pgrun_test.running_job() \gset
SELECT pgrun_test.wf_enqueue('{"steps": [{"key": "gate", "kind": "external"}]}') AS run \gset

CREATE TEMP TABLE calls (n serial, label text, sql text, code text) ON COMMIT DROP;
INSERT INTO calls (label, sql, code) VALUES
    ('upsert_job_definition job_type', format('SELECT pgrun.upsert_job_definition(%L)', :'huge'), 'job.invalid_type'),
    ('upsert_job_definition queue', format('SELECT pgrun.upsert_job_definition(''t'', queue => %L)', :'huge'), 'job.invalid_queue'),
    ('set_job_runtime_config job_type', format('SELECT pgrun.set_job_runtime_config(%L)', :'huge'), 'job.invalid_type'),
    ('list_jobs status', format('SELECT * FROM pgrun.list_jobs(status => %L)', :'huge'), 'job.invalid_status'),
    ('claim_jobs worker_id', format('SELECT * FROM pgrun.claim_jobs(%L)', :'huge'), 'job.invalid_worker_id'),
    ('continue_job next_step', format('SELECT * FROM pgrun.continue_job(%L, %L, %L)', :'job', :'token', :'huge'), 'job.invalid_step'),
    ('append_job_log level', format('SELECT pgrun.append_job_log(%L, %L, ''m'', %L)', :'job', :'token', :'huge'), 'job.invalid_log_entry'),
    ('enqueue_job job_type', format('SELECT * FROM pgrun.enqueue_job(%L)', :'huge'), 'job.invalid_type'),
    ('enqueue_jobs unknown key', format('SELECT * FROM pgrun.enqueue_jobs(%L::jsonb)',
        jsonb_build_array(jsonb_build_object('job_type', 't', :'huge', 1))), 'job.invalid_batch'),
    ('list_workflow_runs status', format('SELECT * FROM pgrun.list_workflow_runs(status => %L)', :'huge'), 'workflow.invalid_status'),
    ('complete_external_step step_key', format('SELECT * FROM pgrun.complete_external_step(%L, %L)', :'run', :'huge'), 'workflow.step_not_found'),
    ('enqueue_workflow organization_id', format('SELECT * FROM pgrun.enqueue_workflow(%L::jsonb)',
        jsonb_build_object('organization_id', :'huge', 'steps', '[{"key": "s", "job_type": "t"}]'::jsonb)), 'workflow.invalid_spec'),
    ('enqueue_workflow unknown field', format('SELECT * FROM pgrun.enqueue_workflow(%L::jsonb)',
        jsonb_build_object(:'huge', 1, 'steps', '[{"key": "s", "job_type": "t"}]'::jsonb)), 'workflow.invalid_spec'),
    ('enqueue_workflow step kind', format('SELECT * FROM pgrun.enqueue_workflow(%L::jsonb)',
        jsonb_build_object('steps', jsonb_build_array(jsonb_build_object('key', 's', 'kind', :'huge')))), 'workflow.invalid_step'),
    ('enqueue_workflow step job_type', format('SELECT * FROM pgrun.enqueue_workflow(%L::jsonb)',
        jsonb_build_object('steps', jsonb_build_array(jsonb_build_object('key', 's', 'job_type', :'huge')))), 'workflow.invalid_step'),
    ('enqueue_workflow unknown dependency', format('SELECT * FROM pgrun.enqueue_workflow(%L::jsonb)',
        jsonb_build_object('steps', jsonb_build_array(jsonb_build_object('key', 's', 'job_type', 't', 'depends_on', jsonb_build_array(:'huge'))))),
        'workflow.unknown_dependency'),
    ('append_workflow_steps unknown dependency', format('SELECT * FROM pgrun.append_workflow_steps(%L, NULL, %L::jsonb)', :'run',
        jsonb_build_array(jsonb_build_object('key', 's', 'job_type', 't', 'depends_on', jsonb_build_array(:'huge')))),
        'workflow.unknown_dependency'),
    ('set_role_access queues', format('SELECT pgrun.set_role_access(current_user, queues => ARRAY[%L])', :'huge'), 'access.invalid_scope');

-- TEST: each call raises its code, and its DETAIL stays short
SELECT throws_ok(c.sql, CASE WHEN c.code LIKE '%not_found' THEN 'RQ002' ELSE 'RQ003' END, c.code, c.label || ': ' || c.code)
FROM calls AS c ORDER BY c.n;
SELECT cmp_ok(length(coalesce(pgrun_test.error_detail(c.sql), '')), '<', 400, c.label || ': DETAIL is short')
FROM calls AS c ORDER BY c.n;

-- TEST: the shape of an echo
SELECT is(pgrun._shown('abc'), '''abc''', 'a short value is quoted whole');
SELECT is(pgrun._shown(NULL), 'NULL', 'NULL is NULL');
SELECT is(pgrun._shown(repeat('b', 1000)), '''' || repeat('b', 200) || '''... (1000 characters)', 'a long one is cut, saying how long it was');

-- TEST: a value longer than the limit is refused even though it matches the pattern
SELECT ok(NOT pgrun._valid_job_type(repeat('a', 129)), 'a 129-character job type is invalid');
SELECT ok(NOT pgrun._valid_queue(repeat('a', 65)), 'a 65-character queue is invalid');

SELECT * FROM finish();
ROLLBACK;
