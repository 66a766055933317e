-- A released job's payload is its template payload plus "dependencies": each
-- prerequisite's status and output, keyed by step key.
BEGIN;
SELECT plan(4);

-- SETUP
SELECT pgrun_test.wf_enqueue('{"steps": [
    {"key": "fetch", "job_type": "t"},
    {"key": "flaky", "job_type": "t"},
    {"key": "approve", "kind": "external"},
    {"key": "report", "job_type": "t", "payload": {"format": "pdf"},
     "depends_on": ["fetch", "approve", {"step": "flaky", "release_mode": "on_terminal"}]}
]}') AS run \gset
SELECT pgrun_test.wf_succeed(:'run', 'fetch', '{"rows": [1, 2, 3]}');
SELECT pgrun_test.wf_fail(:'run', 'flaky');
SELECT * FROM pgrun.complete_external_step(:'run', 'approve', output => '"yes"');

-- TEST: the payload
SELECT is(pgrun_test.wf_status(:'run', 'report'), 'released', 'the dependent is released');
SELECT is(
    (SELECT payload FROM pgrun.jobs WHERE id = pgrun_test.wf_job(:'run', 'report')),
    '{"format": "pdf", "dependencies": {
        "fetch": {"status": "succeeded", "output": {"rows": [1, 2, 3]}},
        "flaky": {"status": "failed", "output": null},
        "approve": {"status": "succeeded", "output": "yes"}}}'::jsonb,
    'template payload plus each prerequisite''s status and output'
);

-- TEST: outputs are stored on the steps
SELECT is(
    (SELECT output FROM pgrun.workflow_steps WHERE run_id = :'run' AND step_key = 'fetch'),
    '{"rows": [1, 2, 3]}'::jsonb,
    'a job step''s output is its job''s result'
);
SELECT is(
    (SELECT payload FROM pgrun.workflow_steps WHERE run_id = :'run' AND step_key = 'report'),
    '{"format": "pdf"}'::jsonb,
    'the template itself is unchanged'
);

SELECT * FROM finish();
ROLLBACK;
