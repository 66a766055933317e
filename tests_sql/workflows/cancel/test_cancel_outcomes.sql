-- cancel_workflow_run cancels every open step and queued job, asks running jobs to stop
-- (as cancel_job does), leaves finished steps alone and marks the run cancelled.
BEGIN;
SELECT plan(13);

-- SETUP: done succeeded, running is claimed, queued is queued, gate waits, later is blocked
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT pgrun_test.wf_enqueue('{"steps": [
    {"key": "done", "job_type": "t"},
    {"key": "running", "job_type": "t"},
    {"key": "queued", "job_type": "t"},
    {"key": "gate", "kind": "external"},
    {"key": "later", "job_type": "t", "depends_on": ["done", "running"]}
]}') AS run \gset
SELECT pgrun_test.wf_succeed(:'run', 'done', '{"d": 1}');
SELECT pgrun_test.wf_start(:'run', 'running') AS token \gset
SELECT pgrun_test.advance_time(interval '10 seconds');

-- TEST: the cancel
SELECT results_eq(
    format($$SELECT * FROM pgrun.cancel_workflow_run(%L, 'user asked')$$, :'run'),
    $$VALUES ('cancelled', true, 4, 1, 1)$$,
    'four open steps cancelled, one queued job cancelled, one running job asked to stop'
);
SELECT results_eq(
    format('SELECT status, cancel_reason, finished_at FROM pgrun.workflow_runs WHERE id = %L', :'run'),
    $$VALUES ('cancelled', 'user asked', '2030-01-01 00:00:10+00'::timestamptz)$$,
    'the run is cancelled with the reason'
);
SELECT is(pgrun_test.wf_statuses(:'run'), 'done:succeeded,gate:cancelled,later:cancelled,queued:cancelled,running:cancelled',
    'open steps are cancelled, the finished one keeps its outcome');
SELECT is(
    (SELECT output FROM pgrun.workflow_steps WHERE run_id = :'run' AND step_key = 'done'),
    '{"d": 1}'::jsonb, 'a finished step keeps its output');

-- TEST: the jobs
SELECT results_eq(
    format($$SELECT status, cancel_reason, finished_at IS NOT NULL FROM pgrun.jobs WHERE id = %L$$, pgrun_test.wf_job(:'run', 'queued')),
    $$VALUES ('cancelled', 'user asked', true)$$,
    'the queued job is cancelled'
);
SELECT results_eq(
    format($$SELECT status, lease_token, cancel_requested_at, cancel_reason FROM pgrun.jobs WHERE id = %L$$, pgrun_test.wf_job(:'run', 'running')),
    format($$VALUES ('running', %L::uuid, '2030-01-01 00:00:10+00'::timestamptz, 'user asked')$$, :'token'),
    'the running job keeps its lease and gets a cancel request'
);
SELECT results_eq(
    format($$SELECT e.event, e.from_status, e.to_status, e.detail ->> 'reason' FROM pgrun.job_events AS e
             WHERE e.job_id IN (%L, %L) AND e.event IN ('cancelled', 'cancel_requested') ORDER BY e.event$$,
        pgrun_test.wf_job(:'run', 'queued'), pgrun_test.wf_job(:'run', 'running')),
    $$VALUES ('cancel_requested', 'running', 'running', 'user asked'), ('cancelled', 'queued', 'cancelled', 'user asked')$$,
    'one event per job, as cancel_job writes them'
);
SELECT is(
    (SELECT cancel_requested FROM pgrun.heartbeat_jobs('worker-1', 30, ARRAY[pgrun_test.wf_job(:'run', 'running')], ARRAY[:'token'::uuid])),
    true,
    'the worker learns of the request at its next heartbeat'
);

-- TEST: again
SELECT results_eq(
    format($$SELECT * FROM pgrun.cancel_workflow_run(%L, 'again')$$, :'run'),
    $$VALUES ('cancelled', false, 0, 0, 0)$$,
    'cancelling a cancelled run changes nothing'
);

-- TEST: refusals
SELECT pgrun_test.wf_enqueue('{"steps": [{"key": "a", "job_type": "t"}]}') AS done_run \gset
SELECT pgrun_test.wf_succeed(:'done_run', 'a');
SELECT throws_ok(format($$SELECT * FROM pgrun.cancel_workflow_run(%L)$$, :'done_run'),
    'RQ001', 'workflow.run_finished', 'a succeeded run cannot be cancelled');
SELECT throws_ok($$SELECT * FROM pgrun.cancel_workflow_run(gen_random_uuid())$$,
    'RQ002', 'workflow.run_not_found', 'an unknown run');
SELECT throws_ok(format($$SELECT * FROM pgrun.cancel_workflow_run(%L, organization_id => '22222222-2222-2222-2222-222222222222')$$, :'done_run'),
    'RQ002', 'workflow.run_not_found', 'another organization''s run');
SELECT throws_ok($$SELECT * FROM pgrun.cancel_workflow_run(NULL)$$,
    'RQ003', 'workflow.invalid_argument', 'a NULL run id');

SELECT * FROM finish();
ROLLBACK;
