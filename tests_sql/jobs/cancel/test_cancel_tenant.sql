-- With organization_id, cancel_job sees only that organization's jobs: another tenant's
-- job is job.not_found, exactly like a missing one, and stays untouched.
BEGIN;
SELECT plan(6);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT gen_random_uuid() AS org_a, gen_random_uuid() AS org_b \gset
SELECT pgrun_test.make_job(p_organization_id => :'org_a') AS job \gset

-- TEST: another tenant
SELECT throws_ok(
    format('SELECT pgrun.cancel_job(%L, organization_id => %L)', :'job', :'org_b'),
    'RQ002', 'job.not_found', 'another organization''s job is not found'
);
SELECT is((SELECT status FROM pgrun.jobs WHERE id = :'job'), 'queued', 'and is not cancelled');

-- TEST: a missing job, and a NULL id
SELECT throws_ok(
    format('SELECT pgrun.cancel_job(%L)', gen_random_uuid()),
    'RQ002', 'job.not_found', 'an unknown job is not found'
);
SELECT throws_ok(
    'SELECT pgrun.cancel_job(NULL)',
    'RQ003', 'job.invalid_argument', 'a NULL job_id is invalid'
);

-- TEST: the owner, and an unscoped call
SELECT is(pgrun.cancel_job(:'job', organization_id => :'org_a'), 'cancelled', 'the owning organization can cancel it');
SELECT pgrun_test.make_job(p_organization_id => :'org_b') AS job_b \gset
SELECT is(pgrun.cancel_job(:'job_b'), 'cancelled', 'without organization_id every job is visible');

SELECT * FROM finish();
ROLLBACK;
