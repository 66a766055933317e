-- The order of requeue_job's checks for a workflow step's job: arguments, then scope
-- (another organization's job is job.not_found, whatever it is), then workflow membership
-- (job.in_workflow_run whatever the job's status: a queued, running or succeeded step job is
-- refused with the code that stays true once it finishes), then status.
BEGIN;
SELECT plan(10);

-- SETUP: a run of organization A with a succeeded, a running, a queued and a dead step
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT gen_random_uuid() AS org_a, gen_random_uuid() AS org_b \gset
SELECT pgrun_test.wf_enqueue(jsonb_build_object('organization_id', :'org_a', 'steps', '[
    {"key": "done", "job_type": "t"},
    {"key": "running", "job_type": "t"},
    {"key": "queued", "job_type": "t"},
    {"key": "dead", "job_type": "t"}
]'::jsonb)) AS run \gset
SELECT pgrun_test.wf_succeed(:'run', 'done');
SELECT pgrun_test.wf_start(:'run', 'running');
SELECT pgrun_test.wf_fail(:'run', 'dead');
SELECT pgrun_test.fingerprint() AS before \gset

-- TEST: arguments first
SELECT throws_ok(
    format('SELECT pgrun.requeue_job(%L, run_at => %L)', pgrun_test.wf_job(:'run', 'dead'), 'infinity'),
    'RQ003', 'job.invalid_schedule', 'a bad run_at is refused before the job is looked at'
);

-- TEST: scope before membership
SELECT throws_ok(
    format('SELECT pgrun.requeue_job(%L, organization_id => %L)', pgrun_test.wf_job(:'run', 'dead'), :'org_b'),
    'RQ002', 'job.not_found', 'another organization''s step job is not found (no hint that it is in a run)'
);

-- TEST: membership before status
SELECT throws_ok(
    format('SELECT pgrun.requeue_job(%L, organization_id => %L)', pgrun_test.wf_job(:'run', 'dead'), :'org_a'),
    'RQ001', 'job.in_workflow_run', 'the owner is refused too: a dead step job'
);
SELECT throws_ok(
    format('SELECT pgrun.requeue_job(%L)', pgrun_test.wf_job(:'run', 'queued')),
    'RQ001', 'job.in_workflow_run', 'a queued step job'
);
SELECT throws_ok(
    format('SELECT pgrun.requeue_job(%L)', pgrun_test.wf_job(:'run', 'running')),
    'RQ001', 'job.in_workflow_run', 'a running step job'
);
SELECT throws_ok(
    format('SELECT pgrun.requeue_job(%L)', pgrun_test.wf_job(:'run', 'done')),
    'RQ001', 'job.in_workflow_run', 'a succeeded step job'
);
SELECT is(
    pgrun_test.error_detail(format('SELECT pgrun.requeue_job(%L)', pgrun_test.wf_job(:'run', 'running'))),
    format('job %s (running) is the job of step ''running'' of workflow run %s (running); '
        'a workflow step''s job is not requeued', pgrun_test.wf_job(:'run', 'running'), :'run'),
    'the DETAIL says the job''s own status'
);

-- TEST: nothing written
SELECT is(pgrun_test.fingerprint(), :'before', 'no refusal wrote anything');
SELECT is(
    pgrun_test.wf_statuses(:'run'), 'dead:failed,done:succeeded,queued:released,running:released',
    'the steps are as they were'
);
SELECT is(
    (SELECT string_agg(status, ',' ORDER BY workflow_step_key) FROM pgrun.jobs WHERE workflow_run_id = :'run'),
    'dead,succeeded,queued,running',
    'the jobs are as they were'
);

SELECT * FROM finish();
ROLLBACK;
