-- The role model, applied: pgrun's group roles, who owns what, and who may call which
-- function (docs/security.md has the same matrix, in prose).
--
-- * _security_matrix: THE role x function matrix. Every public function of schema pgrun has
--   a row naming the roles (by kind) that may EXECUTE it; private functions (leading
--   underscore) are executable by their owner only. A public function without a row, or a
--   row without a function, stops _security_plan: a new function is placed on purpose.
-- * _security_plan(p_migrating): the statements that bring this database to the model, in
--   order, or none when it is there already:
--     1. the five NOLOGIN group roles of pgrun.install_roles, created when missing (needs
--        CREATEROLE; else access.cannot_create_roles with the statements for a DBA);
--     2. the owner role a member of admin (whoever is the owner is an admin), and, when
--        migrating, the migrating role a member of the owner (it must own what it re-creates);
--     3. the schema and every table, view, sequence, type and function in it owned by the
--        owner role (the API's SECURITY DEFINER functions run as it);
--     4. USAGE on the schema for admin, producer, worker and reader; no table privilege for
--        PUBLIC or those four (the API is the only door); EXECUTE on each function for
--        exactly the roles of its matrix row, never PUBLIC. Grants of other roles on tables
--        are left as a DBA made them.
-- * _security_apply(): runs the plan. `pgrun migrate` calls it in the transaction of every
--   migration it applies (so the functions the plpgsql tree re-creates are never callable by
--   anyone else, not even for an instant), and on its own when the plan is not empty (a
--   dropped role, a hand-made grant); `pgrun check-schema` reports a non-empty plan.
--
-- Locks: the catalog rows the statements change. Errors: access.cannot_create_roles
-- (42501), access.function_not_in_matrix (RQ005).

CREATE OR REPLACE FUNCTION pgrun._security_matrix()
RETURNS TABLE (function_name text, role_kinds text[])
LANGUAGE sql
IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT m.function_name, m.role_kinds::text[]
    FROM (VALUES
        -- clock, ids, version: harmless to everyone pgrun knows
        ('now', '{admin,producer,worker,reader}'),
        ('uuidv7', '{admin,producer,worker,reader}'),
        ('schema_version', '{admin,producer,worker,reader}'),
        -- producing and steering work (tenant-scoped for non-admins)
        ('enqueue_job', '{admin,producer}'),
        ('enqueue_jobs', '{admin,producer}'),
        ('cancel_job', '{admin,producer}'),
        ('requeue_job', '{admin,producer}'),
        ('enqueue_workflow', '{admin,producer}'),
        ('append_workflow_steps', '{admin,producer}'),
        ('cancel_workflow_run', '{admin,producer}'),
        ('complete_external_step', '{admin,producer}'),
        ('pause_schedule', '{admin,producer}'),
        ('resume_schedule', '{admin,producer}'),
        ('delete_schedule', '{admin,producer}'),
        -- declaring (a worker declares the job types it runs and their schedules)
        ('upsert_schedule', '{admin,producer,worker}'),
        ('upsert_job_definition', '{admin,worker}'),
        -- inspection and metrics (tenant-scoped for non-admins)
        ('get_job', '{admin,producer,reader}'),
        ('list_jobs', '{admin,producer,reader}'),
        ('get_workflow_run', '{admin,producer,reader}'),
        ('list_workflow_runs', '{admin,producer,reader}'),
        ('list_schedules', '{admin,producer,reader}'),
        ('queue_depth', '{admin,producer,reader}'),
        ('job_metrics', '{admin,producer,reader}'),
        ('dashboard_overview', '{admin,producer,reader}'),
        ('get_job_history', '{admin,producer,reader}'),
        ('count_jobs', '{admin,producer,reader}'),
        -- the worker's lease machine, the reaper and the scheduler
        ('claim_jobs', '{admin,worker}'),
        ('next_run_at', '{admin,worker}'),
        ('heartbeat_jobs', '{admin,worker}'),
        ('report_progress', '{admin,worker}'),
        ('append_job_log', '{admin,worker}'),
        ('append_job_logs', '{admin,worker}'),
        ('complete_job', '{admin,worker}'),
        ('complete_jobs', '{admin,worker}'),
        ('fail_job', '{admin,worker}'),
        ('fail_jobs', '{admin,worker}'),
        ('continue_job', '{admin,worker}'),
        ('continue_jobs', '{admin,worker}'),
        ('release_jobs', '{admin,worker}'),
        ('reap_expired_leases', '{admin,worker}'),
        ('claim_due_schedules', '{admin,worker}'),
        ('fire_schedule', '{admin,worker}'),
        ('pause_unplannable_schedule', '{admin,worker}'),
        -- operators only
        ('purge_finished_jobs', '{admin}'),
        ('set_job_runtime_config', '{admin}'),
        ('run_schedule_now', '{admin}'),
        ('set_role_access', '{admin}'),
        ('remove_role_access', '{admin}'),
        ('list_role_access', '{admin}'),
        ('list_audit_log', '{admin}')
    ) AS m (function_name, role_kinds)
$$;

REVOKE ALL ON FUNCTION pgrun._security_matrix() FROM public;

COMMENT ON FUNCTION pgrun._security_matrix() IS
'Private: the role x function matrix: for each public function, the pgrun roles (by kind) that may call it.';

CREATE OR REPLACE FUNCTION pgrun._security_plan(p_migrating boolean DEFAULT FALSE)
RETURNS TABLE (step integer, statement text)
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_schema oid := 'pgrun'::regnamespace;
    v_owner name;
    v_admin name;
    v_owner_oid oid;
    v_clients oid[];
    v_missing text;
    r record;
BEGIN
    SELECT ir.role_name INTO v_owner FROM pgrun.install_roles AS ir WHERE ir.kind = 'owner';
    SELECT ir.role_name INTO v_admin FROM pgrun.install_roles AS ir WHERE ir.kind = 'admin';

    -- The matrix and the catalog agree, both ways.
    SELECT string_agg(x.name, ', ' ORDER BY x.name) INTO v_missing
    FROM (
        SELECT DISTINCT p.proname::text AS name
        FROM pg_proc AS p
        WHERE p.pronamespace = v_schema AND p.proname !~ '^_'
        EXCEPT
        SELECT m.function_name FROM pgrun._security_matrix() AS m
    ) AS x;
    IF v_missing IS NULL THEN
        SELECT string_agg(m.function_name, ', ' ORDER BY m.function_name) INTO v_missing
        FROM pgrun._security_matrix() AS m
        WHERE NOT EXISTS (
            SELECT FROM pg_proc AS p WHERE p.pronamespace = v_schema AND p.proname = m.function_name
        );
    END IF;
    IF v_missing IS NOT NULL THEN
        PERFORM pgrun._raise(
            'access.function_not_in_matrix',
            format('the role matrix and schema pgrun disagree about: %s', v_missing),
            'Every public function needs a row in pgrun._security_matrix (plpgsql/admin/security.sql) '
                'and in docs/security.md; a row needs its function.'
        );
    END IF;

    -- 1. The group roles.
    FOR r IN
        SELECT ir.role_name FROM pgrun.install_roles AS ir
        WHERE to_regrole(quote_ident(ir.role_name)) IS NULL
        ORDER BY ir.kind
    LOOP
        step := 1;
        statement := format('CREATE ROLE %I NOLOGIN', r.role_name);
        RETURN NEXT;
    END LOOP;

    -- 2. Memberships.
    IF to_regrole(quote_ident(v_owner)) IS NULL OR to_regrole(quote_ident(v_admin)) IS NULL
        OR NOT pg_has_role(v_owner, v_admin, 'MEMBER') THEN
        step := 2;
        statement := format('GRANT %I TO %I', v_admin, v_owner);
        RETURN NEXT;
    END IF;
    IF p_migrating AND (to_regrole(quote_ident(v_owner)) IS NULL OR NOT pg_has_role(current_user, v_owner, 'MEMBER')) THEN
        step := 2;
        statement := format('GRANT %I TO %I', v_owner, current_user);
        RETURN NEXT;
    END IF;

    v_owner_oid := to_regrole(quote_ident(v_owner))::oid;
    SELECT array_agg(to_regrole(quote_ident(ir.role_name))::oid) INTO v_clients
    FROM pgrun.install_roles AS ir
    WHERE ir.kind IN ('admin', 'producer', 'worker', 'reader');

    -- 3. Ownership (when the owner role is only being created now, everything moves to it).
    IF v_owner_oid IS NULL OR (SELECT n.nspowner FROM pg_namespace AS n WHERE n.oid = v_schema) <> v_owner_oid THEN
        step := 3;
        statement := format('ALTER SCHEMA pgrun OWNER TO %I', v_owner);
        RETURN NEXT;
    END IF;
    FOR r IN
        SELECT c.oid::regclass::text AS name, c.relkind
        FROM pg_class AS c
        WHERE c.relnamespace = v_schema
            AND c.relkind IN ('r', 'p', 'v', 'm', 'S', 'f')
            AND c.relowner IS DISTINCT FROM v_owner_oid
            -- identity sequences follow their table
            AND NOT EXISTS (
                SELECT FROM pg_depend AS d
                WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype IN ('a', 'i')
            )
        ORDER BY c.oid
    LOOP
        step := 3;
        statement := format(
            'ALTER %s %s OWNER TO %I',
            CASE r.relkind WHEN 'v' THEN 'VIEW' WHEN 'm' THEN 'MATERIALIZED VIEW' WHEN 'S' THEN 'SEQUENCE'
                WHEN 'f' THEN 'FOREIGN TABLE' ELSE 'TABLE' END,
            r.name, v_owner
        );
        RETURN NEXT;
    END LOOP;
    FOR r IN
        SELECT t.oid::regtype::text AS name
        FROM pg_type AS t
        WHERE t.typnamespace = v_schema
            AND t.typowner IS DISTINCT FROM v_owner_oid
            AND (t.typtype IN ('d', 'e', 'r', 'm')
                OR (t.typtype = 'c' AND (SELECT c.relkind FROM pg_class AS c WHERE c.oid = t.typrelid) = 'c'))
        ORDER BY t.oid
    LOOP
        step := 3;
        statement := format('ALTER TYPE %s OWNER TO %I', r.name, v_owner);
        RETURN NEXT;
    END LOOP;
    FOR r IN
        SELECT p.oid::regprocedure::text AS name
        FROM pg_proc AS p
        WHERE p.pronamespace = v_schema AND p.proowner IS DISTINCT FROM v_owner_oid
        ORDER BY p.oid
    LOOP
        step := 3;
        statement := format('ALTER FUNCTION %s OWNER TO %I', r.name, v_owner);
        RETURN NEXT;
    END LOOP;

    -- 4. Privileges. Grantee 0 is PUBLIC; only PUBLIC and pgrun's client roles are managed.
    FOR r IN
        SELECT ir.role_name
        FROM pgrun.install_roles AS ir
        WHERE ir.kind IN ('admin', 'producer', 'worker', 'reader')
            AND NOT EXISTS (
                SELECT FROM pg_namespace AS n
                CROSS JOIN LATERAL aclexplode(n.nspacl) AS a
                WHERE n.oid = v_schema AND a.privilege_type = 'USAGE'
                    AND a.grantee = to_regrole(quote_ident(ir.role_name))::oid
            )
        ORDER BY ir.kind
    LOOP
        step := 4;
        statement := format('GRANT USAGE ON SCHEMA pgrun TO %I', r.role_name);
        RETURN NEXT;
    END LOOP;
    IF EXISTS (
        SELECT FROM pg_namespace AS n
        CROSS JOIN LATERAL aclexplode(n.nspacl) AS a
        WHERE n.oid = v_schema AND a.grantee = 0
    ) THEN
        step := 4;
        statement := 'REVOKE ALL ON SCHEMA pgrun FROM PUBLIC';
        RETURN NEXT;
    END IF;

    FOR r IN
        SELECT DISTINCT c.oid::regclass::text AS name, a.grantee
        FROM pg_class AS c
        CROSS JOIN LATERAL aclexplode(c.relacl) AS a
        WHERE c.relnamespace = v_schema
            AND c.relkind IN ('r', 'p', 'v', 'm', 'S', 'f')
            AND (a.grantee = 0 OR a.grantee = ANY (v_clients))
        ORDER BY 1, 2
    LOOP
        step := 4;
        statement := format(
            'REVOKE ALL ON %s FROM %s',
            r.name, CASE WHEN r.grantee = 0 THEN 'PUBLIC' ELSE quote_ident(r.grantee::regrole::text) END
        );
        RETURN NEXT;
    END LOOP;

    FOR r IN
        WITH fn AS (
            SELECT
                p.oid,
                p.oid::regprocedure::text AS name,
                coalesce(p.proacl, acldefault('f', p.proowner)) AS acl,
                coalesce(
                    (SELECT array_agg(to_regrole(quote_ident(ir.role_name))::oid)
                     FROM pgrun._security_matrix() AS m
                     CROSS JOIN unnest(m.role_kinds) AS k (kind)
                     JOIN pgrun.install_roles AS ir ON ir.kind = k.kind
                     WHERE m.function_name = p.proname::text),
                    '{}'::oid[]
                ) AS wanted
            FROM pg_proc AS p
            WHERE p.pronamespace = v_schema
        ),
        has AS (
            SELECT f.oid, a.grantee
            FROM fn AS f
            CROSS JOIN LATERAL aclexplode(f.acl) AS a
            WHERE a.privilege_type = 'EXECUTE' AND (a.grantee = 0 OR a.grantee = ANY (v_clients))
        )
        SELECT f.name, 'REVOKE' AS verb, h.grantee
        FROM fn AS f JOIN has AS h ON h.oid = f.oid
        WHERE h.grantee <> ALL (f.wanted)
        UNION ALL
        SELECT f.name, 'GRANT', w.grantee
        FROM fn AS f CROSS JOIN unnest(f.wanted) AS w (grantee)
        WHERE NOT EXISTS (SELECT FROM has AS h WHERE h.oid = f.oid AND h.grantee = w.grantee)
        ORDER BY 1, 2 DESC, 3
    LOOP
        step := 4;
        statement := format(
            '%s EXECUTE ON FUNCTION %s %s %s',
            r.verb, r.name, CASE r.verb WHEN 'GRANT' THEN 'TO' ELSE 'FROM' END,
            CASE WHEN r.grantee = 0 THEN 'PUBLIC' ELSE quote_ident(r.grantee::regrole::text) END
        );
        RETURN NEXT;
    END LOOP;
END;
$$;

REVOKE ALL ON FUNCTION pgrun._security_plan(boolean) FROM public;

COMMENT ON FUNCTION pgrun._security_plan(boolean) IS
'Private: the statements (in order) that bring roles, ownership and privileges to pgrun''s role model; '
'none when they are there.';

CREATE OR REPLACE FUNCTION pgrun._security_apply()
RETURNS integer
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
-- The statements it executes come from _security_plan, which quotes every role name (%I) and
-- names every object by its regclass / regprocedure / regtype text; nothing comes from a caller.
-- @plpgsql_check_options: security_warnings = false
DECLARE
    v_count integer := 0;
    v_roles text;
    r record;
BEGIN
    -- Roles first, on their own: their creation may be refused (no CREATEROLE) or raced by a
    -- migrate of another database in the same cluster.
    FOR r IN SELECT p.statement FROM pgrun._security_plan(true) AS p WHERE p.step = 1 LOOP
        BEGIN
            EXECUTE r.statement;
        EXCEPTION
            WHEN duplicate_object THEN NULL;  -- made meanwhile by another migrate
            WHEN insufficient_privilege THEN
                SELECT string_agg(p.statement || ';', ' ') INTO v_roles
                FROM pgrun._security_plan(true) AS p WHERE p.step = 1;
                PERFORM pgrun._raise(
                    'access.cannot_create_roles',
                    format('role %s may not create roles (%s)', current_user, SQLERRM),
                    format('Have a role with CREATEROLE run: %s then migrate again.', v_roles)
                );
        END;
        v_count := v_count + 1;
    END LOOP;
    -- In the plan's own order: the schema changes owner before the objects in it.
    FOR r IN
        SELECT p.statement
        FROM pgrun._security_plan(true) WITH ORDINALITY AS p (step, statement, n)
        WHERE p.step > 1
        ORDER BY p.n
    LOOP
        EXECUTE r.statement;
        v_count := v_count + 1;
    END LOOP;
    RETURN v_count;
END;
$$;

REVOKE ALL ON FUNCTION pgrun._security_apply() FROM public;

COMMENT ON FUNCTION pgrun._security_apply() IS
'Private: apply _security_plan (roles, memberships, ownership, grants); returns how many statements ran.';
