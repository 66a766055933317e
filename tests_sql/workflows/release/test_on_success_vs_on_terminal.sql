-- When a prerequisite fails, an on_success dependent is skipped and an on_terminal one
-- is released; when it succeeds, both are released.
BEGIN;
SELECT plan(6);

-- SETUP
SELECT pgrun_test.wf_enqueue('{"steps": [
    {"key": "a", "job_type": "t"},
    {"key": "needs_success", "job_type": "t", "depends_on": ["a"]},
    {"key": "cleanup", "job_type": "t", "depends_on": [{"step": "a", "release_mode": "on_terminal"}]}
]}') AS failing \gset
SELECT pgrun_test.wf_enqueue('{"steps": [
    {"key": "a", "job_type": "t"},
    {"key": "needs_success", "job_type": "t", "depends_on": ["a"]},
    {"key": "cleanup", "job_type": "t", "depends_on": [{"step": "a", "release_mode": "on_terminal"}]}
]}') AS passing \gset

-- TEST: the prerequisite dies
SELECT is(pgrun_test.wf_fail(:'failing', 'a'), 'dead', 'the job dies');
SELECT is(pgrun_test.wf_statuses(:'failing'), 'a:failed,cleanup:released,needs_success:skipped',
    'on_success: skipped; on_terminal: released');
SELECT is(
    (SELECT finished_at IS NOT NULL AND job_id IS NULL FROM pgrun.workflow_steps
     WHERE run_id = :'failing' AND step_key = 'needs_success'),
    true,
    'a skipped step is finished and never got a job'
);
SELECT is(
    (SELECT status FROM pgrun.jobs WHERE id = pgrun_test.wf_job(:'failing', 'cleanup')),
    'queued',
    'the on_terminal dependent''s job is queued'
);

-- TEST: the prerequisite succeeds
SELECT is(pgrun_test.wf_succeed(:'passing', 'a'), 'succeeded', 'the job succeeds');
SELECT is(pgrun_test.wf_statuses(:'passing'), 'a:succeeded,cleanup:released,needs_success:released',
    'both dependents are released');

SELECT * FROM finish();
ROLLBACK;
