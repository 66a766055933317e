-- count_jobs: how many jobs are in each status, without paging through list_jobs. One row per
-- status of the jobs table's CHECK, in lifecycle order, zeros included; a status names one row;
-- the filters are list_jobs' and combine with AND.
BEGIN;
SELECT plan(12);

-- SETUP
SELECT pgrun_test.put_job('mail.send', 'mail', 'queued');
SELECT pgrun_test.put_job('mail.send', 'mail', 'queued');
SELECT pgrun_test.put_job('mail.send', 'mail', 'running');
SELECT pgrun_test.put_job('mail.send', 'mail', 'succeeded');
SELECT pgrun_test.put_job('report.build', 'reports', 'queued', p_organization_id => '11111111-1111-1111-1111-111111111111');
SELECT pgrun_test.put_job('report.build', 'reports', 'succeeded', p_organization_id => '11111111-1111-1111-1111-111111111111');
SELECT pgrun_test.put_job('report.build', 'reports', 'succeeded', p_workflow_run_id => '01890000-0000-7000-8000-0000000000aa');
SELECT pgrun_test.put_job('report.build', 'reports', 'dead', p_workflow_run_id => '01890000-0000-7000-8000-0000000000aa');

-- TEST: every status, in order, zeros included
SELECT results_eq(
    $$SELECT status, jobs FROM pgrun.count_jobs()$$,
    $$VALUES ('queued'::text, 3::bigint), ('running', 1), ('succeeded', 3), ('dead', 1), ('cancelled', 0)$$,
    'one row per status in lifecycle order; a status without jobs counts 0'
);
SELECT is(
    (SELECT array_agg(status) FROM pgrun.count_jobs()),
    (SELECT (regexp_match(pg_get_constraintdef(c.oid), '''(\{[a-z_,]+\})''::text\[\]'))[1]::text[]
     FROM pg_constraint AS c
     WHERE c.conrelid = 'pgrun.jobs'::regclass AND c.conname = 'jobs_status_check'),
    'the statuses are exactly those of the jobs table''s CHECK, in its order'
);

-- TEST: one status
SELECT results_eq(
    $$SELECT status, jobs FROM pgrun.count_jobs(status => 'succeeded')$$,
    $$VALUES ('succeeded'::text, 3::bigint)$$,
    'a status names its one row'
);
SELECT results_eq(
    $$SELECT status, jobs FROM pgrun.count_jobs('cancelled')$$,
    $$VALUES ('cancelled'::text, 0::bigint)$$,
    'also when it has no jobs'
);

-- TEST: filters, one at a time and combined
SELECT results_eq(
    $$SELECT status, jobs FROM pgrun.count_jobs(job_type => 'report.build') WHERE jobs > 0$$,
    $$VALUES ('queued'::text, 1::bigint), ('succeeded', 2), ('dead', 1)$$,
    'by job type'
);
SELECT results_eq(
    $$SELECT status, jobs FROM pgrun.count_jobs(queue => 'mail') WHERE jobs > 0$$,
    $$VALUES ('queued'::text, 2::bigint), ('running', 1), ('succeeded', 1)$$,
    'by queue'
);
SELECT results_eq(
    $$SELECT status, jobs FROM pgrun.count_jobs(organization_id => '11111111-1111-1111-1111-111111111111') WHERE jobs > 0$$,
    $$VALUES ('queued'::text, 1::bigint), ('succeeded', 1)$$,
    'by organization'
);
SELECT results_eq(
    $$SELECT status, jobs FROM pgrun.count_jobs(workflow_run_id => '01890000-0000-7000-8000-0000000000aa') WHERE jobs > 0$$,
    $$VALUES ('succeeded'::text, 1::bigint), ('dead', 1)$$,
    'by workflow run'
);
SELECT results_eq(
    $$SELECT status, jobs FROM pgrun.count_jobs('succeeded', 'report.build', 'reports', NULL, '01890000-0000-7000-8000-0000000000aa')$$,
    $$VALUES ('succeeded'::text, 1::bigint)$$,
    'filters combine with AND'
);
SELECT results_eq(
    $$SELECT status, jobs FROM pgrun.count_jobs(job_type => 'no.such.type')$$,
    $$VALUES ('queued'::text, 0::bigint), ('running', 0), ('succeeded', 0), ('dead', 0), ('cancelled', 0)$$,
    'no matching job: every status, each 0'
);

-- TEST: the same jobs list_jobs lists
SELECT is(
    (SELECT array_agg(jobs ORDER BY status) FROM pgrun.count_jobs(queue => 'reports')),
    (SELECT array_agg(n ORDER BY s) FROM (
        SELECT s, (SELECT count(*) FROM pgrun.list_jobs(status => s, queue => 'reports', max_rows => 1000)) AS n
        FROM unnest(ARRAY['queued', 'running', 'succeeded', 'dead', 'cancelled']) AS s) AS l),
    'each count is the number of rows list_jobs lists for that status'
);

-- TEST: read-only
SELECT is(
    (SELECT provolatile FROM pg_proc WHERE oid = 'pgrun.count_jobs(text, text, text, uuid, uuid)'::regprocedure),
    's',
    'count_jobs is STABLE: it reads, never writes'
);

SELECT * FROM finish();
ROLLBACK;
