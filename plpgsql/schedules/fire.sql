-- fire_schedule: turn a schedule's plan times into jobs, each (scope, plan time) once, ever.
--
-- The scheduler computed plan_times with croniter from the rows claim_due_schedules gave it
-- (the database's now included), per the catch-up policy, and the next run after them. Here:
--   1. the schedule row is locked (FOR UPDATE); with a claim_token, the schedule's current
--      claim must carry it, else schedule.claim_lost and nothing is written (the claim
--      expired and another scheduler took it, or an operator paused or restated the schedule
--      since);
--   2. one tick per (plan time, scope) is inserted ON CONFLICT DO NOTHING (primary key
--      (schedule_id, scope, plan_time)), and only the ticks this call inserted make jobs:
--      one INSERT ... SELECT for the jobs (jobs.schedule_id set, run_at = the plan time) and
--      their 'enqueued' events, all in one statement. A plan time fired before, by this or
--      any other scheduler, returns the job its tick made with created = false;
--   3. planned_until moves to planned_until (default: the latest plan time), next_run_at is
--      set, last_plan_at / last_fired_at follow, and the claim is released.
-- Two schedulers firing the same plan time at once: the second's tick insert waits for the
-- first's transaction and then does nothing, so exactly one job exists per (scope, plan
-- time) whatever the claims, clocks or retries did.
--
-- Jobs: an ordinary job of the schedule's job_type and payload (scoped: plus "scope": the
-- scope), its queue / priority / max_attempts / timeout or else the job definition's, then
-- the built-in defaults (as enqueue_job resolves them). It retries and dies like any job.
-- A scope of kind organization is the job's organization_id; otherwise the schedule's.
-- The enqueue front door's core (pgrun._enqueue) has no way to stamp jobs.schedule_id or
-- to insert only for new ticks inside one statement, so the insert is written here,
-- set-based, with the same defaults; the validation is the front door's own
-- (upsert_schedule runs pgrun._enqueue_check) and the wake-up its pgrun._notify_queues.
--
-- Locks, in order: the job_schedules row; the new schedule_ticks keys in (plan_time, scope)
-- order; the inserted jobs.
--
-- Errors: schedule.invalid_argument (NULL schedule_id), schedule.invalid_plan_times (NULL,
-- not one-dimensional, NULL elements, not finite, after now, over 10000, more than 100000
-- ticks with the scopes, planned_until before a plan time or after now),
-- schedule.invalid_next_run_at (NULL, not finite, not after every plan time) (RQ003);
-- schedule.not_found (RQ002); schedule.claim_lost (RQ004).

CREATE OR REPLACE FUNCTION pgrun.fire_schedule(
    schedule_id uuid,
    plan_times timestamptz[],
    next_run_at timestamptz,
    claim_token uuid DEFAULT NULL,
    planned_until timestamptz DEFAULT NULL,
    scheduler_id text DEFAULT NULL
)
RETURNS TABLE (plan_time timestamptz, scope text, job_id uuid, created boolean)
LANGUAGE plpgsql
VOLATILE
SET search_path = ''
AS $$
DECLARE
    v_now timestamptz := pgrun.now();
    v_s pgrun.job_schedules;
    v_times timestamptz[];
    v_max_time timestamptz;
    v_until timestamptz;
    v_scopes text[];
    v_problem text;
    v_new_ids uuid[];
    v_queues text[];
BEGIN
    IF fire_schedule.schedule_id IS NULL THEN
        RAISE EXCEPTION 'schedule.invalid_argument' USING
            ERRCODE = 'RQ003',
            DETAIL = 'schedule_id is NULL',
            HINT = 'Pass the schedule_id claim_due_schedules returned.';
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
        WHEN EXISTS (SELECT FROM unnest(fire_schedule.plan_times) AS u (t) WHERE u.t > v_now)
            THEN format(
                'plan time %s is after the database''s now (%s)',
                (SELECT max(u.t) FROM unnest(fire_schedule.plan_times) AS u (t)), v_now
            )
        WHEN NOT isfinite(fire_schedule.planned_until) OR fire_schedule.planned_until > v_now
            THEN format('planned_until %s is not finite or after the database''s now (%s)',
                fire_schedule.planned_until, v_now)
        WHEN fire_schedule.planned_until < (SELECT max(u.t) FROM unnest(fire_schedule.plan_times) AS u (t))
            THEN format('planned_until %s is before a plan time', fire_schedule.planned_until)
    END;
    IF v_problem IS NOT NULL THEN
        RAISE EXCEPTION 'schedule.invalid_plan_times' USING
            ERRCODE = 'RQ003',
            DETAIL = v_problem,
            HINT = 'Pass the plan times computed from claim_due_schedules'' db_now: finite, not after '
                'it, at most 10000; planned_until between the latest of them and now.';
    END IF;
    v_times := ARRAY(SELECT DISTINCT u.t FROM unnest(fire_schedule.plan_times) AS u (t) ORDER BY u.t);
    v_max_time := v_times[cardinality(v_times)];
    v_until := coalesce(fire_schedule.planned_until, v_max_time);
    IF fire_schedule.next_run_at IS NULL OR NOT isfinite(fire_schedule.next_run_at)
        OR fire_schedule.next_run_at <= v_max_time THEN
        RAISE EXCEPTION 'schedule.invalid_next_run_at' USING
            ERRCODE = 'RQ003',
            DETAIL = format('next_run_at %s is NULL, not finite, or not after the latest plan time %s',
                coalesce(fire_schedule.next_run_at::text, 'NULL'), coalesce(v_max_time::text, '(none)')),
            HINT = 'Pass the first plan time after the database''s now, computed from the cron expression.';
    END IF;

    SELECT s.* INTO v_s FROM pgrun.job_schedules AS s WHERE s.id = fire_schedule.schedule_id FOR UPDATE;
    IF v_s.id IS NULL THEN
        RAISE EXCEPTION 'schedule.not_found' USING
            ERRCODE = 'RQ002',
            DETAIL = format('no schedule with id %s', fire_schedule.schedule_id),
            HINT = 'The schedule was deleted; drop the plan.';
    END IF;
    IF fire_schedule.claim_token IS NOT NULL AND v_s.claim_token IS DISTINCT FROM fire_schedule.claim_token THEN
        RAISE EXCEPTION 'schedule.claim_lost' USING
            ERRCODE = 'RQ004',
            DETAIL = format(
                'schedule %s (%s): %s', v_s.id, v_s.name,
                CASE
                    WHEN v_s.claim_token IS NULL
                        THEN 'no scheduler holds a claim on it now (released, paused or restated since)'
                    ELSE format('scheduler %s claimed it since, until %s', v_s.claimed_by, v_s.claim_expires_at)
                END
            ),
            HINT = 'Drop this plan: another scheduler (or the next pass) plans the schedule from its '
                'current state.';
    END IF;
    v_scopes := CASE WHEN v_s.scope_kind = 'none' THEN ARRAY['']::text[] ELSE v_s.scopes END;
    IF cardinality(v_times) * cardinality(v_scopes) > 100000 THEN
        RAISE EXCEPTION 'schedule.invalid_plan_times' USING
            ERRCODE = 'RQ003',
            DETAIL = format('%s plan times x %s scopes is over 100000 ticks in one call',
                cardinality(v_times), cardinality(v_scopes)),
            HINT = 'Fire fewer plan times per call.';
    END IF;

    WITH wanted AS MATERIALIZED (
        SELECT p.t AS plan_time, sc.scope, pgrun.uuidv7() AS job_id
        FROM unnest(v_times) AS p (t)
        CROSS JOIN unnest(v_scopes) AS sc (scope)
        ORDER BY p.t, sc.scope
    ),
    ticks AS (
        INSERT INTO pgrun.schedule_ticks AS t (
            schedule_id, scope, plan_time, job_id, status, fired_by, created_at, updated_at
        )
        SELECT
            v_s.id, w.scope, w.plan_time, w.job_id, 'fired',
            coalesce(fire_schedule.scheduler_id, v_s.claimed_by), v_now, v_now
        FROM wanted AS w
        ORDER BY w.plan_time, w.scope
        ON CONFLICT ON CONSTRAINT schedule_ticks_pkey DO NOTHING
        RETURNING t.scope, t.plan_time, t.job_id
    ),
    made AS (
        INSERT INTO pgrun.jobs AS j (
            id, job_type, queue, priority, status, payload, run_at, max_attempts, timeout_seconds,
            backoff_base_seconds, backoff_max_seconds, backoff_jitter, organization_id, schedule_id,
            created_at, updated_at
        )
        SELECT
            k.job_id,
            v_s.job_type,
            coalesce(v_s.queue, d.queue, 'default'),
            coalesce(v_s.priority, d.priority, 100),
            'queued',
            CASE WHEN v_s.scope_kind = 'none' THEN v_s.payload
                ELSE v_s.payload || jsonb_build_object('scope', k.scope) END,
            k.plan_time,
            coalesce(v_s.max_attempts, d.max_attempts, 20),
            coalesce(v_s.timeout_seconds, d.timeout_seconds),
            coalesce(d.backoff_base_seconds, 2),
            coalesce(d.backoff_max_seconds, 3600),
            coalesce(d.backoff_jitter, 0.2),
            CASE WHEN v_s.scope_kind = 'organization' THEN k.scope::uuid ELSE v_s.organization_id END,
            v_s.id,
            v_now,
            v_now
        FROM ticks AS k
        LEFT JOIN pgrun.job_definitions AS d ON d.job_type = v_s.job_type
        ORDER BY k.job_id
        RETURNING j.id, j.queue
    ),
    events AS (
        INSERT INTO pgrun.job_events (job_id, event, from_status, to_status, attempt, detail, created_at)
        SELECT m.id, 'enqueued', NULL, 'queued', 0, jsonb_build_object('schedule_id', v_s.id), v_now
        FROM made AS m
    )
    SELECT array_agg(m.id), array_agg(DISTINCT m.queue) INTO v_new_ids, v_queues
    FROM made AS m;

    UPDATE pgrun.job_schedules AS s
    SET planned_until = greatest(s.planned_until, v_until),
        next_run_at = fire_schedule.next_run_at,
        last_plan_at = CASE
            WHEN v_max_time IS NULL THEN s.last_plan_at
            ELSE greatest(s.last_plan_at, v_max_time)
        END,
        last_fired_at = CASE WHEN v_new_ids IS NULL THEN s.last_fired_at ELSE v_now END,
        claimed_by = CASE WHEN fire_schedule.claim_token IS NULL THEN s.claimed_by END,
        claim_token = CASE WHEN fire_schedule.claim_token IS NULL THEN s.claim_token END,
        claim_expires_at = CASE WHEN fire_schedule.claim_token IS NULL THEN s.claim_expires_at END,
        updated_at = v_now
    WHERE s.id = v_s.id;

    IF v_queues IS NOT NULL THEN
        PERFORM pgrun._notify_queues(v_queues);
    END IF;

    RETURN QUERY
    SELECT t.plan_time, t.scope, t.job_id, t.job_id = ANY (coalesce(v_new_ids, '{}'::uuid[]))
    FROM unnest(v_times) AS p (t)
    CROSS JOIN unnest(v_scopes) AS sc (scope)
    INNER JOIN pgrun.schedule_ticks AS t
        ON t.schedule_id = v_s.id AND t.scope = sc.scope AND t.plan_time = p.t
    ORDER BY t.plan_time, t.scope;
END;
$$;

COMMENT ON FUNCTION pgrun.fire_schedule(uuid, timestamptz[], timestamptz, uuid, timestamptz, text) IS
'Fire a schedule''s plan times: one tick and one job per (scope, plan time), ever: a plan time fired '
'before (by any scheduler) returns its job with created = false. plan_times: finite, not after the '
'database''s now, at most 10000 (empty fires nothing). next_run_at: when the schedule is due again, after '
'every plan time. claim_token: the one claim_due_schedules returned; when given it must still be the '
'schedule''s claim (else schedule.claim_lost, RQ004, nothing written), and the claim is released. '
'planned_until (default the latest plan time, at most now): every plan time up to it counts as decided, '
'fired or skipped. Jobs are ordinary jobs (jobs.schedule_id set, run_at = plan time; scoped: payload '
'"scope"). Returns plan_time, scope, job_id, created. Errors (RQ003): schedule.invalid_argument, '
'schedule.invalid_plan_times, schedule.invalid_next_run_at; schedule.not_found (RQ002).';
