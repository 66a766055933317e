-- With organization_id, purge_finished_jobs purges only that organization's jobs.
BEGIN;
SELECT plan(2);

-- SETUP: one old cancelled job per organization, one without
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT gen_random_uuid() AS org_a, gen_random_uuid() AS org_b \gset
SELECT pgrun_test.make_job(p_organization_id => :'org_a') AS job_a \gset
SELECT pgrun_test.make_job(p_organization_id => :'org_b') AS job_b \gset
SELECT pgrun_test.make_job() AS job_none \gset
SELECT pgrun.cancel_job(id) FROM unnest(ARRAY[:'job_a', :'job_b', :'job_none']::uuid[]) AS id;
SELECT pgrun_test.freeze_time('2030-02-01 00:00:00+00');

-- TEST
SELECT is(pgrun.purge_finished_jobs(interval '1 day', organization_id => :'org_a'), 1::bigint, 'one job of organization A');
SELECT set_eq(
    'SELECT id FROM pgrun.jobs',
    ARRAY[:'job_b'::uuid, :'job_none'::uuid],
    'the other organization''s job and the unowned one remain'
);

SELECT * FROM finish();
ROLLBACK;
