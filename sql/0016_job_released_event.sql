-- 0016 job released event: a worker may hand a claimed job it never started back to the
-- queue (pgrun.release_jobs, plpgsql/jobs/release.sql; issue 15: a worker that claims ahead
-- of its free slots hands back what it did not start when it stops).
--
-- That is a transition (running -> queued) like any other, so it gets its event:
-- 'released'. It ends no attempt (the handler never ran): outcome, lease_token and the other
-- attempt columns stay NULL (job_events_attempt_check), so job_attempts shows no row for the
-- released claim. Nothing else changes; every existing row already passes the new check,
-- which only adds a value to the list.
--
-- Re-created with plain ADD CONSTRAINT: DROP CONSTRAINT takes the ACCESS EXCLUSIVE lock for
-- the rest of the transaction anyway, and the check is one comparison per row. The name
-- stays the same.

ALTER TABLE pgrun.job_events
DROP CONSTRAINT job_events_event_check,
ADD CONSTRAINT job_events_event_check CHECK (
    -- enqueued: enqueue_job/enqueue_jobs; claimed: claim_jobs; succeeded: complete_job(s);
    -- retry_scheduled: fail_job(s) with attempts left; dead: fail_job(s) or the reaper
    -- with none left, or a non-retryable failure; continued: continue_job;
    -- cancel_requested: cancel_job on a running job (status stays running);
    -- cancelled: cancel_job on a queued job, or the next write/reap/release after a request;
    -- requeued: requeue_job; lease_expired: the reaper queued the job for a retry;
    -- released: release_jobs handed a claimed, not started job back to the queue.
    -- attempt is the job's total_attempts then, i.e. the job_attempts row it concerns.
    event IN (
        'enqueued', 'claimed', 'succeeded', 'retry_scheduled', 'dead', 'continued',
        'cancel_requested', 'cancelled', 'requeued', 'lease_expired', 'released'
    )
);
