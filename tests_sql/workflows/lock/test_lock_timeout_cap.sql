-- The shared run lock of the release path caps lock_timeout at 5 s for its wait
-- (pgrun._cap_lock_timeout, tests_sql/util/test_cap_lock_timeout.sql), and the caller's
-- value is back afterwards.
BEGIN;
SELECT plan(3);

-- TEST: the lock restores the caller's value
SET LOCAL lock_timeout = 0;
SELECT pgrun._workflow_lock_runs(ARRAY[gen_random_uuid(), gen_random_uuid()], 'shared');
SELECT is(current_setting('lock_timeout'), '0', 'unlimited again after the shared lock');
SET LOCAL lock_timeout = '250ms';
SELECT pgrun._workflow_lock_runs(ARRAY[gen_random_uuid()], 'shared');
SELECT is(current_setting('lock_timeout'), '250ms', 'a stricter value is untouched');

-- TEST: through a job completion
SET LOCAL lock_timeout = 0;
SELECT pgrun_test.wf_enqueue('{"steps": [{"key": "a", "job_type": "t"}, {"key": "b", "job_type": "t", "depends_on": ["a"]}]}') AS run \gset
SELECT pgrun_test.wf_succeed(:'run', 'a');
SELECT is(current_setting('lock_timeout'), '0', 'a completion that released a step leaves lock_timeout as it was');

SELECT * FROM finish();
ROLLBACK;
