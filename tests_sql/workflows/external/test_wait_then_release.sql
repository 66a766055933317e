-- An external step waits for its prerequisites, then for complete_external_step, and
-- then releases its dependents like a finished job; failing it skips on_success dependents.
BEGIN;
SELECT plan(10);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT pgrun_test.wf_enqueue('{"steps": [
    {"key": "build", "job_type": "t"},
    {"key": "approve", "kind": "external", "depends_on": ["build"]},
    {"key": "deploy", "job_type": "t", "depends_on": ["approve"]},
    {"key": "notify", "job_type": "t", "depends_on": [{"step": "approve", "release_mode": "on_terminal"}]}
]}') AS run \gset
SELECT pgrun_test.wf_enqueue('{"steps": [
    {"key": "approve", "kind": "external"},
    {"key": "deploy", "job_type": "t", "depends_on": ["approve"]}
]}') AS rejected \gset

-- TEST: waits for its prerequisite
SELECT is(pgrun_test.wf_status(:'run', 'approve'), 'blocked', 'blocked while build runs');
SELECT pgrun_test.wf_succeed(:'run', 'build');
SELECT is(pgrun_test.wf_status(:'run', 'approve'), 'waiting_for_external', 'waiting once build succeeded');
SELECT is(pgrun_test.wf_job(:'run', 'approve'), NULL, 'an external step has no job');

-- TEST: then for the outside world
SELECT pgrun_test.advance_time(interval '5 minutes');
SELECT results_eq(
    format($$SELECT * FROM pgrun.complete_external_step(%L, 'approve', output => '{"by": "ops"}')$$, :'run'),
    $$VALUES ('succeeded', 'running', true)$$,
    'complete_external_step closes it'
);
SELECT results_eq(
    format($$SELECT status, output, finished_at FROM pgrun.workflow_steps WHERE run_id = %L AND step_key = 'approve'$$, :'run'),
    $$VALUES ('succeeded', '{"by": "ops"}'::jsonb, '2030-01-01 00:05:00+00'::timestamptz)$$,
    'the step succeeded with its output'
);
SELECT is(pgrun_test.wf_statuses(:'run'), 'approve:succeeded,build:succeeded,deploy:released,notify:released',
    'its dependents are released');

-- TEST: the same call again changes nothing
SELECT results_eq(
    format($$SELECT * FROM pgrun.complete_external_step(%L, 'approve', output => '{"by": "ops"}')$$, :'run'),
    $$VALUES ('succeeded', 'running', false)$$,
    'a repeated call reports changed = false'
);
SELECT is((SELECT count(*) FROM pgrun.jobs WHERE workflow_run_id = :'run'), 3::bigint, 'and releases nothing twice');

-- TEST: failing it
SELECT results_eq(
    format($$SELECT * FROM pgrun.complete_external_step(%L, 'approve', succeeded => false, output => '"no"')$$, :'rejected'),
    $$VALUES ('failed', 'failed', true)$$,
    'a rejected gate fails'
);
SELECT is(pgrun_test.wf_statuses(:'rejected'), 'approve:failed,deploy:skipped', 'and skips its on_success dependent');

SELECT * FROM finish();
ROLLBACK;
