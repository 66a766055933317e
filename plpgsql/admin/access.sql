-- The admin's side of the role model: which organizations a database role acts for, which
-- queues and job types it may claim and declare, and the audit trail (docs/security.md).
--
-- set_role_access(role_name, organization_ids, any_organization, queues, job_types) states
-- the whole access of one database role (the role a client logs in as), like
-- upsert_job_definition states a definition: arguments left out take their defaults, so a
-- call is a full replace. Tenancy: organization_ids binds the role to those organizations
-- (its enqueues are stamped with its organization; it sees and steers only theirs);
-- any_organization => true lets it act for any organization it names (an application server
-- serving many tenants over one role); neither leaves it with the work that has no
-- organization. Scope: queues / job_types limit what it may claim (claim_jobs) and declare
-- (upsert_job_definition, upsert_schedule); NULL = any. Admins act for every organization
-- whatever their row says.
-- remove_role_access drops the row (the role falls back to no organization, no scope).
-- list_role_access lists the rows, with the pgrun roles each database role is a member of.
-- list_audit_log pages through audit_log in id order (oldest first; after_id for the next page).
--
-- Changes take effect at the role's next call: every API call reads role_access afresh.
--
-- Locks: the role_access row (INSERT ... ON CONFLICT DO UPDATE / DELETE). Errors (RQ003):
-- access.invalid_role, access.invalid_organizations, access.invalid_scope,
-- access.invalid_max_rows.

CREATE OR REPLACE FUNCTION pgrun.set_role_access(
    role_name text,
    organization_ids uuid[] DEFAULT NULL,
    any_organization boolean DEFAULT FALSE,
    queues text[] DEFAULT NULL,
    job_types text[] DEFAULT NULL
)
RETURNS pgrun.role_access
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_role regrole := pgrun._access_role(set_role_access.role_name);
    v_any boolean := coalesce(set_role_access.any_organization, false);
    v_orgs uuid[];
    v_problem text;
    v_row pgrun.role_access;
BEGIN
    v_problem := CASE
        WHEN set_role_access.organization_ids IS NULL THEN NULL
        WHEN v_any
            THEN 'organization_ids and any_organization => true contradict each other'
        WHEN coalesce(array_ndims(set_role_access.organization_ids), 1) <> 1
            OR cardinality(set_role_access.organization_ids) NOT BETWEEN 1 AND 10000
            THEN format('organization_ids has %s elements; pass 1..10000 in a one-dimensional array',
                cardinality(set_role_access.organization_ids))
        WHEN array_position(set_role_access.organization_ids, NULL) IS NOT NULL
            OR '00000000-0000-0000-0000-000000000000'::uuid = ANY (set_role_access.organization_ids)
            THEN 'organization_ids must not contain NULL or the nil uuid'
    END;
    IF v_problem IS NOT NULL THEN
        PERFORM pgrun._raise(
            'access.invalid_organizations',
            v_problem,
            'Bind the role to its organizations (organization_ids), or let it name any '
                '(any_organization => true), or neither (work without an organization only).'
        );
    END IF;
    IF set_role_access.organization_ids IS NOT NULL THEN
        v_orgs := ARRAY(SELECT DISTINCT u.o FROM unnest(set_role_access.organization_ids) AS u (o) ORDER BY u.o);
    END IF;

    v_problem := CASE
        WHEN set_role_access.queues IS NOT NULL AND (
            coalesce(array_ndims(set_role_access.queues), 1) <> 1
            OR cardinality(set_role_access.queues) NOT BETWEEN 1 AND 1000
            OR EXISTS (
                SELECT FROM unnest(set_role_access.queues) AS u (q)
                WHERE u.q IS NULL OR NOT pgrun._valid_queue(u.q)
            )
        ) THEN 'queues must be 1..1000 queue names (1..64 characters: a lowercase letter, then lowercase '
            'letters, digits, "_", ".", ":" or "-")'
        WHEN set_role_access.job_types IS NOT NULL AND (
            coalesce(array_ndims(set_role_access.job_types), 1) <> 1
            OR cardinality(set_role_access.job_types) NOT BETWEEN 1 AND 1000
            OR EXISTS (
                SELECT FROM unnest(set_role_access.job_types) AS u (t)
                WHERE u.t IS NULL OR NOT pgrun._valid_job_type(u.t)
            )
        ) THEN 'job_types must be 1..1000 job types (e.g. email.send)'
    END;
    IF v_problem IS NOT NULL THEN
        PERFORM pgrun._raise(
            'access.invalid_scope',
            v_problem,
            'Pass NULL for "any", or the queues / job types the role may claim and declare.'
        );
    END IF;

    INSERT INTO pgrun.role_access AS a (
        role, organization_ids, any_organization, queues, job_types, updated_at, updated_by
    )
    VALUES (
        v_role, v_orgs, v_any,
        CASE WHEN set_role_access.queues IS NOT NULL THEN
            ARRAY(SELECT DISTINCT u.q FROM unnest(set_role_access.queues) AS u (q) ORDER BY u.q) END,
        CASE WHEN set_role_access.job_types IS NOT NULL THEN
            ARRAY(SELECT DISTINCT u.t FROM unnest(set_role_access.job_types) AS u (t) ORDER BY u.t) END,
        pgrun.now(), session_user
    )
    ON CONFLICT ON CONSTRAINT role_access_pkey DO UPDATE
        SET organization_ids = excluded.organization_ids,
            any_organization = excluded.any_organization,
            queues = excluded.queues,
            job_types = excluded.job_types,
            updated_at = excluded.updated_at,
            updated_by = excluded.updated_by
    RETURNING a.* INTO v_row;

    PERFORM pgrun._audit(
        'role_access.set', NULL, set_role_access.role_name,
        jsonb_build_object(
            'organization_ids', to_jsonb(v_row.organization_ids), 'any_organization', v_row.any_organization,
            'queues', to_jsonb(v_row.queues), 'job_types', to_jsonb(v_row.job_types)
        )
    );
    RETURN v_row;
END;
$$;

COMMENT ON FUNCTION pgrun.set_role_access(text, uuid[], boolean, text[], text[]) IS
'Admin: state the whole access of database role role_name (a full replace). organization_ids (1..10000) '
'binds it to those organizations: its enqueues are stamped with its organization (the only one, or the one '
'it names) and it sees and steers only their work; any_organization => true lets it act for any '
'organization it names; neither: work without an organization only. queues / job_types (NULL = any) '
'limit what it may claim and declare (definitions, schedules). Takes effect at the role''s next call. '
'Returns the stored row. Errors (RQ003): access.invalid_role, access.invalid_organizations, '
'access.invalid_scope.';

CREATE OR REPLACE FUNCTION pgrun.remove_role_access(role_name text)
RETURNS boolean
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_role regrole := pgrun._access_role(remove_role_access.role_name);
BEGIN
    DELETE FROM pgrun.role_access AS a WHERE a.role = v_role;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    PERFORM pgrun._audit('role_access.removed', NULL, remove_role_access.role_name, '{}');
    RETURN true;
END;
$$;

COMMENT ON FUNCTION pgrun.remove_role_access(text) IS
'Admin: drop role_name''s access row; the role then acts for work without an organization only, with no '
'queue or job type scope. Returns whether a row was removed. Errors: access.invalid_role (RQ003).';

CREATE OR REPLACE FUNCTION pgrun.list_role_access()
RETURNS TABLE (
    role text,
    pgrun_roles text[],
    organization_ids uuid[],
    any_organization boolean,
    queues text[],
    job_types text[],
    updated_at timestamptz,
    updated_by text
)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT
        a.role::text,
        ARRAY(
            SELECT r.kind
            FROM pgrun.install_roles AS r
            WHERE to_regrole(quote_ident(r.role_name)) IS NOT NULL
                AND pg_has_role(a.role::oid, to_regrole(quote_ident(r.role_name))::oid, 'MEMBER')
            ORDER BY r.kind
        ),
        a.organization_ids,
        a.any_organization,
        a.queues,
        a.job_types,
        a.updated_at,
        a.updated_by
    FROM pgrun.role_access AS a
    ORDER BY a.role::text
$$;

COMMENT ON FUNCTION pgrun.list_role_access() IS
'Admin: every role_access row: the database role, the pgrun roles it is a member of (owner, admin, '
'producer, worker, reader), its organizations or any_organization, its queue and job type scope, and who '
'set it when.';

CREATE OR REPLACE FUNCTION pgrun.list_audit_log(
    after_id bigint DEFAULT NULL,
    max_rows integer DEFAULT 50,
    action text DEFAULT NULL,
    organization_id uuid DEFAULT NULL
)
RETURNS SETOF pgrun.audit_log
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF list_audit_log.max_rows IS NULL OR list_audit_log.max_rows NOT BETWEEN 1 AND 1000 THEN
        PERFORM pgrun._raise(
            'access.invalid_max_rows',
            format('max_rows %s is outside 1..1000', coalesce(list_audit_log.max_rows::text, 'NULL')),
            'Page with after_id instead of asking for more rows at once.'
        );
    END IF;
    RETURN QUERY
    SELECT l.*
    FROM pgrun.audit_log AS l
    WHERE (list_audit_log.after_id IS NULL OR l.id > list_audit_log.after_id)
        AND (list_audit_log.action IS NULL OR l.action = list_audit_log.action)
        AND (list_audit_log.organization_id IS NULL OR l.organization_id = list_audit_log.organization_id)
    ORDER BY l.id
    LIMIT list_audit_log.max_rows;
END;
$$;

COMMENT ON FUNCTION pgrun.list_audit_log(bigint, integer, text, uuid) IS
'Admin: a page of audit_log in id order (oldest first; pass the last id as after_id for the next page), '
'optionally one action or one organization: who (the login role) did what, when, for which organization, '
'on what, with the details. max_rows 1..1000, default 50. Errors: access.invalid_max_rows (RQ003).';

-- The role a role_access function names, or access.invalid_role.
CREATE OR REPLACE FUNCTION pgrun._access_role(p_role_name text)
RETURNS regrole
LANGUAGE plpgsql
STABLE
AS $$
DECLARE
    v_oid oid;
BEGIN
    SELECT r.oid INTO v_oid FROM pg_catalog.pg_roles AS r WHERE r.rolname = p_role_name;
    IF v_oid IS NULL THEN
        PERFORM pgrun._raise(
            'access.invalid_role',
            format('there is no database role %s', coalesce(quote_literal(left(p_role_name, 100)), 'NULL')),
            'Name the role a client logs in as, exactly as pg_roles spells it; create it first.'
        );
    END IF;
    RETURN v_oid::regrole;
END;
$$;

REVOKE ALL ON FUNCTION pgrun._access_role(text) FROM public;

COMMENT ON FUNCTION pgrun._access_role(text) IS
'Private: the database role named p_role_name, or raises access.invalid_role (RQ003).';
