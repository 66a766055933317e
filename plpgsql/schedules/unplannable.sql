-- pause_unplannable_schedule: a scheduler that cannot plan a schedule it claimed pauses it.
--
-- The scheduler plans with the cron grammar and croniter (python/pgrun/cron.py). A stored
-- schedule it cannot plan (an expression an older install accepted and the grammar now
-- refuses, a time zone the scheduler's host does not know, an expression whose next run is
-- more than 10 years away) would otherwise be claimed again every lease period, forever,
-- firing nothing. Instead the scheduler, still holding its claim, calls this: the schedule
-- is paused (paused_at = now), paused_reason keeps why (clipped to 1000 characters, for
-- list_schedules and the operator), the claim is released, and the audit log records a
-- 'schedule.paused' row with the reason and the scheduler. Jobs already made are untouched.
-- resume_schedule clears the pause and the reason; so does upsert_schedule when it restates
-- the declaration (the new one passed the grammar). The claim is the credential, as for
-- fire_schedule: no caller pauses a schedule it did not claim.
--
-- Locks: the job_schedules row (FOR UPDATE).
--
-- Errors: schedule.invalid_argument (NULL schedule_id or claim_token; NULL or blank reason)
-- (RQ003); schedule.not_found (RQ002); schedule.claim_lost (RQ004).

CREATE OR REPLACE FUNCTION pgrun.pause_unplannable_schedule(schedule_id uuid, claim_token uuid, reason text)
RETURNS timestamptz
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_now timestamptz := pgrun.now();
    v_reason text := pgrun._clip(pause_unplannable_schedule.reason, 1000);
    v_s pgrun.job_schedules;
BEGIN
    IF pause_unplannable_schedule.schedule_id IS NULL OR pause_unplannable_schedule.claim_token IS NULL
        OR v_reason IS NULL OR btrim(v_reason) = '' THEN
        PERFORM pgrun._raise(
            'schedule.invalid_argument',
            CASE
                WHEN pause_unplannable_schedule.schedule_id IS NULL THEN 'schedule_id is NULL'
                WHEN pause_unplannable_schedule.claim_token IS NULL THEN 'claim_token is NULL'
                ELSE 'reason is NULL or blank'
            END,
            'Pass the schedule_id and claim_token claim_due_schedules returned, and why the schedule '
                'cannot be planned.'
        );
    END IF;
    v_s := pgrun._schedule_lock_claimed(
        pause_unplannable_schedule.schedule_id, pause_unplannable_schedule.claim_token, v_now
    );
    UPDATE pgrun.job_schedules AS s
    SET paused_at = v_now,
        paused_reason = v_reason,
        claimed_by = NULL,
        claim_token = NULL,
        claim_expires_at = NULL,
        updated_at = v_now
    WHERE s.id = v_s.id;
    PERFORM pgrun._audit(
        'schedule.paused', v_s.organization_id, v_s.id::text,
        jsonb_build_object('name', v_s.name, 'reason', v_reason, 'scheduler_id', v_s.claimed_by)
    );
    RETURN v_now;
END;
$$;

COMMENT ON FUNCTION pgrun.pause_unplannable_schedule(uuid, uuid, text) IS
'For a scheduler that cannot plan a schedule it claimed (an expression outside the cron grammar stored by '
'an older install, an unknown time zone): pauses it under its live claim, keeping reason (clipped to 1000 '
'characters) in paused_reason, releases the claim and records the pause in the audit log, so the schedule '
'is not claimed again every lease period. resume_schedule, or an upsert_schedule that restates it, resumes '
'it. Returns paused_at. Errors: schedule.invalid_argument (RQ003), schedule.not_found '
'(RQ002), schedule.claim_lost (RQ004).';
