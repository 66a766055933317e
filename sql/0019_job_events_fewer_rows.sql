-- 0019 job events, fewer rows: a job no longer writes an 'enqueued' event when it is created
-- nor a 'claimed' event when it is claimed (issue 15 item 4; the functions are in the
-- plpgsql tree: jobs/_insert.sql, jobs/claim.sql).
--
-- Neither row held anything of its own. The job row records the creation (created_at,
-- workflow_run_id / workflow_step_key, schedule_id: what the 'enqueued' detail named) and
-- the running claim (worker_id, started_at, the lease); the event that ends an attempt
-- records its start, worker, lease token and outcome; a claim handed back unstarted gets its
-- 'released' event, which now names the claim's time too. Neither event ever had an actor
-- (enqueue records none; only cancel and requeue do). Dropping them saves one insert per
-- job created and one per claim (docs/performance.md, "Fewer event rows per job").
-- get_job_history derives the job's 'enqueued' event from the job row.
--
-- Only the table's description changes here. The event CHECK keeps both values: the rows
-- written before stay valid, and readers take them as they are (get_job_history shows a
-- stored 'enqueued' row instead of deriving one).

COMMENT ON TABLE pgrun.job_events IS
'Append-only audit: one row per job transition that the job row does not record by itself: every '
'attempt''s end (succeeded, retry_scheduled, dead, continued, lease_expired, cancelled), released, '
'cancel_requested, requeued. Creation and claims write none (the job row holds created_at and the '
'running claim; the ending event holds the attempt''s start and worker); rows written before 0019 '
'include enqueued and claimed events.';
