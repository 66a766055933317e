-- upsert_schedule: declare a cron schedule (create it, or restate it by name).
--
-- A schedule is identified by (organization_id, name); the organization is the one the
-- caller acts for (named, or its role's only one; another is access.organization_denied),
-- a worker declares schedules of the job types in its scope only, and a schedule scoped by
-- organization needs a caller that may name any. A created or changed schedule leaves an
-- audit_log row. The call states the whole
-- declaration (cron, timezone, the job template, catch-up policy, scopes, enabled): every
-- argument left out takes its default, as upsert_job_definition does. The operator's pause
-- (pause_schedule) is not part of the declaration and survives any upsert, so an app that
-- upserts its schedules at every start never resumes one an operator paused. A schedule the
-- scheduler paused because it could not plan it (paused_reason set; an expression outside
-- the grammar from an older install) is resumed by an upsert that changes its declaration.
--
-- Planning state: a new schedule starts with planned_until = now (plan times up to its
-- creation are never owed) and next_run_at = now (the next scheduler pass computes the first
-- real next run). Restating an identical declaration changes nothing (changed = false, no
-- write). A changed declaration drops any scheduler's claim (its fire_schedule then raises
-- schedule.claim_lost, so plan times computed from the old cron are never fired) and sets
-- next_run_at = now so the new expression is planned at once; plan times already decided
-- (<= planned_until) stay decided. Enabling a disabled schedule follows resume_schedule's
-- rule: catch_up all replays the disabled window (up to backfill_limit), latest and none
-- start from now.
--
-- Validation, before anything is written, each value's length before any pattern: the
-- name; the cron expression (_schedule_check_cron: pgrun's cron grammar, the very set the
-- Python scheduler accepts); the time zone (pg_timezone_names);
-- the job template through the enqueue front door's own checker (pgrun._enqueue_check, so a
-- schedule accepts exactly the jobs enqueue_job accepts, with the same job.* codes: the
-- payload an object of at most 1 MiB nested at most 100 levels, pgrun._json_depth_ok);
-- catch_up, backfill_limit, misfire_grace_seconds; the scopes.
--
-- Locks: the schedule's row: looked up FOR UPDATE, or inserted (ON CONFLICT DO NOTHING on
-- job_schedules_name_idx: a racing first upsert of the name waits there, then locks the row
-- the other one made). Concurrent upserts of one name serialize on the row; the last writer
-- wins (tests_py/test_schedule_upsert_race.py).
--
-- Errors (RQ003): schedule.invalid_name, schedule.invalid_cron, schedule.invalid_timezone,
-- schedule.invalid_catch_up, schedule.invalid_backfill_limit, schedule.invalid_misfire_grace,
-- schedule.invalid_scopes, schedule.reserved_payload_key, and from the job template
-- job.invalid_type, job.invalid_payload, job.payload_too_large, job.invalid_queue,
-- job.invalid_priority, job.invalid_max_attempts, job.invalid_timeout, job.invalid_organization.

CREATE OR REPLACE FUNCTION pgrun.upsert_schedule(
    name text,
    cron text,
    job_type text,
    payload jsonb DEFAULT '{}',
    timezone text DEFAULT 'UTC',
    queue text DEFAULT NULL,
    priority integer DEFAULT NULL,
    catch_up text DEFAULT 'latest',
    backfill_limit integer DEFAULT 100,
    enabled boolean DEFAULT TRUE,
    organization_id uuid DEFAULT NULL,
    max_attempts integer DEFAULT NULL,
    timeout_seconds integer DEFAULT NULL,
    misfire_grace_seconds integer DEFAULT 60,
    scope_kind text DEFAULT 'none',
    scopes text[] DEFAULT NULL,
    forbid_stale_reentry boolean DEFAULT FALSE
)
RETURNS TABLE (schedule_id uuid, created boolean, changed boolean, next_run_at timestamptz)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_now timestamptz := pgrun.now();
    v_payload jsonb := coalesce(nullif(upsert_schedule.payload, 'null'::jsonb), '{}'::jsonb);
    v_cron text;
    v_scope_kind text := coalesce(upsert_schedule.scope_kind, 'none');
    v_scopes text[];
    v_enabled boolean := coalesce(upsert_schedule.enabled, true);
    v_forbid boolean := coalesce(upsert_schedule.forbid_stale_reentry, false);
    v_bad_code text;
    v_request jsonb;
    v_old pgrun.job_schedules;
    v_new pgrun.job_schedules;
    v_org uuid;
    v_allowed boolean;
BEGIN
    -- length first: btrim (and every check after it) only ever sees 200 characters
    IF (CASE
        WHEN upsert_schedule.name IS NULL THEN true
        WHEN length(upsert_schedule.name) NOT BETWEEN 1 AND 200 THEN true
        ELSE upsert_schedule.name <> btrim(upsert_schedule.name)
    END) THEN
        PERFORM pgrun._raise(
            'schedule.invalid_name',
            format('name %s is NULL, blank, has surrounding blanks or is over 200 characters',
                pgrun._shown(upsert_schedule.name)),
            'Name the schedule with 1..200 characters, e.g. reports.nightly.'
        );
    END IF;
    -- Tenancy: the schedule belongs to the organization the caller acts for; a worker declares
    -- schedules of the job types in its scope only (util/_access.sql).
    SELECT o.organization_id, o.allowed INTO v_org, v_allowed
    FROM pgrun._caller_organization(upsert_schedule.organization_id) AS o;
    IF NOT v_allowed THEN
        PERFORM pgrun._raise_organization_denied(v_org);
    END IF;
    v_cron := pgrun._schedule_check_cron(upsert_schedule.cron);
    PERFORM pgrun._schedule_check_timezone(upsert_schedule.timezone);

    -- the job template: exactly what enqueue_job would accept
    v_request := jsonb_build_object(
        'job_type', upsert_schedule.job_type,
        'payload', v_payload,
        'queue', upsert_schedule.queue,
        'priority', upsert_schedule.priority,
        'max_attempts', upsert_schedule.max_attempts,
        'timeout_seconds', upsert_schedule.timeout_seconds,
        'organization_id', v_org
    );
    SELECT c.bad_code INTO v_bad_code FROM pgrun._enqueue_check(jsonb_build_array(v_request)) AS c;
    IF v_bad_code IS NOT NULL THEN
        PERFORM pgrun._enqueue_raise_invalid(v_bad_code, v_request, NULL);
    END IF;

    IF upsert_schedule.catch_up IS NULL OR upsert_schedule.catch_up NOT IN ('latest', 'all', 'none') THEN
        PERFORM pgrun._raise(
            'schedule.invalid_catch_up',
            format('catch_up %s is not latest, all or none',
                pgrun._shown(upsert_schedule.catch_up)),
            'latest: after downtime fire the most recent missed plan time once; all: fire '
                'every missed one (up to backfill_limit); none: skip missed ones.'
        );
    END IF;
    IF upsert_schedule.backfill_limit IS NULL OR upsert_schedule.backfill_limit NOT BETWEEN 1 AND 10000 THEN
        PERFORM pgrun._raise(
            'schedule.invalid_backfill_limit',
            format('backfill_limit %s is outside 1..10000',
                coalesce(upsert_schedule.backfill_limit::text, 'NULL')),
            'backfill_limit caps how many missed plan times catch_up all fires at once '
                '(the most recent ones).'
        );
    END IF;
    IF upsert_schedule.misfire_grace_seconds IS NULL
        OR upsert_schedule.misfire_grace_seconds NOT BETWEEN 1 AND 86400 THEN
        PERFORM pgrun._raise(
            'schedule.invalid_misfire_grace',
            format('misfire_grace_seconds %s is outside 1..86400',
                coalesce(upsert_schedule.misfire_grace_seconds::text, 'NULL')),
            'With catch_up none, a plan time fires only if the scheduler sees it at most this '
                'many seconds late; the default is 60.'
        );
    END IF;
    v_scopes := pgrun._schedule_check_scopes(v_scope_kind, upsert_schedule.scopes, v_org);
    -- Organization scopes make jobs for other organizations: only for a caller that may act
    -- for any organization it names.
    IF v_scope_kind = 'organization'
        AND (SELECT w.allowed_organizations FROM pgrun._caller_write_organizations() AS w) IS NOT NULL THEN
        PERFORM pgrun._raise(
            'access.organization_denied',
            format('role %s may not declare a schedule scoped by organization', session_user),
            'scope_kind organization makes jobs for every organization in scopes: it needs an admin '
                'or a role that may act for any organization (pgrun.set_role_access).'
        );
    END IF;
    PERFORM pgrun._caller_check_scope(
        CASE WHEN upsert_schedule.queue IS NULL THEN NULL ELSE ARRAY[upsert_schedule.queue] END,
        ARRAY[upsert_schedule.job_type]
    );
    IF v_scope_kind <> 'none' AND v_payload ? 'scope' THEN
        PERFORM pgrun._raise(
            'schedule.reserved_payload_key',
            'the payload of a scoped schedule has a top-level "scope" key',
            'pgrun puts each job''s scope under "scope" in its payload; rename the key.'
        );
    END IF;

    -- The row of (organization, name), locked. A first upsert inserts it; when a concurrent
    -- first upsert of the same name inserted it meanwhile, the insert does nothing and the
    -- next round locks the row that one made.
    LOOP
        SELECT s.* INTO v_old
        FROM pgrun.job_schedules AS s
        WHERE coalesce(s.organization_id, '00000000-0000-0000-0000-000000000000'::uuid)
            = coalesce(v_org, '00000000-0000-0000-0000-000000000000'::uuid)
            AND s.name = upsert_schedule.name
        FOR UPDATE;
        EXIT WHEN FOUND;
        INSERT INTO pgrun.job_schedules AS s (
            name, organization_id, cron, timezone, job_type, payload, queue, priority, max_attempts,
            timeout_seconds, catch_up, backfill_limit, misfire_grace_seconds, scope_kind, scopes,
            forbid_stale_reentry, enabled, planned_until, next_run_at, created_at, updated_at
        )
        VALUES (
            upsert_schedule.name, v_org, v_cron, upsert_schedule.timezone,
            upsert_schedule.job_type, v_payload, upsert_schedule.queue, upsert_schedule.priority,
            upsert_schedule.max_attempts, upsert_schedule.timeout_seconds, upsert_schedule.catch_up,
            upsert_schedule.backfill_limit, upsert_schedule.misfire_grace_seconds, v_scope_kind, v_scopes,
            v_forbid, v_enabled, v_now, v_now, v_now, v_now
        )
        -- the only unique key a new uuidv7 id can collide on is job_schedules_name_idx, the
        -- key the lookup above reads
        ON CONFLICT DO NOTHING
        RETURNING s.* INTO v_new;
        IF v_new.id IS NOT NULL THEN
            PERFORM pgrun._schedule_audit_upsert(v_new);
            RETURN QUERY SELECT v_new.id, true, true, v_new.next_run_at;
            RETURN;
        END IF;
    END LOOP;

    IF (v_old.cron, v_old.timezone, v_old.job_type, v_old.payload, v_old.queue, v_old.priority,
        v_old.max_attempts, v_old.timeout_seconds, v_old.catch_up, v_old.backfill_limit,
        v_old.misfire_grace_seconds, v_old.scope_kind, v_old.scopes, v_old.forbid_stale_reentry,
        v_old.enabled)
        IS NOT DISTINCT FROM
        (v_cron, upsert_schedule.timezone, upsert_schedule.job_type, v_payload, upsert_schedule.queue,
        upsert_schedule.priority, upsert_schedule.max_attempts, upsert_schedule.timeout_seconds,
        upsert_schedule.catch_up, upsert_schedule.backfill_limit, upsert_schedule.misfire_grace_seconds,
        v_scope_kind, v_scopes, v_forbid, v_enabled) THEN
        RETURN QUERY SELECT v_old.id, false, false, v_old.next_run_at;
        RETURN;
    END IF;

    UPDATE pgrun.job_schedules AS s
    SET cron = v_cron,
        timezone = upsert_schedule.timezone,
        job_type = upsert_schedule.job_type,
        payload = v_payload,
        queue = upsert_schedule.queue,
        priority = upsert_schedule.priority,
        max_attempts = upsert_schedule.max_attempts,
        timeout_seconds = upsert_schedule.timeout_seconds,
        catch_up = upsert_schedule.catch_up,
        backfill_limit = upsert_schedule.backfill_limit,
        misfire_grace_seconds = upsert_schedule.misfire_grace_seconds,
        scope_kind = v_scope_kind,
        scopes = v_scopes,
        forbid_stale_reentry = v_forbid,
        enabled = v_enabled,
        -- enabling again, or restating a schedule the scheduler paused as unplannable (the
        -- new declaration passed the grammar): like resume_schedule, only catch_up all owes
        -- the window it did not fire
        planned_until = CASE
            WHEN ((v_enabled AND NOT v_old.enabled) OR v_old.paused_reason IS NOT NULL)
                AND upsert_schedule.catch_up <> 'all'
                THEN greatest(s.planned_until, v_now)
            ELSE s.planned_until
        END,
        paused_at = CASE WHEN v_old.paused_reason IS NOT NULL THEN NULL ELSE s.paused_at END,
        paused_reason = NULL,
        next_run_at = v_now,
        claimed_by = NULL,
        claim_token = NULL,
        claim_expires_at = NULL,
        updated_at = v_now
    WHERE s.id = v_old.id
    RETURNING s.* INTO v_new;
    PERFORM pgrun._schedule_audit_upsert(v_new);

    RETURN QUERY SELECT v_old.id, false, true, v_now;
END;
$$;

COMMENT ON FUNCTION pgrun.upsert_schedule(
    text, text, text, jsonb, text, text, integer, text, integer, boolean, uuid, integer, integer, integer,
    text, text[], boolean
) IS
'Create or restate the cron schedule (organization_id, name). cron: 5 fields (minute hour day month '
'weekday), 6 with seconds last, or an @macro, in pgrun''s cron grammar (docs/schedules.md; the Python '
'scheduler accepts exactly the same set), and able to fire. timezone: a pg_timezone_names name (plan '
'times follow its wall clock, DST included). Each plan time makes one job of job_type with payload, '
'queue, priority, max_attempts, timeout_seconds (NULL = the job definition''s). catch_up after downtime: '
'latest (the most recent missed plan time fires once), all (every missed one, the most recent '
'backfill_limit 1..10000), none (missed ones are skipped; a plan time fires only when seen at most '
'misfire_grace_seconds late). scope_kind organization / key with scopes: one tick and job per scope and '
'plan time (organization: the job belongs to it; the payload gets "scope"). forbid_stale_reentry: a job '
'whose lease expires is killed and its tick marked failed instead of running again. A paused schedule '
'stays paused (one the scheduler paused as unplannable resumes when restated). The schedule belongs to '
'the organization the caller acts for; a worker declares schedules of its scope''s job types only; '
'scope_kind organization needs an admin or a role that may name any organization. A created or changed '
'schedule leaves an audit_log row. Returns schedule_id, created, changed, next_run_at. Errors (42501): '
'access.organization_denied, access.queue_denied, access.job_type_denied; (RQ003) '
'access.organization_required, and (RQ003): schedule.invalid_name, schedule.invalid_cron, '
'schedule.invalid_timezone, schedule.invalid_catch_up, schedule.invalid_backfill_limit, '
'schedule.invalid_misfire_grace, schedule.invalid_scopes, schedule.reserved_payload_key, and '
'enqueue_job''s job.* input codes.';

-- The audit row of a created or changed schedule: its whole declaration.
CREATE OR REPLACE FUNCTION pgrun._schedule_audit_upsert(p_schedule pgrun.job_schedules)
RETURNS void
LANGUAGE plpgsql
VOLATILE
AS $$
BEGIN
    PERFORM pgrun._audit(
        'schedule.upserted', p_schedule.organization_id, p_schedule.id::text,
        jsonb_build_object(
            'name', p_schedule.name, 'cron', p_schedule.cron, 'timezone', p_schedule.timezone,
            'job_type', p_schedule.job_type, 'queue', p_schedule.queue, 'enabled', p_schedule.enabled,
            'catch_up', p_schedule.catch_up, 'scope_kind', p_schedule.scope_kind
        )
    );
END;
$$;

REVOKE EXECUTE ON FUNCTION pgrun._schedule_audit_upsert(pgrun.job_schedules) FROM public;

COMMENT ON FUNCTION pgrun._schedule_audit_upsert(pgrun.job_schedules) IS
'Private: the audit_log row of a schedule upsert_schedule created or changed.';
