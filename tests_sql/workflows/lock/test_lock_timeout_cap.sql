-- The shared run lock of the release path caps lock_timeout at 5 s for its wait: a
-- stricter caller value is kept, an unlimited or longer one is capped, and the caller's
-- value is back afterwards.
BEGIN;
SELECT plan(9);

-- TEST: the cap itself
SET LOCAL lock_timeout = '100ms';
SELECT is(pgrun._workflow_cap_lock_timeout(), '100ms', 'returns the previous value');
SELECT is(current_setting('lock_timeout'), '100ms', 'a stricter value is kept');

SET LOCAL lock_timeout = 0;
SELECT is(pgrun._workflow_cap_lock_timeout(), '0', 'returns 0 for unlimited');
SELECT is(current_setting('lock_timeout'), '5s', 'unlimited is capped at 5 s');

SET LOCAL lock_timeout = '5s';
SELECT pgrun._workflow_cap_lock_timeout();
SELECT is(current_setting('lock_timeout'), '5s', 'the cap itself is kept');

SET LOCAL lock_timeout = '1min';
SELECT pgrun._workflow_cap_lock_timeout();
SELECT is(current_setting('lock_timeout'), '5s', 'a longer value is capped');

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
