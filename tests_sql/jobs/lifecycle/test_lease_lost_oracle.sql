-- No oracle: job.lease_lost tells a caller that never held the job only that its token holds
-- no lease on it, never whether the job exists or what its status is. A worker that held the
-- job (its current token, the one a succeeded job keeps, or the token of one of its finished
-- attempts) and an admin still get the precise reason, in the DETAIL and in complete_jobs /
-- fail_jobs' lost_reason.
BEGIN;
SELECT plan(12);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT job_id AS running, lease_token AS running_token FROM pgrun_test.running_job() \gset
SELECT job_id AS done, lease_token AS done_token FROM pgrun_test.running_job() \gset
SELECT pgrun.complete_job(:'done', :'done_token');
SELECT job_id AS expiring, lease_token AS expiring_token FROM pgrun_test.running_job(p_lease_seconds => 5) \gset
SELECT gen_random_uuid() AS stranger, gen_random_uuid() AS guess \gset
SELECT pgrun_test.advance_time('10 seconds');

-- TEST: a worker role that never held the job learns nothing
SELECT is(pgrun_test.error_detail_as('pgrun_tap_worker', format('SELECT pgrun.complete_job(%L, %L)', :'stranger', :'guess')),
    format('job %s: this lease token holds no lease on it', :'stranger'), 'an unknown job id: only "not held"');
SELECT is(pgrun_test.error_detail_as('pgrun_tap_worker', format('SELECT pgrun.complete_job(%L, %L)', :'done', :'guess')),
    format('job %s: this lease token holds no lease on it', :'done'), 'a finished job, guessed token: the same words');
SELECT is(pgrun_test.error_detail_as('pgrun_tap_worker', format('SELECT pgrun.report_progress(%L, %L, %L)', :'running', :'guess', '{}')),
    format('job %s: this lease token holds no lease on it', :'running'), 'a running job, guessed token: the same words');
SELECT is(pgrun_test.as_role('pgrun_tap_worker', format(
    $$SELECT string_agg(lost_reason, ',' ORDER BY job_id) FROM pgrun.complete_jobs(ARRAY[%L, %L]::uuid[], ARRAY[%L, %L]::uuid[])$$,
    :'stranger', :'done', :'guess', gen_random_uuid())),
    'not_held,not_held', 'complete_jobs reports not_held for both');
SELECT is(pgrun_test.as_role('pgrun_tap_worker', format(
    $$SELECT lost_reason FROM pgrun.fail_jobs(ARRAY[%L]::uuid[], ARRAY[%L]::uuid[])$$, :'running', :'guess')),
    'not_held', 'so does fail_jobs');

-- TEST: the worker that held the job gets the precise reason
SELECT matches(pgrun_test.error_detail_as('pgrun_tap_worker', format('SELECT pgrun.complete_job(%L, %L)', :'expiring', :'expiring_token')),
    'lease expired at', 'its own expired lease: "lease expired at ..."');
SELECT is(pgrun_test.error_detail_as('pgrun_tap_worker', format('SELECT pgrun.complete_job(%L, %L)', :'done', :'done_token')),
    format('job %s: not running (status succeeded)', :'done'), 'its own finished attempt: "not running (status succeeded)"');
SELECT is(pgrun_test.as_role('pgrun_tap_worker', format(
    $$SELECT lost_reason FROM pgrun.complete_jobs(ARRAY[%L]::uuid[], ARRAY[%L]::uuid[])$$, :'done', :'done_token')),
    'not_running', 'and complete_jobs says not_running');
SELECT pgrun.reap_expired_leases();
SELECT pgrun_test.advance_time('1 hour');
SELECT pgrun_test.claim_job(:'expiring', 'worker-2');
SELECT is(pgrun_test.as_role('pgrun_tap_worker', format(
    $$SELECT lost_reason FROM pgrun.complete_jobs(ARRAY[%L]::uuid[], ARRAY[%L]::uuid[])$$, :'expiring', :'expiring_token')),
    'token_mismatch', 'a job reaped and claimed again by another worker: token_mismatch, to the worker that held it');

-- TEST: an admin gets every reason
SELECT is(pgrun_test.as_role('pgrun_tap_admin', format(
    $$SELECT string_agg(lost_reason, ',' ORDER BY ord) FROM pgrun.complete_jobs(ARRAY[%L, %L, %L]::uuid[], ARRAY[%L, %L, %L]::uuid[])
      WITH ORDINALITY AS c (job_id, outcome, lost_reason, ord)$$,
    :'stranger', :'done', :'running', :'guess', :'guess', :'guess')),
    'unknown_job,not_running,token_mismatch', 'complete_jobs reports unknown_job, not_running, token_mismatch');
SELECT is(pgrun_test.error_detail_as('pgrun_tap_admin', format('SELECT pgrun.complete_job(%L, %L)', :'stranger', :'guess')),
    format('job %s: unknown job (no such job id)', :'stranger'), 'and complete_job''s DETAIL names the reason');
SELECT is(pgrun_test.token(:'running'), :'running_token'::uuid, 'no probe changed the running job''s lease');

SELECT * FROM finish();
ROLLBACK;
