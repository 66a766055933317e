-- A producer bound to organization A sees and steers A's work without naming A, and what it
-- makes is stamped with A; a reader bound to A reads it but steers nothing.
BEGIN;
SELECT plan(22);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT * FROM pgrun_test.two_tenants() \gset

-- TEST: reading its own work
SELECT is(pgrun_test.as_role('pgrun_tap_tenant_a', format('SELECT pgrun.get_job(%L) ->> ''id''', :'a_job')),
    :'a_job', 'get_job finds A''s job without organization_id');
SELECT is(pgrun_test.as_role('pgrun_tap_tenant_a', 'SELECT count(*) FROM pgrun.list_jobs()'),
    '2', 'list_jobs lists A''s jobs: the queued one and the dead one (the run''s gate makes no job)');
SELECT is(pgrun_test.as_role('pgrun_tap_tenant_a', format('SELECT pgrun.get_workflow_run(%L) ->> ''status''', :'a_run')),
    'running', 'get_workflow_run finds A''s run');
SELECT is(pgrun_test.as_role('pgrun_tap_tenant_a', 'SELECT string_agg(name, '','') FROM pgrun.list_schedules()'),
    'nightly', 'list_schedules lists A''s schedule');

-- TEST: what it makes is A's
SELECT pgrun_test.as_role('pgrun_tap_tenant_a', $$SELECT job_id FROM pgrun.enqueue_job('tenant.new')$$) AS new_job \gset
SELECT is((SELECT organization_id FROM pgrun.jobs WHERE id = :'new_job'), :'org_a'::uuid,
    'enqueue_job without organization_id is stamped with A');
SELECT pgrun_test.as_role('pgrun_tap_tenant_a', format(
    $$SELECT count(*) FROM pgrun.enqueue_jobs('[{"job_type": "t.a"}, {"job_type": "t.b", "organization_id": %s}]')$$,
    to_json(:'org_a'::text)));
SELECT is(
    (SELECT array_agg(DISTINCT organization_id) FROM pgrun.jobs WHERE job_type IN ('t.a', 't.b')), ARRAY[:'org_a'::uuid],
    'enqueue_jobs stamps every element with A (named or not)'
);
SELECT is(pgrun_test.as_role('pgrun_tap_tenant_a', format(
    $$SELECT pgrun.enqueue_jobs('[{"job_type": "t.a"}, {"job_type": "t.b", "organization_id": %s}]')$$,
    to_json(:'org_b'::text))),
    '42501 access.organization_denied', 'one element for B refuses the whole batch');
SELECT pgrun_test.as_role('pgrun_tap_tenant_a',
    $$SELECT job_id FROM pgrun.enqueue_job('keyed.work', idempotency_key => 'k1')$$) AS keyed \gset
SELECT is(
    (SELECT job_id::text || ':' || created FROM pgrun.enqueue_job('keyed.work', idempotency_key => 'k1', organization_id => :'org_a')),
    :'keyed' || ':false',
    'a keyed retry by an admin naming A finds the tenant''s job: the stamped organization is part of the request'
);
SELECT pgrun_test.as_role('pgrun_tap_tenant_a',
    $$SELECT run_id FROM pgrun.enqueue_workflow('{"steps": [{"key": "only", "job_type": "t.w"}]}')$$) AS new_run \gset
SELECT is((SELECT organization_id FROM pgrun.workflow_runs WHERE id = :'new_run'), :'org_a'::uuid,
    'enqueue_workflow without organization_id is stamped with A');
SELECT is((SELECT organization_id FROM pgrun.jobs WHERE workflow_run_id = :'new_run'), :'org_a'::uuid,
    'and so is the job its root step released');
SELECT is(pgrun_test.as_role('pgrun_tap_tenant_a', $$SELECT created FROM pgrun.upsert_schedule('mine', '0 * * * *', 't.s')$$),
    'true', 'upsert_schedule without organization_id creates A''s schedule');
SELECT is((SELECT organization_id FROM pgrun.job_schedules WHERE name = 'mine'), :'org_a'::uuid, 'stamped with A');
SELECT is(pgrun_test.as_role('pgrun_tap_producer',
    $$SELECT pgrun.upsert_schedule('fan', '0 * * * *', 't.s', scope_kind => 'organization', scopes => ARRAY[gen_random_uuid()::text])$$),
    '42501 access.organization_denied',
    'a schedule scoped by organization (jobs for other tenants) is refused to a role that may not name any');

-- TEST: steering its own work
SELECT is(pgrun_test.as_role('pgrun_tap_tenant_a', format('SELECT pgrun.cancel_job(%L)', :'a_job')),
    'cancelled', 'cancel_job cancels A''s job');
SELECT is(pgrun_test.as_role('pgrun_tap_tenant_a', format('SELECT pgrun.requeue_job(%L) IS NOT NULL', :'a_dead')),
    'true', 'requeue_job requeues A''s dead job');
SELECT is(pgrun_test.as_role('pgrun_tap_tenant_a', format('SELECT step_status FROM pgrun.complete_external_step(%L, %L)', :'a_run', 'gate')),
    'succeeded', 'complete_external_step closes A''s gate');
SELECT is((SELECT organization_id FROM pgrun.jobs WHERE id = pgrun_test.wf_job(:'a_run', 'after')), :'org_a'::uuid,
    'the step it released runs as a job of A');
SELECT is(pgrun_test.as_role('pgrun_tap_tenant_a', format(
    $$SELECT created FROM pgrun.append_workflow_steps(%L, 'm1', '[{"key": "more", "job_type": "t.x"}]')$$, :'a_run')),
    'true', 'append_workflow_steps adds to A''s run');
SELECT is(pgrun_test.as_role('pgrun_tap_tenant_a', $$SELECT changed FROM pgrun.pause_schedule('nightly')$$),
    'true', 'pause_schedule without organization_id pauses A''s nightly (not B''s)');
SELECT is((SELECT organization_id FROM pgrun.job_schedules WHERE paused_at IS NOT NULL), :'org_a'::uuid, 'only A''s');

-- TEST: a reader bound to A reads, and steers nothing
SELECT is(pgrun_test.as_role('pgrun_tap_reader_a', format('SELECT pgrun.get_job(%L) ->> ''id''', :'a_job')),
    :'a_job', 'the reader reads A''s job');
SELECT is(pgrun_test.as_role('pgrun_tap_reader_a', format('SELECT pgrun.cancel_job(%L)', :'b_job')),
    '42501 permission denied for function cancel_job', 'but may not cancel anything');

SELECT * FROM finish();
ROLLBACK;
