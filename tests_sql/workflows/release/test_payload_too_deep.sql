-- A released job's payload carries its prerequisites' outputs three levels down (payload,
-- "dependencies", the prerequisite's {"status", "output"}). When that payload would be nested
-- more than 100 levels (pgrun._json_depth_ok), no job is created: as for a payload over
-- 1 MiB, the step fails with error_code workflow.payload_too_deep and its edges resolve like
-- any failed step's. An output 97 levels deep still reaches its dependent.
BEGIN;
SELECT plan(12);

-- SETUP: outputs of n nested arrays (each within the 100-level rule for results)
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT pgrun_test.wf_enqueue('{"steps": [
    {"key": "a", "job_type": "t"},
    {"key": "b", "job_type": "t"},
    {"key": "fits", "job_type": "t", "depends_on": ["a"]},
    {"key": "join", "job_type": "t", "depends_on": ["a", "b"]},
    {"key": "after", "job_type": "t", "depends_on": ["join"]},
    {"key": "cleanup", "job_type": "t", "depends_on": [{"step": "join", "release_mode": "on_terminal"}]}
]}') AS run \gset
SELECT is(
    pgrun_test.wf_succeed(:'run', 'a', (repeat('[', 97) || repeat(']', 97))::jsonb),
    'succeeded',
    'a returns 97 levels'
);
SELECT is(
    pgrun_test.wf_succeed(:'run', 'b', (repeat('[', 98) || repeat(']', 98))::jsonb),
    'succeeded',
    'b returns 98 levels, within the rule for a result'
);

-- TEST: 97 + 3 = 100 levels: released
SELECT is(pgrun_test.wf_status(:'run', 'fits'), 'released', 'the step behind a alone is released');
SELECT is(
    (SELECT payload -> 'dependencies' -> 'a' -> 'output' FROM pgrun.jobs WHERE id = pgrun_test.wf_job(:'run', 'fits')),
    (repeat('[', 97) || repeat(']', 97))::jsonb,
    'its payload carries the output whole, 100 levels deep'
);

-- TEST: 98 + 3 = 101 levels: the step failed without a job
SELECT is(pgrun_test.wf_status(:'run', 'join'), 'failed', 'the step whose payload would be 101 levels deep failed');
SELECT is(pgrun_test.wf_job(:'run', 'join'), NULL::uuid, 'no job was created for it');
SELECT is(
    (SELECT error_code FROM pgrun.workflow_steps WHERE run_id = :'run' AND step_key = 'join'),
    'workflow.payload_too_deep',
    'its error_code says why'
);
SELECT ok(
    NOT EXISTS (SELECT FROM pgrun.jobs WHERE NOT pgrun._json_depth_ok(payload)),
    'no job holds a payload over 100 levels'
);

-- TEST: its edges resolved like a failed step's
SELECT is(pgrun_test.wf_status(:'run', 'after'), 'skipped', 'an on_success dependent is skipped');
SELECT is(pgrun_test.wf_status(:'run', 'cleanup'), 'released', 'an on_terminal dependent is released');
SELECT is(
    (SELECT open_step_count FROM pgrun.workflow_runs WHERE id = :'run'),
    2,
    'the run counts two open steps (fits, cleanup)'
);
SELECT is(
    (SELECT payload -> 'dependencies' -> 'join' FROM pgrun.jobs WHERE id = pgrun_test.wf_job(:'run', 'cleanup')),
    '{"status": "failed", "output": null}'::jsonb,
    'cleanup sees the step failed'
);

SELECT * FROM finish();
ROLLBACK;
