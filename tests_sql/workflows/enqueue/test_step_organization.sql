-- A job step may name its own organization: its job is stamped with it (tenant scoping of
-- get_job / list_jobs follows the job), provided the caller could enqueue a job in that
-- organization directly; otherwise access.organization_denied (42501), nothing stored.
BEGIN;
SELECT plan(19);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT '11111111-1111-1111-1111-111111111111' AS org_a, '22222222-2222-2222-2222-222222222222' AS org_b,
    '33333333-3333-3333-3333-333333333333' AS org_c \gset
SELECT pgrun.set_role_access('pgrun_tap_tenant_a', organization_ids => ARRAY[:'org_a'::uuid]);
SELECT pgrun.set_role_access('pgrun_tap_tenant_b', organization_ids => ARRAY[:'org_b'::uuid]);
SELECT pgrun.set_role_access('pgrun_tap_app', organization_ids => ARRAY[:'org_a'::uuid, :'org_b'::uuid]);

-- TEST: an admin places a step in another organization; the rest stay in the run's
SELECT pgrun_test.wf_enqueue(format('{"organization_id": %s, "steps": [
    {"key": "own", "job_type": "t.own"},
    {"key": "there", "job_type": "t.there", "organization_id": "%s"}]}', to_jsonb(:'org_a'::text), upper(:'org_b'))::jsonb) AS run \gset
SELECT is((SELECT organization_id FROM pgrun.jobs WHERE id = pgrun_test.wf_job(:'run', 'own')), :'org_a'::uuid,
    'a step without organization_id makes a job of the run''s organization');
SELECT is((SELECT organization_id FROM pgrun.jobs WHERE id = pgrun_test.wf_job(:'run', 'there')), :'org_b'::uuid,
    'a step with organization_id (any case) makes a job of that organization');
SELECT is((SELECT organization_id FROM pgrun.workflow_steps WHERE run_id = :'run' AND step_key = 'there'), :'org_b'::uuid,
    'the step stores it');

-- TEST: tenant scoping follows the job
SELECT is(pgrun_test.as_role('pgrun_tap_tenant_b', format('SELECT pgrun.get_job(%L) ->> ''job_type''', pgrun_test.wf_job(:'run', 'there'))),
    't.there', 'the tenant of the step''s organization sees its job');
SELECT is(pgrun_test.as_role('pgrun_tap_tenant_b', format('SELECT count(*) FROM pgrun.list_jobs(workflow_run_id => %L)', :'run')),
    '1', 'and lists only that job of the run');
SELECT is(pgrun_test.as_role('pgrun_tap_tenant_a', format('SELECT pgrun.get_job(%L)', pgrun_test.wf_job(:'run', 'there'))),
    'RQ002 job.not_found', 'the run''s tenant does not see a job of another organization');
SELECT is(pgrun_test.as_role('pgrun_tap_tenant_a', format('SELECT count(*) FROM pgrun.list_jobs(workflow_run_id => %L)', :'run')),
    '1', 'and lists only its own job of the run');

-- TEST: a tenant may not place a step outside its organizations
SELECT pgrun_test.fingerprint() AS before \gset
SELECT is(pgrun_test.as_role('pgrun_tap_tenant_a', format(
    $$SELECT run_id FROM pgrun.enqueue_workflow('{"steps": [{"key": "x", "job_type": "t", "organization_id": "%s"}]}')$$, :'org_b')),
    '42501 access.organization_denied', 'a role bound to A cannot place a step in B');
SELECT is(pgrun_test.error_detail_as('pgrun_tap_tenant_a', format(
    $$SELECT run_id FROM pgrun.enqueue_workflow('{"steps": [{"key": "a", "job_type": "t"}, {"key": "x", "job_type": "t", "organization_id": "%s"}]}')$$, :'org_b')),
    format('step x: role pgrun_tap_tenant_a may not act for organization %s', :'org_b'),
    'the DETAIL names the step and the organization');
SELECT is(pgrun_test.as_role('pgrun_tap_producer', format(
    $$SELECT run_id FROM pgrun.enqueue_workflow('{"steps": [{"key": "x", "job_type": "t", "organization_id": "%s"}]}')$$, :'org_a')),
    '42501 access.organization_denied', 'a role without tenancy cannot place a step in any organization (its run has none)');
SELECT is(pgrun_test.fingerprint(), :'before', 'the refusals stored nothing');

-- TEST: who may
SELECT is(pgrun_test.as_role('pgrun_tap_tenant_a', format(
    $$SELECT count(*) FROM pgrun.enqueue_workflow('{"steps": [{"key": "x", "job_type": "t.a1", "organization_id": "%s"}]}')$$, :'org_a')),
    '1', 'a tenant may name its own organization on a step');
SELECT is((SELECT organization_id FROM pgrun.jobs WHERE job_type = 't.a1'), :'org_a'::uuid, 'and its job is there');
SELECT is(pgrun_test.as_role('pgrun_tap_app', format(
    $$SELECT count(*) FROM pgrun.enqueue_workflow('{"organization_id": "%s", "steps": [{"key": "x", "job_type": "t.ab", "organization_id": "%s"}]}')$$,
    :'org_a', :'org_b')),
    '1', 'a role bound to A and B may run in A with a step in B');
SELECT is((SELECT organization_id FROM pgrun.jobs WHERE job_type = 't.ab'), :'org_b'::uuid, 'and that step''s job is B''s');
SELECT is(pgrun_test.as_role('pgrun_tap_app', format(
    $$SELECT run_id FROM pgrun.enqueue_workflow('{"organization_id": "%s", "steps": [{"key": "x", "job_type": "t", "organization_id": "%s"}]}')$$,
    :'org_a', :'org_c')),
    '42501 access.organization_denied', 'but not with a step in C');
SELECT pgrun.set_role_access('pgrun_tap_producer', any_organization => true);
SELECT is(pgrun_test.as_role('pgrun_tap_producer', format(
    $$SELECT count(*) FROM pgrun.enqueue_workflow('{"steps": [{"key": "x", "job_type": "t.any", "organization_id": "%s"}]}')$$, :'org_c')),
    '1', 'an any-organization role may place a step of a run without organization in any organization');
SELECT is(pgrun_test.as_role('pgrun_tap_admin', format(
    $$SELECT count(*) FROM pgrun.enqueue_workflow('{"steps": [{"key": "x", "job_type": "t.adm", "organization_id": "%s"}]}')$$, :'org_c')),
    '1', 'an admin may place a step of a run without organization in any organization');
SELECT is((SELECT organization_id FROM pgrun.jobs WHERE job_type = 't.adm'), :'org_c'::uuid, 'and the job is C''s');

SELECT * FROM finish();
ROLLBACK;
