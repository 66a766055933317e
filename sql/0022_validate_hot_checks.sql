-- 0022 validate hot checks: the stored rows of jobs and job_events checked against the
-- constraints 0021 re-created NOT VALID.
--
-- Its own transaction, so its own lock: VALIDATE CONSTRAINT takes SHARE UPDATE EXCLUSIVE on
-- the table, which lets enqueues, claims, completions and reads go on while it scans (0021's
-- ACCESS EXCLUSIVE lock ended with 0021's transaction). Every row already passed the same
-- rule under its old form, so this cannot fail on a table pgrun wrote; it makes the catalog
-- say so again (convalidated).

ALTER TABLE pgrun.jobs VALIDATE CONSTRAINT jobs_status_check;
ALTER TABLE pgrun.jobs VALIDATE CONSTRAINT jobs_finished_check;
ALTER TABLE pgrun.jobs VALIDATE CONSTRAINT jobs_priority_check;
ALTER TABLE pgrun.jobs VALIDATE CONSTRAINT jobs_idempotency_check;
ALTER TABLE pgrun.jobs VALIDATE CONSTRAINT jobs_step_max_attempts_check;
ALTER TABLE pgrun.jobs VALIDATE CONSTRAINT jobs_step_retry_delay_check;
ALTER TABLE pgrun.job_events VALIDATE CONSTRAINT job_events_event_check;
ALTER TABLE pgrun.job_events VALIDATE CONSTRAINT job_events_attempt_check;
