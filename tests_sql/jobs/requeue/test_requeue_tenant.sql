-- With organization_id, requeue_job sees only that organization's jobs.
BEGIN;
SELECT plan(5);

-- SETUP: a dead job of organization A
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT gen_random_uuid() AS org_a, gen_random_uuid() AS org_b \gset
SELECT job_id AS job, lease_token AS token FROM pgrun_test.running_job(p_organization_id => :'org_a') \gset
SELECT * FROM pgrun.fail_job(:'job', :'token', retryable => false);

-- TEST: another tenant
SELECT throws_ok(
    format('SELECT pgrun.requeue_job(%L, organization_id => %L)', :'job', :'org_b'),
    'RQ002', 'job.not_found', 'another organization''s job is not found'
);
SELECT is((SELECT status FROM pgrun.jobs WHERE id = :'job'), 'dead', 'and stays dead');

-- TEST: missing and NULL
SELECT throws_ok(
    format('SELECT pgrun.requeue_job(%L)', gen_random_uuid()),
    'RQ002', 'job.not_found', 'an unknown job is not found'
);
SELECT throws_ok(
    'SELECT pgrun.requeue_job(NULL)',
    'RQ003', 'job.invalid_argument', 'a NULL job_id is invalid'
);

-- TEST: the owner
SELECT pgrun.requeue_job(:'job', organization_id => :'org_a');
SELECT is((SELECT status FROM pgrun.jobs WHERE id = :'job'), 'queued', 'the owning organization can requeue it');

SELECT * FROM finish();
ROLLBACK;
