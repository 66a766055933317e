-- A released job's payload carries its prerequisites' outputs. When that payload would be
-- over enqueue's 1 MiB limit, no job is created: the step fails with error_code
-- workflow.payload_too_large, its edges resolve like any failed step's, and the run's
-- open step count stays right (it finishes when its last step does).
BEGIN;
SELECT plan(14);

-- SETUP: two prerequisites return ~700 kB each (within the 1 MiB result cap); join needs both
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT pgrun_test.wf_enqueue('{"steps": [
    {"key": "a", "job_type": "t"},
    {"key": "b", "job_type": "t"},
    {"key": "join", "job_type": "t", "depends_on": ["a", "b"]},
    {"key": "after", "job_type": "t", "depends_on": ["join"]},
    {"key": "cleanup", "job_type": "t", "depends_on": [{"step": "join", "release_mode": "on_terminal"}]}
]}') AS run \gset
SELECT pgrun_test.wf_succeed(:'run', 'a', jsonb_build_object('blob', repeat('a', 700000)));
SELECT count(*) AS jobs_before FROM pgrun.jobs WHERE workflow_run_id = :'run' \gset
SELECT is(
    pgrun_test.wf_succeed(:'run', 'b', jsonb_build_object('blob', repeat('b', 700000))),
    'succeeded',
    'the second prerequisite completes'
);

-- TEST: the oversized step failed without a job
SELECT is(pgrun_test.wf_status(:'run', 'join'), 'failed', 'the step whose payload would be 1.4 MB failed');
SELECT is(pgrun_test.wf_job(:'run', 'join'), NULL::uuid, 'no job was created for it');
SELECT is(
    (SELECT error_code FROM pgrun.workflow_steps WHERE run_id = :'run' AND step_key = 'join'),
    'workflow.payload_too_large',
    'its error_code says why'
);
SELECT is(
    (SELECT s ->> 'error_code' FROM jsonb_array_elements(pgrun.get_workflow_run(:'run') -> 'steps') AS s
     WHERE s ->> 'key' = 'join'),
    'workflow.payload_too_large',
    'get_workflow_run shows it'
);
SELECT ok(
    NOT EXISTS (SELECT FROM pgrun.jobs WHERE octet_length(payload::text) > 1048576),
    'no job holds a payload over 1 MiB'
);

-- TEST: its edges resolved like a failed step's
SELECT is(pgrun_test.wf_status(:'run', 'after'), 'skipped', 'an on_success dependent is skipped');
SELECT is(pgrun_test.wf_status(:'run', 'cleanup'), 'released', 'an on_terminal dependent is released');
SELECT is(
    (SELECT open_step_count FROM pgrun.workflow_runs WHERE id = :'run'),
    1,
    'the run counts one open step (cleanup)'
);
SELECT is(
    (SELECT payload -> 'dependencies' -> 'join' FROM pgrun.jobs WHERE id = pgrun_test.wf_job(:'run', 'cleanup')),
    '{"status": "failed", "output": null}'::jsonb,
    'cleanup sees the step failed'
);
SELECT is(pgrun_test.wf_succeed(:'run', 'cleanup'), 'succeeded', 'cleanup runs');
SELECT is(pgrun_test.wf_run_status(:'run'), 'failed', 'the run then finishes failed');

-- TEST: append: a new step behind the same two outputs fails at once, the counts stay right
SELECT pgrun_test.wf_enqueue('{"steps": [
    {"key": "a", "job_type": "t"}, {"key": "b", "job_type": "t"}, {"key": "hold", "kind": "external"}
]}') AS run2 \gset
SELECT pgrun_test.wf_succeed(:'run2', 'a', jsonb_build_object('blob', repeat('a', 700000)));
SELECT pgrun_test.wf_succeed(:'run2', 'b', jsonb_build_object('blob', repeat('b', 700000)));
SELECT * FROM pgrun.append_workflow_steps(:'run2', NULL, '[{"key": "late", "job_type": "t", "depends_on": ["a", "b"]}]');
SELECT is(pgrun_test.wf_statuses(:'run2'), 'a:succeeded,b:succeeded,hold:waiting_for_external,late:failed', 'the appended step failed at once');
SELECT results_eq(
    format('SELECT status, open_step_count FROM pgrun.workflow_runs WHERE id = %L', :'run2'),
    $$VALUES ('running', 1)$$,
    'the run still waits for its external step, and only for it'
);

SELECT * FROM finish();
ROLLBACK;
