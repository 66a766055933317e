-- claim_due_schedules: hand a scheduler the schedules it should plan now.
--
-- A schedule is due when it is enabled, not paused, next_run_at <= pgrun.now() and no other
-- scheduler holds a live claim on it (claim_expires_at > now). Up to max_schedules of them,
-- earliest next_run_at first, get a fresh claim (claimed_by, claim_token, claim_expires_at =
-- now + lease_seconds). The rows carry everything the scheduler needs to compute plan times
-- without reading its own clock: the cron expression, time zone, catch-up policy, backfill
-- cap, misfire grace, planned_until (plan times up to it are already decided), last_plan_at,
-- db_now, the database's now, and scope_count, the ticks each plan time makes (fire_schedule
-- takes at most 10000 ticks per call, so the scheduler fires a long catch-up in chunks). The
-- scheduler then calls fire_schedule with the token.
--
-- Many schedulers may run at once (one per worker host): candidates are locked FOR UPDATE
-- SKIP LOCKED, so concurrent claimers never wait on each other or take the same schedule;
-- the claim then keeps others away until fire_schedule or its expiry. A claim that expires
-- (the scheduler died) is simply taken by the next claimer. Claims are an efficiency device:
-- exactly-once firing rests on schedule_ticks, not on them.
--
-- Locks: the chosen job_schedules rows, FOR UPDATE SKIP LOCKED, in (next_run_at, id) order.
-- Never waits on a row lock.
--
-- Errors (RQ003, before anything is locked): schedule.invalid_scheduler_id (NULL, blank or
-- over 200 characters: pgrun._schedule_check_scheduler_id, fire_schedule's check too),
-- schedule.invalid_max_schedules (outside 1..1000),
-- schedule.invalid_lease_seconds (outside 1..3600).

CREATE OR REPLACE FUNCTION pgrun.claim_due_schedules(
    scheduler_id text,
    max_schedules integer DEFAULT 10,
    lease_seconds integer DEFAULT 60
)
RETURNS TABLE (
    schedule_id uuid,
    claim_token uuid,
    name text,
    organization_id uuid,
    cron text,
    timezone text,
    catch_up text,
    backfill_limit integer,
    misfire_grace_seconds integer,
    planned_until timestamptz,
    last_plan_at timestamptz,
    next_run_at timestamptz,
    db_now timestamptz,
    scope_count integer
)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
-- Plan stability, as in claim_jobs: with statistics taken while few schedules existed (an
-- install, then a bulk import), the planner read every due schedule through a bitmap scan of
-- job_schedules_due_idx and sorted them all to take max_schedules: 11-17 ms for each of a
-- session's first five claims of 10 among 20,000 due schedules (custom plans), against
-- ~0.3 ms for the ordered walk that stops after 10 (tests_py/test_plan_stability_schedules.py).
-- Without seq and bitmap scans the ordered index walk is the only cheap path left; without
-- hash and merge joins each chosen schedule is then updated by primary key (with seq scans off
-- alone, the planner merge-joined them with a walk of job_schedules_pkey from its start to the
-- last chosen id). The plan is built once per session.
SET enable_seqscan = off
SET enable_bitmapscan = off
SET enable_hashjoin = off
SET enable_mergejoin = off
SET jit = off
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    v_now timestamptz := pgrun.now();
BEGIN
    PERFORM pgrun._schedule_check_scheduler_id(claim_due_schedules.scheduler_id);
    IF claim_due_schedules.max_schedules IS NULL OR claim_due_schedules.max_schedules NOT BETWEEN 1 AND 1000 THEN
        PERFORM pgrun._raise(
            'schedule.invalid_max_schedules',
            format('max_schedules %s is outside 1..1000',
                coalesce(claim_due_schedules.max_schedules::text, 'NULL')),
            'Claim a bounded batch and call again while a batch comes back full.'
        );
    END IF;
    IF claim_due_schedules.lease_seconds IS NULL OR claim_due_schedules.lease_seconds NOT BETWEEN 1 AND 3600 THEN
        PERFORM pgrun._raise(
            'schedule.invalid_lease_seconds',
            format('lease_seconds %s is outside 1..3600',
                coalesce(claim_due_schedules.lease_seconds::text, 'NULL')),
            'Pass how long the scheduler may take between claim_due_schedules and fire_schedule.'
        );
    END IF;

    RETURN QUERY
    WITH due AS (
        SELECT d.id
        FROM pgrun.job_schedules AS d
        WHERE d.enabled
            AND d.paused_at IS NULL
            AND d.next_run_at <= v_now
            AND (d.claim_expires_at IS NULL OR d.claim_expires_at <= v_now)
        ORDER BY d.next_run_at, d.id
        LIMIT claim_due_schedules.max_schedules
        FOR UPDATE SKIP LOCKED
    )
    UPDATE pgrun.job_schedules AS s
    SET claimed_by = claim_due_schedules.scheduler_id,
        claim_token = gen_random_uuid(),
        claim_expires_at = v_now + make_interval(secs => claim_due_schedules.lease_seconds)
    FROM due
    WHERE s.id = due.id
    RETURNING
        s.id, s.claim_token, s.name, s.organization_id, s.cron, s.timezone, s.catch_up,
        s.backfill_limit, s.misfire_grace_seconds, s.planned_until, s.last_plan_at, s.next_run_at, v_now,
        greatest(cardinality(s.scopes), 1);
END;
$$;

COMMENT ON FUNCTION pgrun.claim_due_schedules(text, integer, integer) IS
'Claim up to max_schedules (1..1000) due schedules for scheduler_id: enabled, not paused, next_run_at <= '
'now, no live claim; FOR UPDATE SKIP LOCKED, so any number of schedulers may call it at once. Each claim '
'lasts lease_seconds (1..3600). Returns per schedule: schedule_id, claim_token (pass it to fire_schedule), '
'name, organization_id, cron, timezone, catch_up, backfill_limit, misfire_grace_seconds, planned_until '
'(plan times up to it are decided), last_plan_at, next_run_at, db_now, the database clock the plan '
'must be computed from, and scope_count, the ticks (jobs) each plan time makes. Errors (RQ003): '
'schedule.invalid_scheduler_id, schedule.invalid_max_schedules, schedule.invalid_lease_seconds.';
