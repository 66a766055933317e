-- Every terminal job path settles its step: complete_job, fail_job (non-retryable and
-- attempts exhausted), complete/fail after a cancel request, continue_job after a cancel
-- request, the reaper, cancel_job. A retry is not terminal and settles nothing.
BEGIN;
SELECT plan(10);

-- SETUP: one run with a root per path
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT pgrun_test.wf_enqueue('{"steps": [
    {"key": "retry", "job_type": "t", "max_attempts": 2},
    {"key": "reaped", "job_type": "t", "max_attempts": 1},
    {"key": "reaped_cancel", "job_type": "t"},
    {"key": "continued", "job_type": "t"},
    {"key": "completed_cancel", "job_type": "t"},
    {"key": "queued_cancel", "job_type": "t"}
]}') AS run \gset

-- TEST: a retry is not terminal
SELECT pgrun_test.wf_start(:'run', 'retry') AS retry_token \gset
SELECT is(
    (SELECT outcome FROM pgrun.fail_job(pgrun_test.wf_job(:'run', 'retry'), :'retry_token', 'x', 'y')),
    'retry_scheduled', 'the first failure is retried');
SELECT is(pgrun_test.wf_status(:'run', 'retry'), 'released', 'the step is still released');
SELECT pgrun_test.advance_time(interval '1 hour');
SELECT pgrun_test.wf_start(:'run', 'retry') AS retry_token \gset
SELECT is(
    (SELECT outcome FROM pgrun.fail_job(pgrun_test.wf_job(:'run', 'retry'), :'retry_token', 'x', 'y')),
    'dead', 'the second failure exhausts the attempts');
SELECT is(pgrun_test.wf_status(:'run', 'retry'), 'failed', 'the step failed');

-- TEST: the reaper
SELECT pgrun_test.wf_start(:'run', 'reaped');
SELECT pgrun_test.wf_start(:'run', 'reaped_cancel');
SELECT pgrun.cancel_job(pgrun_test.wf_job(:'run', 'reaped_cancel'));
SELECT pgrun_test.advance_time(interval '10 minutes');
SELECT is(
    (SELECT string_agg(outcome, ',' ORDER BY outcome) FROM pgrun.reap_expired_leases()),
    'cancelled,dead', 'the reaper kills one and cancels the other');
SELECT is(pgrun_test.wf_status(:'run', 'reaped') || ',' || pgrun_test.wf_status(:'run', 'reaped_cancel'),
    'failed,cancelled', 'their steps are settled');

-- TEST: continue_job and complete_job after a cancel request
SELECT pgrun_test.wf_start(:'run', 'continued') AS cont_token \gset
SELECT pgrun.cancel_job(pgrun_test.wf_job(:'run', 'continued'));
SELECT is(
    (SELECT outcome FROM pgrun.continue_job(pgrun_test.wf_job(:'run', 'continued'), :'cont_token', 'next')),
    'cancelled', 'continue_job honours the cancel request');
SELECT pgrun_test.wf_start(:'run', 'completed_cancel') AS comp_token \gset
SELECT pgrun.cancel_job(pgrun_test.wf_job(:'run', 'completed_cancel'));
SELECT is(pgrun.complete_job(pgrun_test.wf_job(:'run', 'completed_cancel'), :'comp_token', '{"x": 1}'),
    'cancelled', 'complete_job honours the cancel request');

-- TEST: cancel_job on a queued job
SELECT is(pgrun.cancel_job(pgrun_test.wf_job(:'run', 'queued_cancel')), 'cancelled', 'a queued job is cancelled');
SELECT is(pgrun_test.wf_statuses(:'run'),
    'completed_cancel:cancelled,continued:cancelled,queued_cancel:cancelled,reaped:failed,reaped_cancel:cancelled,retry:failed',
    'every step is settled by its job''s outcome');

SELECT * FROM finish();
ROLLBACK;
