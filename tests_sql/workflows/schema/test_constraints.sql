-- The workflow tables' CHECK constraints hold the invariants even against direct writes.
BEGIN;
SELECT plan(16);

-- SETUP
SELECT pgrun_test.wf_enqueue('{"steps": [{"key": "a", "job_type": "t"}, {"key": "g", "kind": "external"},
    {"key": "b", "job_type": "t", "depends_on": ["a"]}]}') AS run \gset

-- TEST: counters
SELECT throws_ok(format($$UPDATE pgrun.workflow_steps SET dependency_count_pending = 2 WHERE run_id = %L AND step_key = 'b'$$, :'run'),
    '23514', NULL, 'pending never exceeds total');
SELECT throws_ok(format($$UPDATE pgrun.workflow_steps SET dependency_count_pending = -1 WHERE run_id = %L AND step_key = 'b'$$, :'run'),
    '23514', NULL, 'pending never drops below zero');

-- TEST: status and its companions
SELECT throws_ok(format($$UPDATE pgrun.workflow_steps SET status = 'released', released_at = now(), job_id = gen_random_uuid() WHERE run_id = %L AND step_key = 'b'$$, :'run'),
    '23514', NULL, 'a step with pending edges cannot be released');
SELECT throws_ok(format($$UPDATE pgrun.workflow_steps SET output = '1' WHERE run_id = %L AND step_key = 'a'$$, :'run'),
    '23514', NULL, 'output only on a finished step');
SELECT throws_ok(format($$UPDATE pgrun.workflow_steps SET job_id = NULL WHERE run_id = %L AND step_key = 'a'$$, :'run'),
    '23514', NULL, 'a released job step has a job');
SELECT throws_ok(format($$UPDATE pgrun.workflow_steps SET job_id = gen_random_uuid() WHERE run_id = %L AND step_key = 'g'$$, :'run'),
    '23514', NULL, 'an external step never has a job');
SELECT throws_ok(format($$UPDATE pgrun.workflow_steps SET job_id = gen_random_uuid() WHERE run_id = %L AND step_key = 'b'$$, :'run'),
    '23514', NULL, 'a blocked step has no job');
SELECT throws_ok(format($$UPDATE pgrun.workflow_steps SET error_code = 'workflow.payload_too_large' WHERE run_id = %L AND step_key = 'a'$$, :'run'),
    '23514', NULL, 'a step with a job has no error_code');
SELECT throws_ok(format($$UPDATE pgrun.workflow_steps SET status = 'failed', job_id = NULL, finished_at = now() WHERE run_id = %L AND step_key = 'a'$$, :'run'),
    '23514', NULL, 'a job step failed without a job needs an error_code');
SELECT lives_ok(format($$UPDATE pgrun.workflow_steps SET status = 'failed', job_id = NULL, finished_at = now(), error_code = 'workflow.payload_too_large' WHERE run_id = %L AND step_key = 'a'$$, :'run'),
    'a job step that failed at its release has an error_code and no job');
SELECT throws_ok(format($$UPDATE pgrun.workflow_steps SET payload = '{}' WHERE run_id = %L AND step_key = 'g'$$, :'run'),
    '23514', NULL, 'an external step has no job template');
SELECT throws_ok(format($$UPDATE pgrun.workflow_steps SET status = 'succeeded' WHERE run_id = %L AND step_key = 'b'$$, :'run'),
    '23514', NULL, 'a finished step has finished_at (and a job step that succeeded a job)');
SELECT throws_ok(format($$UPDATE pgrun.workflow_steps SET status = 'waiting_for_external' WHERE run_id = %L AND step_key = 'a'$$, :'run'),
    '23514', NULL, 'only external steps wait for the outside');

-- TEST: runs and edges
SELECT throws_ok(format($$UPDATE pgrun.workflow_runs SET status = 'succeeded', finished_at = now() WHERE id = %L$$, :'run'),
    '23514', NULL, 'a finished run has no open steps');
SELECT throws_ok(format($$UPDATE pgrun.workflow_runs SET open_step_count = 0 WHERE id = %L$$, :'run'),
    '23514', NULL, 'a running run has open steps');
SELECT throws_ok(format($$INSERT INTO pgrun.workflow_step_dependencies (run_id, step_key, depends_on_key) VALUES (%L, 'b', 'b')$$, :'run'),
    '23514', NULL, 'no self-edges');

SELECT * FROM finish();
ROLLBACK;
