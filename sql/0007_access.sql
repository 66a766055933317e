-- 0007 access: the tables behind pgrun's role model (docs/security.md).
--
-- * install_roles: the names of pgrun's five group roles in this database (owner, admin,
--   producer, worker, reader), from a prefix chosen at install time (`pgrun migrate
--   --role-prefix`, default pgrun). The roles themselves, the ownership of every object and
--   every grant are (re)applied by pgrun._security_apply() (plpgsql/admin/security.sql) at
--   the end of each migrate, because the plpgsql tree drops and recreates its functions.
-- * role_access: what a database role may act for. Tenancy: the organizations it is bound
--   to (organization_ids), or any organization it names (any_organization); a role without
--   a row acts for work without an organization only. Worker scope: the queues and job
--   types it may claim and declare (NULL = any).
-- * audit_log: who did what, for every admin and producer action that is not a job
--   transition (job transitions keep theirs in job_events, whose new actor column names
--   the database role behind cancel and requeue).
-- * queue_depth and job_metrics become functions (they scope by the caller's tenancy), so
--   the two views are dropped; no client role could read them anyway.
--
-- Every built-in call is schema-qualified: a migration runs with the migrator's search_path.

CREATE TABLE pgrun.install_roles (
    kind text PRIMARY KEY,
    role_name name NOT NULL UNIQUE,
    CONSTRAINT install_roles_kind_check CHECK (
        -- owner: owns every pgrun object; the API's SECURITY DEFINER functions run as it
        -- admin: every function, every organization
        -- producer: enqueue, inspect, cancel and steer its own organization's work
        -- worker: claim and finish jobs, reap, plan schedules, declare its job types
        -- reader: inspection and metrics of its own organization's work
        kind IN ('owner', 'admin', 'producer', 'worker', 'reader')
    )
);

COMMENT ON TABLE pgrun.install_roles IS
'The names of pgrun''s group roles in this database, from the role prefix chosen at install time.';

DO $pgrun_roles$
DECLARE
    -- (coalesce and nullif are SQL syntax, not functions: they cannot be redirected)
    v_prefix text := coalesce(nullif(pg_catalog.current_setting('pgrun.role_prefix', TRUE), ''), 'pgrun');
BEGIN
    IF v_prefix OPERATOR(pg_catalog.!~) '^[a-z][a-z0-9_]{0,39}$' THEN
        RAISE EXCEPTION 'access.invalid_role_prefix'
        USING ERRCODE = 'RQ003',
        DETAIL = pg_catalog.format('role prefix %L is not 1..40 lowercase letters, digits or _', v_prefix),
        HINT = 'Pass e.g. --role-prefix pgrun_billing; the default is pgrun.';
    END IF;
    INSERT INTO pgrun.install_roles (kind, role_name)
    SELECT k.kind, (v_prefix OPERATOR(pg_catalog.||) '_' OPERATOR(pg_catalog.||) k.kind)::name
    FROM pg_catalog.unnest(ARRAY['owner', 'admin', 'producer', 'worker', 'reader']) AS k (kind);
END;
$pgrun_roles$;

CREATE TABLE pgrun.role_access (
    role regrole PRIMARY KEY,
    -- tenancy: bound to these organizations, or to any it names; neither = no organization
    organization_ids uuid[],
    any_organization boolean NOT NULL DEFAULT FALSE,
    -- worker scope: the queues and job types it may claim and declare (NULL = any)
    queues text[],
    job_types text[],
    updated_at timestamptz NOT NULL DEFAULT pgrun.now(),
    updated_by text NOT NULL,
    CONSTRAINT role_access_tenancy_check CHECK (
        NOT (any_organization AND organization_ids IS NOT NULL)
        AND pg_catalog.cardinality(organization_ids) BETWEEN 1 AND 10000
        AND pg_catalog.array_position(organization_ids, NULL) IS NULL
    ),
    CONSTRAINT role_access_scope_check CHECK (
        pg_catalog.cardinality(queues) BETWEEN 1 AND 1000
        AND pg_catalog.array_position(queues, NULL) IS NULL
        AND pg_catalog.cardinality(job_types) BETWEEN 1 AND 1000
        AND pg_catalog.array_position(job_types, NULL) IS NULL
    )
);

COMMENT ON TABLE pgrun.role_access IS
'What a database role may act for: its organizations (or any it names) and the queues and job types it '
'may claim and declare. set_role_access writes it; a role without a row acts for no organization.';

CREATE TABLE pgrun.audit_log (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    created_at timestamptz NOT NULL DEFAULT pgrun.now(),
    -- the database role the connection logged in as (session_user)
    actor text NOT NULL,
    action text NOT NULL,
    organization_id uuid,
    -- what the action was about: a job type, a schedule id, a run id, a role
    subject text,
    detail jsonb NOT NULL DEFAULT '{}',
    CONSTRAINT audit_log_action_check CHECK (
        -- job_definition.upserted: upsert_job_definition changed a definition
        -- job_runtime_config.set: set_job_runtime_config (pause, resume, caps)
        -- jobs.purged: purge_finished_jobs deleted jobs (counts, cutoff)
        -- schedule.upserted / paused / resumed / deleted / run_now: the schedule functions
        -- workflow_run.cancelled: cancel_workflow_run; workflow_run.appended:
        -- append_workflow_steps; workflow_step.completed: complete_external_step
        -- role_access.set / removed: set_role_access, remove_role_access
        action IN (
            'job_definition.upserted', 'job_runtime_config.set', 'jobs.purged',
            'schedule.upserted', 'schedule.paused', 'schedule.resumed', 'schedule.deleted',
            'schedule.run_now', 'workflow_run.cancelled', 'workflow_run.appended',
            'workflow_step.completed', 'role_access.set', 'role_access.removed'
        )
    ),
    CONSTRAINT audit_log_detail_check CHECK (pg_catalog.jsonb_typeof(detail) = 'object')
);

COMMENT ON TABLE pgrun.audit_log IS
'Append-only: one row per admin or producer action that is not a job transition: who (the login role), '
'what, for which organization, on what.';

ALTER TABLE pgrun.job_events ADD COLUMN actor text;

COMMENT ON COLUMN pgrun.job_events.actor IS
'The database role (session_user) behind an operator transition: cancel_job, requeue_job, '
'cancel_workflow_run. NULL for the worker''s and the reaper''s transitions (worker_id says who).';

DROP VIEW pgrun.queue_depth;
DROP VIEW pgrun.job_metrics;
