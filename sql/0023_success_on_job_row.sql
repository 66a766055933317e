-- 0023 success on the job row: a job that succeeds writes no 'succeeded' event; the job row
-- keeps what that event recorded, the attempt's lease token included (issue 15 item 4; the
-- functions are in the plpgsql tree: jobs/complete.sql, jobs/_lease.sql,
-- admin/dashboard.sql's get_job_history).
--
-- The 'succeeded' event was the one row complete_jobs wrote besides the job's own update:
-- one heap tuple, its primary key entry and an identity value per job. Everything it held is
-- on the job row once the job has succeeded, which is terminal (no write changes the row
-- afterwards but the purge): the attempt (total_attempts), its step, worker (worker_id,
-- 0006), start (started_at), end (finished_at), outcome (status) and, from now on, its lease
-- token. The worker's end-to-end throughput at concurrency 10 was 1.13x without the row
-- (docs/performance.md, "The succeeded attempt on the job row").
--
-- So a succeeded job keeps its lease_token: nothing can use it (every lease write checks
-- lease_expires_at > now(), and the expiry is cleared), it is what lets the holder of a
-- finished attempt's token learn why its late write was refused (_lease_lost_reason), and
-- its presence tells the attempt apart from one completed before this migration, whose
-- token was cleared and whose stored 'succeeded' event stays the record (job_attempts and
-- get_job_history take that row then, never both).
--
-- jobs_lease_check changes with it: an expiry exists exactly while the job runs, a running
-- job has a token and names its worker, and a token outside running is a succeeded
-- attempt's. Every existing row passes (the old rule tied the token to the expiry and both
-- to running). NOT VALID here, validated in 0024 in a transaction of its own: DROP
-- CONSTRAINT holds the ACCESS EXCLUSIVE lock until this transaction ends, and 0024's
-- VALIDATE scans the table under SHARE UPDATE EXCLUSIVE, which lets every write go on (as
-- 0021 / 0022 did). The name stays the same.
--
-- Every function call is schema-qualified (tests_py/test_migrate_qualified.py).

ALTER TABLE pgrun.jobs
DROP CONSTRAINT jobs_lease_check,
ADD CONSTRAINT jobs_lease_check CHECK (
    -- the expiry exists exactly while the job runs; a running job holds a token and names
    -- its worker; a token without an expiry is the lease of the attempt that succeeded
    (status = 'running') = (lease_expires_at IS NOT NULL)
    AND (lease_token IS NOT NULL OR lease_expires_at IS NULL)
    AND (lease_token IS NULL OR status = any('{running,succeeded}'::text[]) AND worker_id IS NOT NULL)
) NOT VALID;

COMMENT ON COLUMN pgrun.jobs.lease_token IS
'The lease of the running attempt (with lease_expires_at); on a succeeded job the lease its last '
'attempt held (no write accepts it: the expiry is gone). NULL otherwise, and on jobs that succeeded '
'before migration 0023.';

-- Same columns, same meaning: one row per claim. The attempt that succeeded is read from the
-- job row when the row kept its token (completed since 0023), else from its stored event. A
-- job row with a token is running or succeeded (jobs_lease_check), and only a finished job
-- has finished_at (jobs_finished_check): one branch serves the running attempt and the
-- succeeded one.
CREATE OR REPLACE VIEW pgrun.job_attempts AS
SELECT
    e.job_id,
    e.attempt,
    e.step,
    e.worker_id,
    e.lease_token,
    e.started_at,
    e.created_at AS finished_at,
    e.outcome,
    e.error_code,
    e.error_message
FROM pgrun.job_events AS e
WHERE e.outcome IS NOT NULL
UNION ALL
SELECT
    j.id AS job_id,
    j.total_attempts AS attempt,
    j.step,
    j.worker_id,
    j.lease_token,
    j.started_at,
    j.finished_at,
    CASE WHEN j.status = 'succeeded' THEN j.status END AS outcome,
    NULL::text AS error_code,
    NULL::text AS error_message
FROM pgrun.jobs AS j
WHERE j.lease_token IS NOT NULL;

COMMENT ON VIEW pgrun.job_attempts IS
'One row per claim of a job: which worker, when, how it ended (outcome NULL while it runs). attempt '
'counts claims over the job''s life. An attempt that ended is read from the event that ended it, '
'except the one that succeeded, which the job row records (since migration 0023).';

COMMENT ON TABLE pgrun.job_events IS
'Append-only audit: one row per job transition that the job row does not record by itself: the end '
'of every attempt that did not succeed (retry_scheduled, dead, continued, lease_expired, '
'cancelled), released, cancel_requested, requeued. Creation, claims and success write none (the job '
'row holds created_at, the running claim, and the succeeded attempt with its lease token); rows '
'written before 0019 include enqueued and claimed events, before 0023 succeeded events.';
