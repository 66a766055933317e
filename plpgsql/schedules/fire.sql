-- fire_schedule: turn a schedule's plan times into jobs, each (scope, plan time) once, ever.
--
-- The scheduler computed plan_times with croniter from the rows claim_due_schedules gave it
-- (the database's now included), per the catch-up policy, and the next run after them. Here:
--   1. the schedule row is locked (FOR UPDATE); its current claim must carry claim_token
--      and must not have expired, else schedule.claim_lost and nothing is written (the claim
--      expired, another scheduler took it, or an operator paused or restated the schedule
--      since). Firing needs a live claim: the claim token is the scheduler's credential, so
--      no caller fires a schedule it did not claim, nor a paused or disabled one (those are
--      never claimed; schedule.not_active if one somehow holds a claim). A manual "run now"
--      is run_schedule_now, an admin function;
--   2. one tick per (plan time, scope) is inserted ON CONFLICT DO NOTHING (primary key
--      (schedule_id, scope, plan_time)), and only the ticks this call inserted make jobs:
--      one call of the shared insert (pgrun._enqueue_insert_jobs, jobs/_insert.sql) for
--      the jobs (jobs.schedule_id set, run_at = the plan time; no job_events row).
--      A plan time fired before, by this or any other scheduler, returns the job its tick
--      made with created = false;
--   3. planned_until moves to planned_until (default: the latest plan time), next_run_at is
--      set, last_plan_at / last_fired_at follow, and the claim is released, unless
--      keep_claim.
-- Two schedulers firing the same plan time at once: the second's tick insert waits for the
-- first's transaction and then does nothing, so exactly one job exists per (scope, plan
-- time) whatever the claims, clocks or retries did.
--
-- One call makes at most 10000 ticks (plan times x scopes): the statement, its locks and
-- its WAL stay bounded. A longer catch-up (catch_up all with a large backfill_limit and many
-- scopes, catch_up none over a long grace of a per-second cron) is fired in chunks under one
-- claim: every chunk but the last passes keep_claim => true, planned_until = its last plan
-- time and next_run_at = the next plan time (so the schedule is still due). A scheduler that
-- dies between chunks leaves a schedule planned up to its last chunk and due: once the claim
-- expires the next claimer plans the rest, and the ticks keep every plan time to one job.
--
-- Jobs: an ordinary job of the schedule's job_type and payload (scoped: plus "scope": the
-- scope), its queue / priority / max_attempts / timeout or else the job definition's, then
-- the built-in defaults: the shared insert resolves them, for enqueue_job and workflow
-- steps alike. It retries and dies like any job. A scope of kind organization is the job's
-- organization_id; otherwise the schedule's. The validation is the front door's own
-- (upsert_schedule runs pgrun._enqueue_check); the insert's NOTIFY wakes the queues.
--
-- Locks, in order: the job_schedules row; the new schedule_ticks keys in (plan_time, scope)
-- order; the inserted jobs.
--
-- run_schedule_now(name, organization_id) is the operator's "run now": one plan time, the
-- database's now, for each scope of an enabled, unpaused schedule, through the same tick and
-- job insert (pgrun._schedule_fire); the schedule's planning state is left as it is, so the
-- scheduler still fires every plan time the cron owes.
--
-- Every time argument is finite and bounded, so none can raise a raw 22008 or store a time
-- a client cannot read: plan times and planned_until from 1970-01-01 UTC to now, next_run_at
-- after every plan time and at most 10 years after now.
--
-- Errors: schedule.invalid_argument (NULL schedule_id, claim_token or keep_claim),
-- schedule.invalid_scheduler_id (given, and blank or over 200 characters),
-- schedule.invalid_plan_times (NULL, not one-dimensional, NULL elements, not finite, before
-- 1970, after now, over 10000, more than 10000 ticks with the scopes, planned_until before a
-- plan time, before 1970 or after now), schedule.invalid_next_run_at (NULL, not finite,
-- before 1970, not after every plan time, more than 10 years after now) (RQ003);
-- schedule.not_found (RQ002); schedule.claim_lost (RQ004); schedule.not_active (RQ001:
-- paused or disabled); from run_schedule_now also schedule.invalid_name and
-- schedule.invalid_organization (RQ003).

CREATE OR REPLACE FUNCTION pgrun.fire_schedule(
    schedule_id uuid,
    plan_times timestamptz[],
    next_run_at timestamptz,
    claim_token uuid DEFAULT NULL,
    planned_until timestamptz DEFAULT NULL,
    scheduler_id text DEFAULT NULL,
    keep_claim boolean DEFAULT FALSE
)
RETURNS TABLE (plan_time timestamptz, scope text, job_id uuid, created boolean)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    c_max_next_run CONSTANT interval := interval '10 years';
    -- the earliest time pgrun plans: croniter's own range starts here, and every time stays
    -- representable where it is read (Python's datetime, in any session time zone)
    c_min_time CONSTANT timestamptz := '1970-01-01 00:00:00+00'::timestamptz;
    v_now timestamptz := pgrun.now();
    v_s pgrun.job_schedules;
    v_times timestamptz[];
    v_max_time timestamptz;
    v_until timestamptz;
    v_problem text;
    v_plan_times timestamptz[];
    v_scopes text[];
    v_job_ids uuid[];
    v_created boolean[];
BEGIN
    IF fire_schedule.schedule_id IS NULL OR fire_schedule.claim_token IS NULL OR fire_schedule.keep_claim IS NULL THEN
        PERFORM pgrun._raise(
            'schedule.invalid_argument',
            CASE
                WHEN fire_schedule.schedule_id IS NULL THEN 'schedule_id is NULL'
                WHEN fire_schedule.claim_token IS NULL THEN 'claim_token is NULL: fire_schedule fires only under a claim'
                ELSE 'keep_claim is NULL'
            END,
            'Pass the schedule_id and claim_token claim_due_schedules returned; to fire a schedule '
                'by hand, an admin calls run_schedule_now.'
        );
    END IF;
    IF fire_schedule.scheduler_id IS NOT NULL THEN
        PERFORM pgrun._schedule_check_scheduler_id(fire_schedule.scheduler_id);
    END IF;
    v_problem := CASE
        WHEN fire_schedule.plan_times IS NULL
            THEN 'plan_times is NULL (pass an empty array to fire nothing)'
        WHEN coalesce(array_ndims(fire_schedule.plan_times), 1) <> 1
            THEN 'plan_times must be one-dimensional'
        WHEN cardinality(fire_schedule.plan_times) > 10000
            THEN format('%s plan times in one call (at most 10000)', cardinality(fire_schedule.plan_times))
        WHEN array_position(fire_schedule.plan_times, NULL) IS NOT NULL
            THEN 'plan_times must not contain NULL'
        WHEN EXISTS (SELECT FROM unnest(fire_schedule.plan_times) AS u (t) WHERE NOT isfinite(u.t))
            THEN 'plan_times must be finite'
        WHEN EXISTS (SELECT FROM unnest(fire_schedule.plan_times) AS u (t) WHERE u.t < c_min_time)
            THEN format('plan time %s is before %s', (SELECT min(u.t) FROM unnest(fire_schedule.plan_times) AS u (t)),
                c_min_time)
        WHEN EXISTS (SELECT FROM unnest(fire_schedule.plan_times) AS u (t) WHERE u.t > v_now)
            THEN format(
                'plan time %s is after the database''s now (%s)',
                (SELECT max(u.t) FROM unnest(fire_schedule.plan_times) AS u (t)), v_now
            )
        WHEN NOT isfinite(fire_schedule.planned_until) OR fire_schedule.planned_until > v_now
            OR fire_schedule.planned_until < c_min_time
            THEN format('planned_until %s is not finite, before %s or after the database''s now (%s)',
                fire_schedule.planned_until, c_min_time, v_now)
        WHEN fire_schedule.planned_until < (SELECT max(u.t) FROM unnest(fire_schedule.plan_times) AS u (t))
            THEN format('planned_until %s is before a plan time', fire_schedule.planned_until)
    END;
    IF v_problem IS NOT NULL THEN
        PERFORM pgrun._raise(
            'schedule.invalid_plan_times',
            v_problem,
            'Pass the plan times computed from claim_due_schedules'' db_now: finite, from 1970 on, not '
                'after it, at most 10000; planned_until between the latest of them and now.'
        );
    END IF;
    v_times := ARRAY(SELECT DISTINCT u.t FROM unnest(fire_schedule.plan_times) AS u (t) ORDER BY u.t);
    v_max_time := v_times[cardinality(v_times)];
    v_until := coalesce(fire_schedule.planned_until, v_max_time);
    -- Bounded: a next run years away would silently stop the schedule. The longest gap the
    -- cron grammar allows is a 29 February after a skipped leap year: 8 years.
    IF fire_schedule.next_run_at IS NULL OR NOT isfinite(fire_schedule.next_run_at)
        OR fire_schedule.next_run_at < c_min_time
        OR fire_schedule.next_run_at <= v_max_time
        OR fire_schedule.next_run_at > v_now + c_max_next_run THEN
        PERFORM pgrun._raise(
            'schedule.invalid_next_run_at',
            format(
                'next_run_at %s is NULL, not finite, before %s, not after the latest plan time %s, or more '
                'than %s after now (%s)',
                coalesce(fire_schedule.next_run_at::text, 'NULL'), c_min_time, coalesce(v_max_time::text, '(none)'),
                c_max_next_run, v_now
            ),
            'Pass the first plan time after the database''s now, computed from the cron expression '
                '(or, with keep_claim, the first plan time after this chunk).'
        );
    END IF;

    v_s := pgrun._schedule_lock_claimed(fire_schedule.schedule_id, fire_schedule.claim_token, v_now);
    PERFORM pgrun._schedule_check_active(v_s);

    SELECT
        coalesce(array_agg(f.plan_time ORDER BY f.plan_time, f.scope), '{}'),
        coalesce(array_agg(f.scope ORDER BY f.plan_time, f.scope), '{}'),
        coalesce(array_agg(f.job_id ORDER BY f.plan_time, f.scope), '{}'),
        coalesce(array_agg(f.created ORDER BY f.plan_time, f.scope), '{}')
    INTO v_plan_times, v_scopes, v_job_ids, v_created
    FROM pgrun._schedule_fire(v_s, v_times, coalesce(fire_schedule.scheduler_id, v_s.claimed_by)) AS f;

    UPDATE pgrun.job_schedules AS s
    SET planned_until = greatest(s.planned_until, v_until),
        next_run_at = fire_schedule.next_run_at,
        last_plan_at = CASE
            WHEN v_max_time IS NULL THEN s.last_plan_at
            ELSE greatest(s.last_plan_at, v_max_time)
        END,
        last_fired_at = CASE WHEN true = ANY (v_created) THEN v_now ELSE s.last_fired_at END,
        claimed_by = CASE WHEN fire_schedule.keep_claim THEN s.claimed_by END,
        claim_token = CASE WHEN fire_schedule.keep_claim THEN s.claim_token END,
        claim_expires_at = CASE WHEN fire_schedule.keep_claim THEN s.claim_expires_at END,
        updated_at = v_now
    WHERE s.id = v_s.id;

    RETURN QUERY SELECT * FROM unnest(v_plan_times, v_scopes, v_job_ids, v_created);
END;
$$;

COMMENT ON FUNCTION pgrun.fire_schedule(uuid, timestamptz[], timestamptz, uuid, timestamptz, text, boolean) IS
'Fire a schedule''s plan times: one tick and one job per (scope, plan time), ever: a plan time fired '
'before (by any scheduler) returns its job with created = false. plan_times: finite, from 1970 on, not '
'after the database''s now, at most 10000 and at most 10000 ticks with the scopes (empty fires nothing). '
'next_run_at: when the schedule is due again, after every plan time, at most 10 years from now. '
'claim_token (required): the one claim_due_schedules returned; it must still be the schedule''s live '
'claim (else schedule.claim_lost, RQ004, nothing written), and the claim is released, unless keep_claim: '
'then the caller fires the next chunk of a long catch-up under the same claim (pass planned_until = the '
'chunk''s last plan time and next_run_at = the next plan time, so a scheduler that dies in between leaves '
'the rest to the next claimer). Paused and disabled schedules never fire (schedule.not_active, RQ001). '
'planned_until (default the latest plan time, at most now): every plan time up to it counts as decided, '
'fired or skipped. scheduler_id (default the claimer''s): as claim_due_schedules checks it. Jobs are '
'ordinary jobs (jobs.schedule_id set, run_at = plan time; scoped: payload "scope"). Returns plan_time, '
'scope, job_id, created. Errors (RQ003): schedule.invalid_argument, schedule.invalid_scheduler_id, '
'schedule.invalid_plan_times, schedule.invalid_next_run_at; schedule.not_found (RQ002); schedule.claim_lost '
'(RQ004); schedule.not_active (RQ001).';

-- The ticks and jobs of plan times p_times of schedule p_s, one per (plan time, scope), ever:
-- the tick insert ON CONFLICT DO NOTHING decides, and only the ticks this call inserted make
-- jobs (one call of pgrun._enqueue_insert_jobs: the jobs, one NOTIFY per queue). Returns
-- every (plan_time, scope) with the job its tick names and whether this call created it. The
-- caller holds the schedule row (FOR UPDATE) and updates its planning state.
CREATE OR REPLACE FUNCTION pgrun._schedule_fire(
    p_s pgrun.job_schedules,
    p_times timestamptz[],
    p_fired_by text
)
RETURNS TABLE (plan_time timestamptz, scope text, job_id uuid, created boolean)
LANGUAGE plpgsql
VOLATILE
AS $$
DECLARE
    v_now timestamptz := pgrun.now();
    v_scopes text[] := CASE WHEN p_s.scope_kind = 'none' THEN ARRAY['']::text[] ELSE p_s.scopes END;
    v_jobs pgrun._new_job[];
    v_new_ids uuid[];
BEGIN
    IF cardinality(p_times) * cardinality(v_scopes) > 10000 THEN
        PERFORM pgrun._raise(
            'schedule.invalid_plan_times',
            format('%s plan times x %s scopes is over 10000 ticks in one call',
                cardinality(p_times), cardinality(v_scopes)),
            'Fire a long catch-up in chunks of at most 10000 ticks under one claim (keep_claim => true '
                'on every chunk but the last).'
        );
    END IF;

    WITH wanted AS MATERIALIZED (
        SELECT p.t AS plan_time, sc.scope, pgrun.uuidv7() AS job_id
        FROM unnest(p_times) AS p (t)
        CROSS JOIN unnest(v_scopes) AS sc (scope)
        ORDER BY p.t, sc.scope
    ),
    ticks AS (
        INSERT INTO pgrun.schedule_ticks AS t (
            schedule_id, scope, plan_time, job_id, status, fired_by, created_at, updated_at
        )
        SELECT p_s.id, w.scope, w.plan_time, w.job_id, 'fired', p_fired_by, v_now, v_now
        FROM wanted AS w
        ORDER BY w.plan_time, w.scope
        ON CONFLICT ON CONSTRAINT schedule_ticks_pkey DO NOTHING
        RETURNING t.scope, t.plan_time, t.job_id
    )
    SELECT array_agg(ROW(
        k.job_id,
        p_s.job_type,
        CASE WHEN p_s.scope_kind = 'none' THEN p_s.payload
            ELSE p_s.payload || jsonb_build_object('scope', k.scope) END,
        p_s.queue,
        p_s.priority,
        p_s.max_attempts,
        p_s.timeout_seconds,
        k.plan_time,
        CASE WHEN p_s.scope_kind = 'organization' THEN k.scope::uuid ELSE p_s.organization_id END,
        NULL, NULL, NULL, NULL,
        p_s.id
    )::pgrun._new_job)
    INTO v_jobs
    -- the jobs go in in id order
    FROM (SELECT z.* FROM ticks AS z ORDER BY z.job_id) AS k;

    -- Only the ticks this call inserted make jobs, through the one insert every new job goes
    -- through; no idempotency key, so each of them is inserted (and its id returned).
    IF v_jobs IS NOT NULL THEN
        v_new_ids := pgrun._enqueue_insert_jobs(v_jobs);
    END IF;

    RETURN QUERY
    SELECT t.plan_time, t.scope, t.job_id, t.job_id = ANY (coalesce(v_new_ids, '{}'::uuid[]))
    FROM unnest(p_times) AS p (t)
    CROSS JOIN unnest(v_scopes) AS sc (scope)
    INNER JOIN pgrun.schedule_ticks AS t
        ON t.schedule_id = p_s.id AND t.scope = sc.scope AND t.plan_time = p.t
    ORDER BY t.plan_time, t.scope;
END;
$$;

REVOKE EXECUTE ON FUNCTION pgrun._schedule_fire(pgrun.job_schedules, timestamptz[], text) FROM public;

COMMENT ON FUNCTION pgrun._schedule_fire(pgrun.job_schedules, timestamptz[], text) IS
'Private: the ticks and jobs of a schedule''s plan times, each (plan time, scope) once ever; returns '
'plan_time, scope, job_id, created.';

-- Paused and disabled schedules never fire: schedule.not_active (RQ001).
CREATE OR REPLACE FUNCTION pgrun._schedule_check_active(p_s pgrun.job_schedules)
RETURNS void
LANGUAGE plpgsql
STABLE
AS $$
BEGIN
    IF NOT p_s.enabled OR p_s.paused_at IS NOT NULL THEN
        PERFORM pgrun._raise(
            'schedule.not_active',
            format('schedule %s (%s) is %s', p_s.id, p_s.name,
                CASE WHEN p_s.paused_at IS NOT NULL THEN format('paused since %s', p_s.paused_at)
                    ELSE 'disabled' END),
            'A paused or disabled schedule does not fire; resume_schedule, or upsert it with '
                'enabled => true, first.'
        );
    END IF;
END;
$$;

REVOKE EXECUTE ON FUNCTION pgrun._schedule_check_active(pgrun.job_schedules) FROM public;

COMMENT ON FUNCTION pgrun._schedule_check_active(pgrun.job_schedules) IS
'Private: raises schedule.not_active (RQ001) for a paused or disabled schedule.';

CREATE OR REPLACE FUNCTION pgrun.run_schedule_now(name text, organization_id uuid DEFAULT NULL)
RETURNS TABLE (plan_time timestamptz, scope text, job_id uuid, created boolean)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_now timestamptz := pgrun.now();
    v_s pgrun.job_schedules;
    v_id uuid;
    v_org uuid;
    v_plan_times timestamptz[];
    v_scopes text[];
    v_job_ids uuid[];
    v_created boolean[];
BEGIN
    SELECT l.schedule_id, l.organization_id INTO v_id, v_org
    FROM pgrun._schedule_lock(run_schedule_now.name, run_schedule_now.organization_id) AS l;
    SELECT s.* INTO v_s FROM pgrun.job_schedules AS s WHERE s.id = v_id;
    PERFORM pgrun._schedule_check_active(v_s);

    SELECT
        array_agg(f.plan_time ORDER BY f.scope), array_agg(f.scope ORDER BY f.scope),
        array_agg(f.job_id ORDER BY f.scope), array_agg(f.created ORDER BY f.scope)
    INTO v_plan_times, v_scopes, v_job_ids, v_created
    FROM pgrun._schedule_fire(v_s, ARRAY[v_now], 'run_schedule_now:' || session_user) AS f;
    IF true = ANY (v_created) THEN
        UPDATE pgrun.job_schedules AS s SET last_fired_at = v_now, updated_at = v_now WHERE s.id = v_s.id;
        PERFORM pgrun._audit(
            'schedule.run_now', v_org, v_s.id::text,
            jsonb_build_object('name', v_s.name, 'plan_time', v_now, 'job_ids', to_jsonb(v_job_ids))
        );
    END IF;
    RETURN QUERY SELECT * FROM unnest(v_plan_times, v_scopes, v_job_ids, v_created);
END;
$$;

COMMENT ON FUNCTION pgrun.run_schedule_now(text, uuid) IS
'Fire the schedule (name, organization_id) once now, by hand: one tick and one job per scope at plan time '
'= the database''s now, exactly as the scheduler would (a second call in the same transaction returns the '
'same jobs with created = false). The schedule''s planning state is untouched, so no plan time the cron '
'owes is skipped. Returns plan_time, scope, job_id, created. Errors: schedule.not_found (RQ002), '
'schedule.invalid_name, schedule.invalid_organization (RQ003), schedule.not_active (RQ001: paused or '
'disabled).';
