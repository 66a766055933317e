-- The four kinds of caller (docs/security.md, "Tenancy"): a role without a role_access row
-- acts for work without an organization only; a role that may name any organization acts for
-- the one it names (NULL: none, never "all"); a role bound to several must name one to write;
-- an admin sees every organization. A changed mapping holds from the role's next call.
BEGIN;
SELECT plan(24);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT * FROM pgrun_test.two_tenants() \gset

-- TEST: no row (a single-tenant install's producer)
SELECT pgrun_test.as_role('pgrun_tap_producer', $$SELECT job_id FROM pgrun.enqueue_job('plain.new')$$) AS plain_new \gset
SELECT ok((SELECT organization_id IS NULL FROM pgrun.jobs WHERE id = :'plain_new'), 'its enqueue has no organization');
SELECT is(pgrun_test.as_role('pgrun_tap_producer', format('SELECT pgrun.enqueue_job(%L, organization_id => %L)', 'x', :'org_a')),
    '42501 access.organization_denied', 'it may not enqueue for an organization');
SELECT is(pgrun_test.as_role('pgrun_tap_producer', format('SELECT pgrun.get_job(%L) ->> ''id''', :'plain_job')),
    :'plain_job', 'it reads work without an organization');
SELECT is(pgrun_test.as_role('pgrun_tap_producer', format('SELECT pgrun.get_job(%L, %L)', :'a_job', :'org_a')),
    'RQ002 job.not_found', 'and no organization''s work, even naming it');
SELECT is(pgrun_test.as_role('pgrun_tap_producer', 'SELECT count(*) FILTER (WHERE organization_id IS NOT NULL) || ''/'' || count(*) FROM pgrun.list_jobs()'),
    '0/2', 'list_jobs lists the two jobs without an organization');

-- TEST: any organization it names (an application server serving many tenants)
SELECT pgrun.set_role_access('pgrun_tap_app', any_organization => true);
SELECT pgrun_test.as_role('pgrun_tap_app', format('SELECT job_id FROM pgrun.enqueue_job(%L, organization_id => %L)', 'app.work', :'org_b')) AS app_job \gset
SELECT is((SELECT organization_id FROM pgrun.jobs WHERE id = :'app_job'), :'org_b'::uuid, 'it enqueues for the organization it names');
SELECT is(pgrun_test.as_role('pgrun_tap_app', format('SELECT pgrun.get_job(%L)', :'b_job')),
    'RQ002 job.not_found', 'without naming it, it does not see B''s job: NULL never means every tenant');
SELECT is(pgrun_test.as_role('pgrun_tap_app', format('SELECT pgrun.get_job(%L, %L) ->> ''id''', :'b_job', :'org_b')),
    :'b_job', 'naming B, it does');
SELECT is(pgrun_test.as_role('pgrun_tap_app', format('SELECT count(*) FROM pgrun.list_jobs(organization_id => %L)', :'org_b')),
    '3', 'list_jobs naming B lists B''s three jobs');
SELECT is(pgrun_test.as_role('pgrun_tap_app', 'SELECT count(*) FROM pgrun.list_jobs() WHERE organization_id IS NOT NULL'),
    '0', 'list_jobs without organization_id lists none of any organization''s');
SELECT is(pgrun_test.as_role('pgrun_tap_app', format('SELECT count(*) FROM pgrun.list_workflow_runs(organization_id => %L)', :'org_a')),
    '1', 'list_workflow_runs naming A lists A''s run');
SELECT is(pgrun_test.as_role('pgrun_tap_app',
    $$SELECT created FROM pgrun.upsert_schedule('fan', '0 * * * *', 't.s', scope_kind => 'organization', scopes => ARRAY[gen_random_uuid()::text])$$),
    'true', 'it may declare a schedule scoped by organization');

-- TEST: bound to several organizations
SELECT pgrun.set_role_access('pgrun_tap_app', organization_ids => ARRAY[:'org_a', :'org_b']::uuid[]);
SELECT is(pgrun_test.as_role('pgrun_tap_app', $$SELECT pgrun.enqueue_job('multi.work')$$),
    'RQ003 access.organization_required', 'the new mapping holds at once: a write must name one of its organizations');
SELECT is(pgrun_test.as_role('pgrun_tap_app', format('SELECT pgrun.enqueue_job(%L, organization_id => %L)', 'x', gen_random_uuid())),
    '42501 access.organization_denied', 'naming an organization outside them is refused');
SELECT is(pgrun_test.as_role('pgrun_tap_app', $$SELECT pgrun.enqueue_jobs('[{"job_type": "m.a"}]')$$),
    'RQ003 access.organization_required', 'also for a bulk enqueue');
SELECT is(pgrun_test.as_role('pgrun_tap_app', format('SELECT (pgrun.enqueue_job(%L, organization_id => %L)).created', 'multi.work', :'org_a')),
    'true', 'naming A it enqueues');
SELECT is(pgrun_test.as_role('pgrun_tap_app', 'SELECT count(DISTINCT organization_id) FROM pgrun.list_jobs()'),
    '2', 'list_jobs without organization_id lists both of its organizations');
SELECT is(pgrun_test.as_role('pgrun_tap_app', format('SELECT pgrun.get_job(%L) ->> ''id''', :'b_job')),
    :'b_job', 'get_job finds a job of either');
SELECT is(pgrun_test.as_role('pgrun_tap_app', format('SELECT pgrun.get_job(%L)', :'plain_job')),
    'RQ002 job.not_found', 'but not work without an organization');
SELECT is(pgrun_test.as_role('pgrun_tap_app', $$SELECT pgrun.pause_schedule('nightly')$$),
    'RQ003 access.organization_required', 'naming a schedule needs its organization too');

-- TEST: an admin sees every organization, or the one it names
SELECT is(pgrun_test.as_role('pgrun_tap_admin', format('SELECT pgrun.get_job(%L) ->> ''id''', :'b_job')),
    :'b_job', 'an admin reads B''s job without naming B');
SELECT is(pgrun_test.as_role('pgrun_tap_admin', 'SELECT count(*) FROM pgrun.list_jobs()'),
    (SELECT count(*)::text FROM pgrun.jobs), 'list_jobs without organization_id lists every job');
SELECT is(pgrun_test.as_role('pgrun_tap_admin', format('SELECT count(*) FROM pgrun.list_jobs(organization_id => %L)', :'org_a')),
    '3', 'naming A, A''s only (its two, and the one the multi-organization role enqueued)');

-- TEST: removing the row
SELECT pgrun.remove_role_access('pgrun_tap_app');
SELECT is(pgrun_test.as_role('pgrun_tap_app', format('SELECT pgrun.get_job(%L)', :'b_job')),
    'RQ002 job.not_found', 'without its row the role is back to work without an organization');

SELECT * FROM finish();
ROLLBACK;
