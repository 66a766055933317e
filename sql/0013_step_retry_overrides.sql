-- 0013 step retry overrides: continue_job may give the next step its own attempt budget and
-- retry delay (issue 13 item 13).
--
-- jobs.step_max_attempts replaces the job's max_attempts, and jobs.step_retry_delay the
-- backoff of its job type, for the step the job is at; NULL (every existing job) means the
-- job's own settings. continue_job writes both for the step it queues, so a later continue
-- without them gives the job's settings back; requeue_job leaves them (the step stays the
-- same). Every write that decides retry or dead (fail_job, fail_jobs, the reaper) reads
-- coalesce(step_*, the job's), and claim_jobs returns the effective max_attempts. The
-- ranges are those of the arguments: max_attempts 1..1000 as enqueue_job takes it, a delay
-- 0 s..100 years (the time-argument rule, pgrun._time_ok).
--
-- Both columns are nullable without a default, so adding them rewrites nothing; adding a
-- check reads the table's rows once. Every built-in call is schema-qualified: a migration
-- runs with the migrator's search_path.

ALTER TABLE pgrun.jobs
ADD COLUMN step_max_attempts integer,
ADD COLUMN step_retry_delay interval,
ADD CONSTRAINT jobs_step_max_attempts_check CHECK (step_max_attempts BETWEEN 1 AND 1000),
ADD CONSTRAINT jobs_step_retry_delay_check CHECK (
    pg_catalog.extract('epoch', step_retry_delay) BETWEEN 0 AND 3155760000
);

COMMENT ON COLUMN pgrun.jobs.step_max_attempts IS
'The attempt budget of the current step, set by continue_job for the step it queued; NULL = max_attempts. '
'1..1000.';

COMMENT ON COLUMN pgrun.jobs.step_retry_delay IS
'The retry delay of the current step, set by continue_job for the step it queued; NULL = the backoff '
'(a retry_delay passed to fail_job / fail_jobs still wins). 0 s..100 years.';
