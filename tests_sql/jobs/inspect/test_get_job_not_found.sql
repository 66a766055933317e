-- get_job raises job.not_found for a missing id and for another organization's job.
BEGIN;
SELECT plan(6);

-- SETUP
SELECT pgrun_test.put_job(p_organization_id => '11111111-1111-1111-1111-111111111111') AS job \gset

-- TEST: missing
SELECT throws_ok(
    $$SELECT pgrun.get_job('01890000-0000-7000-8000-000000000000')$$,
    'RQ002', 'job.not_found', 'an id nobody has'
);
SELECT throws_ok($$SELECT pgrun.get_job(NULL)$$, 'RQ002', 'job.not_found', 'a NULL id');

-- TEST: tenant scoping
SELECT throws_ok(
    format('SELECT pgrun.get_job(%L, %L)', :'job', '22222222-2222-2222-2222-222222222222'),
    'RQ002', 'job.not_found', 'another organization''s job is not found'
);
SELECT is(
    pgrun.get_job(:'job', '11111111-1111-1111-1111-111111111111') ->> 'id',
    :'job'::text,
    'its own organization sees it'
);
SELECT is(pgrun.get_job(:'job') ->> 'id', :'job'::text, 'an unscoped (operator) call sees it');

-- TEST: a job without organization is invisible to scoped calls
SELECT pgrun_test.put_job() AS orphan \gset
SELECT throws_ok(
    format('SELECT pgrun.get_job(%L, %L)', :'orphan', '11111111-1111-1111-1111-111111111111'),
    'RQ002', 'job.not_found', 'a job of no organization is not found by a scoped call'
);

SELECT * FROM finish();
ROLLBACK;
