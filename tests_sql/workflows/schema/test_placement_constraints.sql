-- The step placement columns (sql/0014) hold their rules against direct writes too.
BEGIN;
SELECT plan(7);

-- SETUP
SELECT pgrun_test.wf_enqueue('{"steps": [{"key": "a", "job_type": "t"}, {"key": "g", "kind": "external"}]}') AS run \gset

-- TEST
SELECT throws_ok(format($$UPDATE pgrun.workflow_steps SET delay = '5 s', run_at = now() WHERE run_id = %L AND step_key = 'a'$$, :'run'),
    '23514', NULL, 'not both a delay and a run_at');
SELECT throws_ok(format($$UPDATE pgrun.workflow_steps SET delay = '-1 s' WHERE run_id = %L AND step_key = 'a'$$, :'run'),
    '23514', NULL, 'no negative delay');
SELECT throws_ok(format($$UPDATE pgrun.workflow_steps SET delay = '101 years' WHERE run_id = %L AND step_key = 'a'$$, :'run'),
    '23514', NULL, 'no delay over 100 years');
SELECT throws_ok(format($$UPDATE pgrun.workflow_steps SET run_at = 'infinity' WHERE run_id = %L AND step_key = 'a'$$, :'run'),
    '23514', NULL, 'a finite run_at');
SELECT throws_ok(format($$UPDATE pgrun.workflow_steps SET organization_id = '00000000-0000-0000-0000-000000000000' WHERE run_id = %L AND step_key = 'a'$$, :'run'),
    '23514', NULL, 'not the nil organization');
SELECT throws_ok(format($$UPDATE pgrun.workflow_steps SET organization_id = gen_random_uuid() WHERE run_id = %L AND step_key = 'g'$$, :'run'),
    '23514', NULL, 'an external step has no organization of its own');
SELECT lives_ok(format($$UPDATE pgrun.workflow_steps SET organization_id = gen_random_uuid(), delay = '100 years' WHERE run_id = %L AND step_key = 'a'$$, :'run'),
    'a job step may have both an organization and a delay');

SELECT * FROM finish();
ROLLBACK;
