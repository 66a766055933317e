-- A producer bound to organization A reaches none of organization B's work, whatever
-- organization_id it passes: every function that takes an id says not found (exactly as for
-- a missing one) or 42501, and no pgrun table changes. (docs/security.md, "Tenancy")
BEGIN;
SELECT plan(28);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT * FROM pgrun_test.two_tenants() \gset
SELECT pgrun_test.freeze_time('2030-01-01 00:10:00+00');
SELECT pgrun_test.fingerprint() AS before \gset

-- TEST: one job, by id, with and without naming B
SELECT is(pgrun_test.as_role('pgrun_tap_tenant_a', format('SELECT pgrun.get_job(%L)', :'b_job')),
    'RQ002 job.not_found', 'get_job of B''s job is not found');
SELECT is(pgrun_test.as_role('pgrun_tap_tenant_a', format('SELECT pgrun.get_job(%L, %L)', :'b_job', :'org_b')),
    'RQ002 job.not_found', 'also when A names organization B');
SELECT is(pgrun_test.as_role('pgrun_tap_tenant_a', format('SELECT pgrun.get_job(%L)', :'plain_job')),
    'RQ002 job.not_found', 'a job without an organization is not A''s either');
SELECT is(pgrun_test.as_role('pgrun_tap_tenant_a', format('SELECT pgrun.cancel_job(%L)', :'b_job')),
    'RQ002 job.not_found', 'cancel_job of B''s job is not found');
SELECT is(pgrun_test.as_role('pgrun_tap_tenant_a', format('SELECT pgrun.cancel_job(%L, organization_id => %L)', :'b_job', :'org_b')),
    'RQ002 job.not_found', 'also naming B');
SELECT is(pgrun_test.as_role('pgrun_tap_tenant_a', format('SELECT pgrun.requeue_job(%L)', :'b_dead')),
    'RQ002 job.not_found', 'requeue_job of B''s dead job is not found');
SELECT is(pgrun_test.as_role('pgrun_tap_tenant_a', format('SELECT pgrun.requeue_job(%L, %L)', :'b_dead', :'org_b')),
    'RQ002 job.not_found', 'also naming B');

-- TEST: lists and metrics
SELECT is(pgrun_test.as_role('pgrun_tap_tenant_a', format(
    'SELECT count(*) FROM pgrun.list_jobs() WHERE organization_id IS DISTINCT FROM %L', :'org_a')),
    '0', 'list_jobs without organization_id lists A''s jobs only');
SELECT is(pgrun_test.as_role('pgrun_tap_tenant_a', format('SELECT count(*) FROM pgrun.list_jobs(organization_id => %L)', :'org_b')),
    '0', 'list_jobs naming B lists nothing');
SELECT is(pgrun_test.as_role('pgrun_tap_tenant_a', format('SELECT count(*) FROM pgrun.list_jobs(workflow_run_id => %L)', :'b_run')),
    '0', 'list_jobs of B''s run lists nothing');
SELECT is(pgrun_test.as_role('pgrun_tap_tenant_a', 'SELECT sum(ready)::text FROM pgrun.queue_depth()'),
    '1', 'queue_depth counts A''s one ready job (not B''s, not the unowned one)');
SELECT is(pgrun_test.as_role('pgrun_tap_tenant_a', format('SELECT count(*) FROM pgrun.queue_depth(%L)', :'org_b')),
    '0', 'queue_depth naming B counts nothing');
SELECT is(pgrun_test.as_role('pgrun_tap_tenant_a', 'SELECT sum(queued + dead)::text FROM pgrun.job_metrics()'),
    '2', 'job_metrics counts A''s two jobs only');

-- TEST: workflow runs
SELECT is(pgrun_test.as_role('pgrun_tap_tenant_a', format('SELECT pgrun.get_workflow_run(%L)', :'b_run')),
    'RQ002 workflow.run_not_found', 'get_workflow_run of B''s run is not found');
SELECT is(pgrun_test.as_role('pgrun_tap_tenant_a', format(
    'SELECT count(*) FROM pgrun.list_workflow_runs() WHERE organization_id IS DISTINCT FROM %L', :'org_a')),
    '0', 'list_workflow_runs lists A''s runs only');
SELECT is(pgrun_test.as_role('pgrun_tap_tenant_a', format(
    'SELECT pgrun.complete_external_step(%L, %L, organization_id => %L)', :'b_run', 'gate', :'org_b')),
    'RQ002 workflow.run_not_found', 'complete_external_step cannot close B''s gate');
SELECT is(pgrun_test.as_role('pgrun_tap_tenant_a', format(
    $$SELECT pgrun.append_workflow_steps(%L, NULL, '[{"key": "extra", "job_type": "t.x"}]')$$, :'b_run')),
    'RQ002 workflow.run_not_found', 'append_workflow_steps cannot add to B''s run');
SELECT is(pgrun_test.as_role('pgrun_tap_tenant_a', format('SELECT pgrun.cancel_workflow_run(%L)', :'b_run')),
    'RQ002 workflow.run_not_found', 'cancel_workflow_run cannot cancel B''s run');

-- TEST: schedules (by name: A's own 'nightly' is the one it names)
SELECT is(pgrun_test.as_role('pgrun_tap_tenant_a', format('SELECT pgrun.pause_schedule(%L, %L)', 'nightly', :'org_b')),
    'RQ002 schedule.not_found', 'pause_schedule of B''s schedule is not found');
SELECT is(pgrun_test.as_role('pgrun_tap_tenant_a', format('SELECT pgrun.resume_schedule(%L, %L)', 'nightly', :'org_b')),
    'RQ002 schedule.not_found', 'resume_schedule of B''s schedule is not found');
SELECT is(pgrun_test.as_role('pgrun_tap_tenant_a', format('SELECT pgrun.delete_schedule(%L, %L)', 'nightly', :'org_b')),
    'RQ002 schedule.not_found', 'delete_schedule of B''s schedule is not found');
SELECT is(pgrun_test.as_role('pgrun_tap_tenant_a', format(
    'SELECT count(*) FROM pgrun.list_schedules() WHERE organization_id IS DISTINCT FROM %L', :'org_a')),
    '0', 'list_schedules lists A''s schedules only');
SELECT is(pgrun_test.as_role('pgrun_tap_tenant_a', format(
    'SELECT pgrun.fire_schedule(%L, ARRAY[%L]::timestamptz[], %L, %L)',
    :'b_schedule', '2030-01-01 00:05:00+00', '2030-01-01 00:15:00+00', pgrun_test.claim_token_of(:'b_schedule'))),
    '42501 permission denied for function fire_schedule', 'a producer cannot fire a schedule at all');

-- TEST: writes naming B are refused
SELECT is(pgrun_test.as_role('pgrun_tap_tenant_a', format(
    'SELECT pgrun.enqueue_job(%L, organization_id => %L)', 'tenant.work', :'org_b')),
    '42501 access.organization_denied', 'enqueue_job for organization B is refused');
SELECT is(pgrun_test.as_role('pgrun_tap_tenant_a', format(
    $$SELECT pgrun.enqueue_workflow('{"organization_id": %s, "steps": [{"key": "a", "job_type": "t.x"}]}')$$,
    to_json(:'org_b'::text))),
    '42501 access.organization_denied', 'enqueue_workflow for organization B is refused');
SELECT is(pgrun_test.as_role('pgrun_tap_tenant_a', format(
    'SELECT pgrun.upsert_schedule(%L, %L, %L, organization_id => %L)', 'sneaky', '* * * * *', 't.x', :'org_b')),
    '42501 access.organization_denied', 'upsert_schedule for organization B is refused');
SELECT is(pgrun_test.as_role('pgrun_tap_tenant_a', format(
    'SELECT pgrun.purge_finished_jobs(%L, organization_id => %L)', '0 seconds', :'org_b')),
    '42501 permission denied for function purge_finished_jobs', 'purge is for admins only');

-- TEST: none of it changed anything
SELECT is(pgrun_test.fingerprint(), :'before', 'every pgrun table is exactly as before the attempts');

SELECT * FROM finish();
ROLLBACK;
