-- requeue_job: bring a dead or cancelled job back to the queue.
--
-- The job becomes 'queued' again at run_at (now when NULL) with a fresh attempt budget
-- (attempt := 0; total_attempts keeps counting, so attempt rows stay unique), finished_at
-- and any cancel request cleared; its step, state, payload and last error stay as they
-- were. Its open job_dead_letters rows get requeued_at stamped. One 'requeued' event, and a
-- notification as for an enqueue (pgrun._enqueue_notify), so idle workers need not poll for it.
-- Any other status (queued, running, succeeded) is job.not_requeueable.
--
-- The job of a workflow step (jobs.workflow_run_id set) is never requeued, whatever its
-- status: job.in_workflow_run, nothing written. A step's outcome is acted on when its job
-- finishes: its dependents are released (on_terminal, or on_success with its output) or
-- skipped, and the run may have finished and been reported. Rerunning the job alone would
-- leave the step finished and the run in its state, disagreeing with the job; making it
-- consistent would mean rewinding the dependents. A run is retried as a whole: enqueue a new
-- one (docs/workflows.md, "Requeue and workflow steps"). Membership is checked before the
-- status, so a step job gets the one answer that stays true once it finishes.
--
-- Order of checks: arguments (job_id, run_at), then scope (not_found), then workflow
-- membership, then status.
--
-- Tenant scoping (util/_access.sql): only jobs of the organizations the caller acts for are
-- visible; another organization's job is job.not_found (even a step job: no hint that it is
-- in a run). The event names the login role.
--
-- Locks: the one job row (FOR UPDATE), then its dead letter rows. A refused step job takes
-- no workflow lock: its run and step are read, not written, only to name them in the DETAIL.
--
-- Errors: job.not_found (RQ002), job.in_workflow_run (RQ001: the job of a workflow step),
-- job.not_requeueable (RQ001), job.invalid_argument (RQ003, NULL job_id),
-- job.invalid_schedule (RQ003: run_at not finite, or more than 100 years ahead: the
-- time-argument rule of pgrun._check_time, as for enqueue_job).

CREATE OR REPLACE FUNCTION pgrun.requeue_job(
    job_id uuid,
    organization_id uuid DEFAULT NULL,
    run_at timestamptz DEFAULT NULL
)
RETURNS timestamptz
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_now timestamptz := pgrun.now();
    v_run_at timestamptz := coalesce(requeue_job.run_at, pgrun.now());
    v_job pgrun.jobs;
BEGIN
    IF requeue_job.job_id IS NULL THEN
        PERFORM pgrun._raise(
            'job.invalid_argument',
            'job_id must not be NULL',
            'Pass the id of the dead or cancelled job to requeue.'
        );
    END IF;
    PERFORM pgrun._check_time('job.invalid_schedule', 'run_at', requeue_job.run_at);

    v_job := pgrun._job_lock(requeue_job.job_id, requeue_job.organization_id);
    IF v_job.workflow_run_id IS NOT NULL THEN
        PERFORM pgrun._raise(
            'job.in_workflow_run',
            format(
                'job %s (%s) is the job of step %s of workflow run %s (%s); a workflow step''s job is not requeued',
                v_job.id, v_job.status, pgrun._shown(v_job.workflow_step_key), v_job.workflow_run_id,
                coalesce(
                    (SELECT r.status FROM pgrun.workflow_runs AS r WHERE r.id = v_job.workflow_run_id), 'not found'
                )
            ),
            'A step''s outcome is acted on when its job finishes (its dependents released or skipped, the '
                'run perhaps finished), so one step cannot be rerun alone. Enqueue a new workflow run instead, for '
                'example with the steps that failed and those that depend on them: a run is retried as a whole.'
        );
    END IF;
    IF v_job.status NOT IN ('dead', 'cancelled') THEN
        PERFORM pgrun._raise(
            'job.not_requeueable',
            format('job %s is %s; only dead and cancelled jobs can be requeued', v_job.id, v_job.status),
            'A queued or running job is already in the queue; a succeeded job is done '
                '(enqueue a new one to run it again).'
        );
    END IF;

    WITH requeued AS (
        UPDATE pgrun.jobs AS j
        SET status = 'queued',
            run_at = v_run_at,
            attempt = 0,
            cancel_requested_at = NULL,
            cancel_reason = NULL,
            finished_at = NULL,
            updated_at = v_now
        WHERE j.id = v_job.id
        RETURNING j.id
    ),

    letters AS (
        UPDATE pgrun.job_dead_letters AS d
        SET requeued_at = v_now
        FROM requeued AS r
        WHERE d.job_id = r.id AND d.requeued_at IS NULL
    )

    INSERT INTO pgrun.job_events (job_id, event, from_status, to_status, attempt, detail, created_at, actor)
    SELECT r.id, 'requeued', v_job.status, 'queued', v_job.total_attempts,
        jsonb_build_object('run_at', v_run_at), v_now, session_user
    FROM requeued AS r;

    -- Back in the queue: wake its idle workers, or tell them when it comes due, as an enqueue
    -- does, rather than leave it to their poll.
    PERFORM pgrun._enqueue_notify(pgrun._enqueue_notify_payload(v_job.queue, v_run_at, v_now));

    RETURN v_run_at;
END;
$$;

COMMENT ON FUNCTION pgrun.requeue_job(uuid, uuid, timestamptz) IS
'Put a dead or cancelled job back in the queue at run_at (NULL = now) with a fresh attempt budget '
'(total_attempts keeps counting); its dead letters get requeued_at stamped and one requeued event is '
'written (actor: the login role); its queue is notified as by an enqueue (channel pgrun_jobs: the queue, or the '
'queue and the due time in Unix ms). Only jobs of the organizations the caller acts for are visible '
'(organization_id names one). run_at: a finite time at most 100 years ahead. Returns the run_at. '
'A workflow step''s job is never requeued (its outcome was already acted on; enqueue a new run). '
'Errors: job.not_found (RQ002; also another organization''s job), job.in_workflow_run (RQ001: the job '
'of a workflow step, whatever its status), job.not_requeueable (RQ001: queued, running or succeeded), '
'job.invalid_argument, job.invalid_schedule (RQ003).';
