-- 0021 compact hot checks: the CHECK constraints of jobs and job_events, the two tables every
-- enqueue, claim and completion writes, in shorter forms with the same meaning (issue 15).
--
-- Why: PostgreSQL 15 reads a table's CHECK constraints back from their stored node text and
-- plans them again in every statement that writes the table (ExecRelCheck: stringToNode and
-- expression planning per statement, not per session). With one job per statement (a single
-- enqueue, an idle worker's claim and completion) that was ~90 us per statement that writes
-- jobs, about a fifth of the server time of claiming and completing one job (perf). The cost
-- follows the size of the stored expression: an IN list is an array of separate text
-- constants, a BETWEEN two comparisons with the column read twice, a chain of IS NULL tests a
-- node per column. Measured on a copy of jobs (pgbench, one-row INSERT, three alternating
-- rounds): 0.17-0.22 ms with the old forms, 0.14-0.18 with these, 0.09-0.12 with none;
-- docs/performance.md has the numbers for the real functions.
--
-- Same meaning, row for row (a CHECK passes when its expression is true or NULL):
-- * x IN ('a', 'b')            -> x = any('{a,b}'::text[])          (one array constant)
-- * x BETWEEN lo AND hi        -> x <@ '[lo,hi]'::int4range / numrange (NULL stays NULL)
-- * extract(...) BETWEEN ...   -> one extract, contained in a numrange
-- * a IS NULL AND b IS NULL .. -> num_nonnulls(a, b, ..) = 0         (never NULL either)
-- * a IS NOT NULL AND ..       -> num_nulls(a, ..) = 0
-- The other constraints of both tables are left as they are. pgTAP pins each rule against
-- direct writes (tests_sql/jobs/schema/test_hot_checks.sql).
--
-- NOT VALID here, validated in 0022: DROP CONSTRAINT takes the ACCESS EXCLUSIVE lock until
-- this transaction ends, so checking the existing rows here would block every worker for a
-- scan of the whole history (jobs keeps finished jobs, job_events every attempt's end). Every
-- existing row already passed the same rule under its old form. Writes from now on are
-- checked; 0022 checks the stored rows in its own transaction, under a lock that lets
-- enqueues, claims and completions go on. The names stay the same.
--
-- Every function call is schema-qualified (tests_py/test_migrate_qualified.py).

ALTER TABLE pgrun.jobs
DROP CONSTRAINT jobs_status_check,
ADD CONSTRAINT jobs_status_check CHECK (
    -- queued: enqueue_job/enqueue_jobs, a retry after fail_job or the reaper, continue_job,
    --         requeue_job, release_jobs
    -- running: claim_jobs
    -- succeeded: complete_job(s)
    -- dead: fail_job(s)/reaper with no attempts left or a non-retryable error
    -- cancelled: cancel_job on a queued job, or the worker's next write after a cancel request
    status = any('{queued,running,succeeded,dead,cancelled}'::text[])
) NOT VALID,
DROP CONSTRAINT jobs_finished_check,
ADD CONSTRAINT jobs_finished_check CHECK (
    (status = any('{succeeded,dead,cancelled}'::text[])) = (finished_at IS NOT NULL)
) NOT VALID,
DROP CONSTRAINT jobs_priority_check,
ADD CONSTRAINT jobs_priority_check CHECK (priority <@ '[0,32767]'::int4range) NOT VALID,
DROP CONSTRAINT jobs_idempotency_check,
ADD CONSTRAINT jobs_idempotency_check CHECK (
    (idempotency_key IS NULL) = (enqueue_request IS NULL)
    AND pg_catalog.length(idempotency_key) <@ '[1,256]'::int4range
) NOT VALID,
DROP CONSTRAINT jobs_step_max_attempts_check,
ADD CONSTRAINT jobs_step_max_attempts_check CHECK (step_max_attempts <@ '[1,1000]'::int4range) NOT VALID,
DROP CONSTRAINT jobs_step_retry_delay_check,
ADD CONSTRAINT jobs_step_retry_delay_check CHECK (
    -- 0 s..100 Julian years, the time-argument rule
    pg_catalog.extract('epoch', step_retry_delay) <@ '[0,3155760000]'::numrange
) NOT VALID;

ALTER TABLE pgrun.job_events
DROP CONSTRAINT job_events_event_check,
ADD CONSTRAINT job_events_event_check CHECK (
    -- enqueued: enqueue_job/enqueue_jobs (before 0019); claimed: claim_jobs (before 0019);
    -- succeeded: complete_job(s); retry_scheduled: fail_job(s) with attempts left; dead:
    -- fail_job(s) or the reaper with none left, or a non-retryable failure; continued:
    -- continue_job; cancel_requested: cancel_job on a running job (status stays running);
    -- cancelled: cancel_job on a queued job, or the next write/reap/release after a request;
    -- requeued: requeue_job; lease_expired: the reaper queued the job for a retry;
    -- released: release_jobs handed a claimed, not started job back to the queue.
    event = any(
        '{enqueued,claimed,succeeded,retry_scheduled,dead,continued,'
        'cancel_requested,cancelled,requeued,lease_expired,released}'::text[]
    )
) NOT VALID,
DROP CONSTRAINT job_events_attempt_check,
ADD CONSTRAINT job_events_attempt_check CHECK (
    -- outcome is set exactly on the event that ends an attempt (a transition out of running
    -- other than cancel_requested) and says how the attempt ended: succeeded: complete_job;
    -- failed: fail_job; timed_out: fail_job with error code 'timeout'; crashed: fail_job
    -- with error code 'crashed'; lease_expired: the reaper; cancelled: the write after a
    -- cancel request; continued: continue_job
    pg_catalog.num_nonnulls(outcome, step, lease_token, started_at, error_code, error_message) = 0
    OR (
        outcome = any('{succeeded,failed,timed_out,crashed,lease_expired,cancelled,continued}'::text[])
        AND coalesce(from_status = 'running', FALSE)
        AND event <> 'cancel_requested'
        AND pg_catalog.num_nulls(started_at, lease_token, worker_id) = 0
    )
) NOT VALID;
