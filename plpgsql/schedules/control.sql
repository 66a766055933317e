-- pause_schedule, resume_schedule, delete_schedule, list_schedules: the operator's side.
--
-- A schedule is named by (name, organization): the organization the caller acts for
-- (pgrun._caller_organization: the one named; NULL is none, or the only organization a bound
-- role has). A schedule of an organization the caller may not act for is schedule.not_found.
-- The nil uuid is no organization: schedule.invalid_organization, nothing touched.
-- Each pause, resume and delete that changed something leaves an audit_log row.
--
-- pause_schedule sets paused_at: the schedule leaves the due index, so no scheduler claims
-- it, and any scheduler's current claim is dropped (its fire_schedule raises
-- schedule.claim_lost, so nothing computed before the pause fires after it). Jobs already
-- made are not touched. Pausing a paused schedule changes nothing (changed = false).
--
-- resume_schedule clears paused_at (and paused_reason, when the scheduler paused it as
-- unplannable) and makes the schedule due at once (next_run_at = now).
-- Whether the paused window is replayed is the catch-up policy's call:
--   * all    replays it: every plan time of the window fires (the most recent backfill_limit);
--   * latest and none do not: planned_until moves to now, so only plan times after the
--     resume fire.
-- Resuming a schedule that is not paused changes nothing (changed = false).
--
-- delete_schedule removes the schedule and its ticks; jobs it made stay (they are ordinary
-- jobs; jobs.schedule_id keeps the old id). A schedule made again under the same name is a
-- new schedule: it owes nothing from before its creation.
--
-- list_schedules pages like list_jobs: in schedule_id (creation) order, after_id the last id
-- of the page before, max_rows 1..1000 (default 100).
--
-- Locks: the schedule's row (FOR UPDATE, then the update or delete; delete cascades to its
-- ticks). list_schedules takes none.
--
-- Errors: schedule.not_found (RQ002); schedule.invalid_name (RQ003, NULL name);
-- schedule.invalid_organization (RQ003, the nil uuid); schedule.invalid_max_rows (RQ003,
-- list_schedules); access.organization_required (RQ003: the caller acts for several
-- organizations).

CREATE OR REPLACE FUNCTION pgrun.pause_schedule(name text, organization_id uuid DEFAULT NULL)
RETURNS TABLE (schedule_id uuid, paused_at timestamptz, changed boolean)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_id uuid;
    v_org uuid;
    v_now timestamptz := pgrun.now();
BEGIN
    SELECT l.schedule_id, l.organization_id INTO v_id, v_org
    FROM pgrun._schedule_lock(pause_schedule.name, pause_schedule.organization_id) AS l;
    RETURN QUERY
    UPDATE pgrun.job_schedules AS s
    SET paused_at = v_now,
        claimed_by = NULL,
        claim_token = NULL,
        claim_expires_at = NULL,
        updated_at = v_now
    WHERE s.id = v_id AND s.paused_at IS NULL
    RETURNING s.id, s.paused_at, true;
    IF NOT FOUND THEN
        RETURN QUERY SELECT s.id, s.paused_at, false FROM pgrun.job_schedules AS s WHERE s.id = v_id;
        RETURN;
    END IF;
    PERFORM pgrun._audit('schedule.paused', v_org, v_id::text, jsonb_build_object('name', pause_schedule.name));
END;
$$;

COMMENT ON FUNCTION pgrun.pause_schedule(text, uuid) IS
'Pause the schedule (name, organization_id): no scheduler claims it until resume_schedule, and a '
'scheduler''s current claim is dropped (its fire_schedule raises schedule.claim_lost). Jobs already made '
'are untouched; upsert_schedule never unpauses. Returns schedule_id, paused_at, changed (false when it was '
'already paused). Errors: schedule.not_found (RQ002), schedule.invalid_name, schedule.invalid_organization, '
'access.organization_required (RQ003).';

CREATE OR REPLACE FUNCTION pgrun.resume_schedule(name text, organization_id uuid DEFAULT NULL)
RETURNS TABLE (schedule_id uuid, next_run_at timestamptz, changed boolean)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_id uuid;
    v_org uuid;
    v_now timestamptz := pgrun.now();
BEGIN
    SELECT l.schedule_id, l.organization_id INTO v_id, v_org
    FROM pgrun._schedule_lock(resume_schedule.name, resume_schedule.organization_id) AS l;
    RETURN QUERY
    UPDATE pgrun.job_schedules AS s
    SET paused_at = NULL,
        planned_until = CASE
            WHEN s.catch_up = 'all' THEN s.planned_until
            ELSE greatest(s.planned_until, v_now)
        END,
        paused_reason = NULL,
        next_run_at = v_now,
        updated_at = v_now
    WHERE s.id = v_id AND s.paused_at IS NOT NULL
    RETURNING s.id, s.next_run_at, true;
    IF NOT FOUND THEN
        RETURN QUERY SELECT s.id, s.next_run_at, false FROM pgrun.job_schedules AS s WHERE s.id = v_id;
        RETURN;
    END IF;
    PERFORM pgrun._audit('schedule.resumed', v_org, v_id::text, jsonb_build_object('name', resume_schedule.name));
END;
$$;

COMMENT ON FUNCTION pgrun.resume_schedule(text, uuid) IS
'Resume a paused schedule (name, organization_id); it is due at once. The paused window is replayed only '
'with catch_up all (every plan time of the window, the most recent backfill_limit); with latest and none '
'only plan times after the resume fire. Returns schedule_id, next_run_at, changed (false when it was not '
'paused). Errors: schedule.not_found (RQ002), schedule.invalid_name, schedule.invalid_organization, '
'access.organization_required (RQ003).';

CREATE OR REPLACE FUNCTION pgrun.delete_schedule(name text, organization_id uuid DEFAULT NULL)
RETURNS TABLE (schedule_id uuid, ticks_deleted bigint)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_id uuid;
    v_org uuid;
    v_ticks bigint;
BEGIN
    SELECT l.schedule_id, l.organization_id INTO v_id, v_org
    FROM pgrun._schedule_lock(delete_schedule.name, delete_schedule.organization_id) AS l;
    SELECT count(*) INTO v_ticks FROM pgrun.schedule_ticks AS t WHERE t.schedule_id = v_id;
    DELETE FROM pgrun.job_schedules AS s WHERE s.id = v_id;
    PERFORM pgrun._audit(
        'schedule.deleted', v_org, v_id::text,
        jsonb_build_object('name', delete_schedule.name, 'ticks_deleted', v_ticks)
    );
    RETURN QUERY SELECT v_id, v_ticks;
END;
$$;

COMMENT ON FUNCTION pgrun.delete_schedule(text, uuid) IS
'Delete the schedule (name, organization_id) and its ticks. Jobs it made stay, as ordinary jobs. Returns '
'schedule_id and the number of ticks deleted. Errors: schedule.not_found (RQ002), schedule.invalid_name, '
'schedule.invalid_organization, access.organization_required (RQ003).';

-- list_schedules' page size: max_rows (NULL: 100), or raises schedule.invalid_max_rows
-- (outside 1..1000) or schedule.invalid_organization (the nil uuid). Evaluated once, as the
-- LIMIT of list_schedules, before any row is read.
CREATE OR REPLACE FUNCTION pgrun._schedule_page_size(p_organization_id uuid, p_max_rows integer)
RETURNS integer
LANGUAGE plpgsql
IMMUTABLE
AS $$
DECLARE
    v_limit integer := coalesce(p_max_rows, 100);
BEGIN
    PERFORM pgrun._schedule_check_organization(p_organization_id);
    IF v_limit NOT BETWEEN 1 AND 1000 THEN
        PERFORM pgrun._raise(
            'schedule.invalid_max_rows',
            format('max_rows %s is outside 1..1000', v_limit),
            'Page with after_id (the last schedule_id of the page before) instead of asking for more '
                'rows at once.'
        );
    END IF;
    RETURN v_limit;
END;
$$;

REVOKE EXECUTE ON FUNCTION pgrun._schedule_page_size(uuid, integer) FROM public;

COMMENT ON FUNCTION pgrun._schedule_page_size(uuid, integer) IS
'Private: list_schedules'' page size, or raises schedule.invalid_max_rows / schedule.invalid_organization (RQ003).';

CREATE OR REPLACE FUNCTION pgrun.list_schedules(
    organization_id uuid DEFAULT NULL,
    after_id uuid DEFAULT NULL,
    max_rows integer DEFAULT 100
)
RETURNS TABLE (
    schedule_id uuid,
    name text,
    organization_id uuid,
    cron text,
    timezone text,
    job_type text,
    queue text,
    priority integer,
    catch_up text,
    backfill_limit integer,
    scope_kind text,
    scopes text[],
    forbid_stale_reentry boolean,
    enabled boolean,
    paused_at timestamptz,
    paused_reason text,
    next_run_at timestamptz,
    last_plan_at timestamptz,
    last_fired_at timestamptz,
    planned_until timestamptz,
    claimed_by text,
    created_at timestamptz,
    updated_at timestamptz
)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT
        s.id, s.name, s.organization_id, s.cron, s.timezone, s.job_type, s.queue, s.priority,
        s.catch_up, s.backfill_limit, s.scope_kind, s.scopes, s.forbid_stale_reentry, s.enabled,
        s.paused_at, s.paused_reason, s.next_run_at, s.last_plan_at, s.last_fired_at, s.planned_until,
        s.claimed_by, s.created_at, s.updated_at
    FROM pgrun.job_schedules AS s
    CROSS JOIN pgrun._caller_scope(list_schedules.organization_id) AS c
    WHERE pgrun._in_scope(s.organization_id, c.all_organizations, c.organization_ids, c.untenanted)
        AND (list_schedules.after_id IS NULL OR s.id > list_schedules.after_id)
    ORDER BY s.id
    LIMIT pgrun._schedule_page_size(list_schedules.organization_id, list_schedules.max_rows)
$$;

COMMENT ON FUNCTION pgrun.list_schedules(uuid, uuid, integer) IS
'A page of the schedules the caller may see (its organizations; an admin: all, or with organization_id '
'that organization''s), in schedule_id (= creation) order: pass the last schedule_id you got as after_id '
'for the next page; max_rows 1..1000, default 100. Each row: the declaration, enabled / paused_at and '
'paused_reason (set when the scheduler paused it because it could not plan it), next_run_at (when a '
'scheduler looks next), last_plan_at (the latest plan time that fired) and last_fired_at (when, database '
'time), planned_until (every plan time up to it is decided) and the claiming scheduler, if any. Errors '
'(RQ003): schedule.invalid_max_rows, schedule.invalid_organization (the nil uuid).';
