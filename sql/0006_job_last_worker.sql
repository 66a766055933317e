-- 0006 job last worker: jobs.worker_id keeps the worker that ran the latest attempt.
--
-- Until now worker_id was cleared with the lease. It now stays when the attempt ends
-- (complete, fail, continue, the reaper, the write after a cancel request) and names the
-- worker that ran the job last; the next claim overwrites it. lease_token and
-- lease_expires_at still exist exactly while the job runs.
--
-- Why: complete_jobs becomes one UPDATE whose RETURNING carries what the attempt's ending
-- event records, the worker included; with worker_id cleared, the old value had to be read
-- (and the row locked) in a statement of its own first (docs/performance.md, "Job hot path,
-- third pass"). Operators also get "which worker ran this" on the job row itself.
--
-- The new rule is weaker than the old one (every row that passed the old check passes this
-- one), so the rows in place stay as they are: finished jobs keep worker_id NULL.

ALTER TABLE pgrun.jobs DROP CONSTRAINT jobs_lease_check;

ALTER TABLE pgrun.jobs ADD CONSTRAINT jobs_lease_check CHECK (
    -- a lease (token and expiry) exists exactly while the job runs, and a running job
    -- names its worker; worker_id stays after the attempt ends (the last worker)
    (status = 'running') = (lease_token IS NOT NULL)
    AND (lease_token IS NULL) = (lease_expires_at IS NULL)
    AND (lease_token IS NULL OR worker_id IS NOT NULL)
);

COMMENT ON COLUMN pgrun.jobs.worker_id IS
'The worker holding the lease while the job runs; afterwards the worker that ran its latest attempt '
'(NULL: never claimed, or finished before migration 0006).';
