-- 0011 schedules: why a schedule is paused, when the scheduler paused it.
--
-- A scheduler that claims a schedule it cannot plan (an expression outside the cron grammar
-- stored by an older install, a time zone its host does not know) pauses it through
-- pgrun.pause_unplannable_schedule instead of letting it be claimed again every lease period;
-- paused_reason says why, for list_schedules and the operator. An operator's pause
-- (pause_schedule) has none. resume_schedule clears it, and so does upsert_schedule when it
-- restates the declaration of a schedule the scheduler paused. Every built-in call is
-- schema-qualified: a migration runs with the migrator's search_path.

ALTER TABLE pgrun.job_schedules
ADD COLUMN paused_reason text,
ADD CONSTRAINT job_schedules_paused_reason_check CHECK (
    paused_reason IS NULL OR (paused_at IS NOT NULL AND pg_catalog.length(paused_reason) <= 1000)
);

COMMENT ON COLUMN pgrun.job_schedules.paused_reason IS
'Why the scheduler paused this schedule (it could not plan it); NULL for an operator''s pause or an active schedule.';
