-- Each malformed step is refused with its own code: keys, kinds, job templates, payloads.
BEGIN;
SELECT plan(16);

-- TEST: keys
SELECT throws_ok($$SELECT * FROM pgrun.enqueue_workflow('{"steps": [{"job_type": "t"}]}')$$,
    'RQ003', 'workflow.invalid_step_key', 'a step without a key');
SELECT throws_ok($$SELECT * FROM pgrun.enqueue_workflow('{"steps": [{"key": "", "job_type": "t"}]}')$$,
    'RQ003', 'workflow.invalid_step_key', 'an empty key');
SELECT throws_ok($$SELECT * FROM pgrun.enqueue_workflow('{"steps": [{"key": " a", "job_type": "t"}]}')$$,
    'RQ003', 'workflow.invalid_step_key', 'a key with surrounding blanks');
SELECT throws_ok($$SELECT * FROM pgrun.enqueue_workflow('{"steps": [{"key": 7, "job_type": "t"}]}')$$,
    'RQ003', 'workflow.invalid_step_key', 'a key that is not a string');
SELECT throws_ok(
    format($$SELECT * FROM pgrun.enqueue_workflow('{"steps": [{"key": "%s", "job_type": "t"}]}')$$, repeat('k', 129)),
    'RQ003', 'workflow.invalid_step_key', 'a key over 128 characters');
SELECT throws_ok(
    $$SELECT * FROM pgrun.enqueue_workflow('{"steps": [{"key": "a", "job_type": "t"}, {"key": "b", "job_type": "t"}, {"key": "a", "job_type": "t"}]}')$$,
    'RQ003', 'workflow.duplicate_step_key', 'a key used twice');

-- TEST: job steps and external steps
SELECT throws_ok($$SELECT * FROM pgrun.enqueue_workflow('{"steps": [{"key": "a"}]}')$$,
    'RQ003', 'workflow.missing_job_type', 'a job step without job_type');
SELECT throws_ok($$SELECT * FROM pgrun.enqueue_workflow('{"steps": [{"key": "a", "kind": "job", "job_type": null}]}')$$,
    'RQ003', 'workflow.missing_job_type', 'a job step with a null job_type');
SELECT throws_ok($$SELECT * FROM pgrun.enqueue_workflow('{"steps": [{"key": "a", "kind": "external", "job_type": "t"}]}')$$,
    'RQ003', 'workflow.external_step_with_job_template', 'an external step with a job_type');
SELECT throws_ok($$SELECT * FROM pgrun.enqueue_workflow('{"steps": [{"key": "a", "kind": "external", "payload": {}}]}')$$,
    'RQ003', 'workflow.external_step_with_job_template', 'an external step with a payload');
SELECT throws_ok($$SELECT * FROM pgrun.enqueue_workflow('{"steps": [{"key": "a", "kind": "gate"}]}')$$,
    'RQ003', 'workflow.invalid_step', 'an unknown kind');
SELECT throws_ok($$SELECT * FROM pgrun.enqueue_workflow('{"steps": [{"key": "a", "job_type": "t", "priorty": 1}]}')$$,
    'RQ003', 'workflow.invalid_step', 'an unknown step field');
SELECT throws_ok($$SELECT * FROM pgrun.enqueue_workflow('{"steps": [{"key": "a", "job_type": "t", "priority": 40000}]}')$$,
    'RQ003', 'workflow.invalid_step', 'a priority out of range');

-- TEST: payloads
SELECT throws_ok($$SELECT * FROM pgrun.enqueue_workflow('{"steps": [{"key": "a", "job_type": "t", "payload": [1]}]}')$$,
    'RQ003', 'workflow.invalid_step', 'a payload that is not an object');
SELECT throws_ok(
    format($$SELECT * FROM pgrun.enqueue_workflow('{"steps": [{"key": "a", "job_type": "t", "payload": {"x": "%s"}}]}')$$,
        repeat(md5('y'), 40000)),
    'RQ003', 'workflow.payload_too_large', 'a payload over 1 MiB');
SELECT throws_ok($$SELECT * FROM pgrun.enqueue_workflow('{"steps": [{"key": "a", "job_type": "t", "payload": {"dependencies": 1}}]}')$$,
    'RQ003', 'workflow.reserved_payload_key', 'a payload with the reserved key "dependencies"');

SELECT * FROM finish();
ROLLBACK;
