-- Appended steps behave as if they had been there from the start, behind prerequisites
-- that are running, succeeded, failed or skipped, and behind each other.
BEGIN;
SELECT plan(10);

-- SETUP: ok succeeds, bad dies (so skipme is skipped), slow is running
SELECT pgrun_test.wf_enqueue('{"steps": [
    {"key": "ok", "job_type": "t"},
    {"key": "bad", "job_type": "t"},
    {"key": "skipme", "job_type": "t", "depends_on": ["bad"]},
    {"key": "slow", "job_type": "t"}
]}') AS run \gset
SELECT pgrun_test.wf_succeed(:'run', 'ok', '{"v": 1}');
SELECT pgrun_test.wf_fail(:'run', 'bad');
SELECT pgrun_test.wf_start(:'run', 'slow');

SELECT * FROM pgrun.append_workflow_steps(:'run', 'm1', '[
    {"key": "after_ok", "job_type": "t", "depends_on": ["ok"]},
    {"key": "after_bad", "job_type": "t", "depends_on": ["bad"]},
    {"key": "after_bad_terminal", "job_type": "t", "depends_on": [{"step": "bad", "release_mode": "on_terminal"}]},
    {"key": "after_skipped", "job_type": "t", "depends_on": ["skipme"]},
    {"key": "after_skipped_terminal", "job_type": "t", "depends_on": [{"step": "skipme", "release_mode": "on_terminal"}]},
    {"key": "after_slow", "job_type": "t", "depends_on": ["slow"]},
    {"key": "chained", "job_type": "t", "depends_on": ["after_bad"]},
    {"key": "new_root", "kind": "external"}
]') \gset

-- TEST: the append
SELECT is(:'created'::boolean, true, 'created');
SELECT is(:'step_keys'::text, '{after_bad,after_bad_terminal,after_ok,after_skipped,after_skipped_terminal,after_slow,chained,new_root}'::text,
    'returns the keys added, sorted');

-- TEST: behind finished prerequisites
SELECT is(pgrun_test.wf_status(:'run', 'after_ok'), 'released', 'behind a succeeded step: released at once');
SELECT is(
    (SELECT payload -> 'dependencies' FROM pgrun.jobs WHERE id = pgrun_test.wf_job(:'run', 'after_ok')),
    '{"ok": {"status": "succeeded", "output": {"v": 1}}}'::jsonb,
    'with the prerequisite''s output');
SELECT is(pgrun_test.wf_status(:'run', 'after_bad') || ',' || pgrun_test.wf_status(:'run', 'chained'),
    'skipped,skipped', 'behind a failed step (on_success): skipped, and the skip cascades to new steps');
SELECT is(pgrun_test.wf_status(:'run', 'after_bad_terminal') || ',' || pgrun_test.wf_status(:'run', 'after_skipped_terminal'),
    'released,released', 'on_terminal behind failed and skipped steps: released');
SELECT is(pgrun_test.wf_status(:'run', 'after_skipped'), 'skipped', 'behind a skipped step (on_success): skipped');
SELECT is(pgrun_test.wf_status(:'run', 'new_root'), 'waiting_for_external', 'a new root is released');

-- TEST: behind a running prerequisite
SELECT is(pgrun_test.wf_status(:'run', 'after_slow'), 'blocked', 'behind a running step: blocked');
SELECT pgrun_test.wf_succeed(:'run', 'slow');
SELECT is(pgrun_test.wf_status(:'run', 'after_slow'), 'released', 'released when it finishes');

SELECT * FROM finish();
ROLLBACK;
