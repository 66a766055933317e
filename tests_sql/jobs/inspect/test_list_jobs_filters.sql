-- list_jobs filters by status, job type, queue, organization and workflow run (NULL = any).
BEGIN;
SELECT plan(7);

-- SETUP
SELECT pgrun_test.put_job('mail.send', 'mail', 'queued') AS q1 \gset
SELECT pgrun_test.put_job('mail.send', 'mail', 'running') AS r1 \gset
SELECT pgrun_test.put_job('report.build', 'reports', 'succeeded', p_organization_id => '11111111-1111-1111-1111-111111111111') AS s1 \gset
SELECT pgrun_test.put_job('report.build', 'reports', 'dead', p_workflow_run_id => '01890000-0000-7000-8000-0000000000aa') AS d1 \gset
SELECT pgrun_test.put_job('mail.send', 'reports', 'cancelled', p_organization_id => '11111111-1111-1111-1111-111111111111') AS c1 \gset

-- TEST: one filter at a time
SELECT results_eq($$SELECT id FROM pgrun.list_jobs(status => 'running')$$, format('VALUES (%L::uuid)', :'r1'), 'by status');
SELECT results_eq(
    $$SELECT id FROM pgrun.list_jobs(job_type => 'report.build')$$,
    format('VALUES (%L::uuid), (%L::uuid)', :'s1', :'d1'),
    'by job type'
);
SELECT results_eq(
    $$SELECT id FROM pgrun.list_jobs(queue => 'mail')$$,
    format('VALUES (%L::uuid), (%L::uuid)', :'q1', :'r1'),
    'by queue'
);
SELECT results_eq(
    $$SELECT id FROM pgrun.list_jobs(organization_id => '11111111-1111-1111-1111-111111111111')$$,
    format('VALUES (%L::uuid), (%L::uuid)', :'s1', :'c1'),
    'by organization (tenant scope)'
);
SELECT results_eq(
    $$SELECT id FROM pgrun.list_jobs(workflow_run_id => '01890000-0000-7000-8000-0000000000aa')$$,
    format('VALUES (%L::uuid)', :'d1'),
    'by workflow run'
);

-- TEST: filters combine
SELECT results_eq(
    $$SELECT id FROM pgrun.list_jobs(job_type => 'mail.send', queue => 'reports', organization_id => '11111111-1111-1111-1111-111111111111')$$,
    format('VALUES (%L::uuid)', :'c1'),
    'filters combine with AND'
);

-- TEST: the columns
SELECT results_eq(
    format('SELECT status, worker_id, finished_at IS NOT NULL FROM pgrun.list_jobs() WHERE id IN (%L, %L) ORDER BY id', :'r1', :'s1'),
    $$VALUES ('running'::text, 'worker-1'::text, false), ('succeeded', NULL, true)$$,
    'rows carry status, lease and outcome columns'
);

SELECT * FROM finish();
ROLLBACK;
