-- Who is calling, and what may it act for: the helpers every API function asks.
--
-- The caller is the role the connection logged in as (session_user), never an argument:
-- the API runs as pgrun's owner (SECURITY DEFINER), so current_user inside it is always the
-- owner. docs/security.md describes the model; pgrun.role_access holds the mappings.
--
-- * _caller_access: is the caller an admin (a member of the admin role, directly or through
--   other roles; superusers and members of the owner role are), and its row of role_access
--   (tenancy and worker scope), NULLs when it has none.
-- * _caller_scope(organization_id): the organizations a READ may see, as a filter
--   (all_organizations OR organization_id = ANY(organization_ids) OR (untenanted AND
--   organization_id IS NULL)):
--     admin           NULL: every organization; X: X only;
--     any_organization NULL: work without an organization; X: X only;
--     bound to L      NULL: L; X in L: X; X not in L: nothing;
--     no row          NULL: work without an organization; X: nothing.
--   So for every non-admin NULL never means "all tenants", and another organization's id
--   finds nothing (callers then raise their not_found, exactly as for a missing object).
-- * _caller_write_organizations / _caller_organization(organization_id): the organization a
--   WRITE acts for (an enqueue is stamped with it; a schedule is named by it): admin and
--   any_organization: the one given (NULL = none); bound to L: the one given if in L, else
--   not allowed; NULL means L's only member, and is access.organization_required when L has
--   several; no row: none (NULL) only. The caller decides what "not allowed" is (42501
--   access.organization_denied for a write, not_found for a lookup by name).
-- * _caller_check_scope(queues, job_types): a worker's scope. NULL arguments become the
--   scope; an argument outside it is 42501 access.queue_denied / access.job_type_denied.
--   Admins and roles without a scope are not limited.
-- * _audit: one audit_log row, actor = session_user.
--
-- Locks: none (audit_log insert only). Errors: access.organization_required (RQ003),
-- access.queue_denied, access.job_type_denied (42501).

-- The four helpers below are SQL without a SET clause, so the planner inlines them into the
-- query that asks (one statement instead of a chain of function calls, each of which would
-- save and restore search_path: about 20 us of every single enqueue). Every name in them is
-- schema-qualified instead, as in pgrun._clip; they only ever run inside the API, whose
-- search_path is pinned.
CREATE OR REPLACE FUNCTION pgrun._caller_access()
RETURNS TABLE (
    is_admin boolean,
    any_organization boolean,
    organization_ids uuid[],
    queues text[],
    job_types text[]
)
LANGUAGE sql
STABLE
AS $$
    SELECT
        coalesce(
            (SELECT pg_catalog.pg_has_role(session_user, r.role_name, 'MEMBER')
             FROM pgrun.install_roles AS r
             WHERE r.kind OPERATOR(pg_catalog.=) 'admin'
                AND pg_catalog.to_regrole(pg_catalog.quote_ident(r.role_name)) IS NOT NULL),
            FALSE
        ),
        coalesce(a.any_organization, FALSE),
        a.organization_ids,
        a.queues,
        a.job_types
    FROM (SELECT pg_catalog.to_regrole(pg_catalog.quote_ident(session_user)) AS me) AS s
    LEFT JOIN pgrun.role_access AS a ON a.role OPERATOR(pg_catalog.=) s.me
$$;

REVOKE ALL ON FUNCTION pgrun._caller_access() FROM public;

COMMENT ON FUNCTION pgrun._caller_access() IS
'Private: whether the login role is a pgrun admin, and its role_access row (tenancy, worker scope).';

CREATE OR REPLACE FUNCTION pgrun._caller_is_admin()
RETURNS boolean
LANGUAGE sql
STABLE
AS $$
    SELECT a.is_admin FROM pgrun._caller_access() AS a
$$;

REVOKE ALL ON FUNCTION pgrun._caller_is_admin() FROM public;

COMMENT ON FUNCTION pgrun._caller_is_admin() IS
'Private: whether the login role is a pgrun admin (member of the admin role, the owner role, or a superuser).';

CREATE OR REPLACE FUNCTION pgrun._caller_scope(p_organization_id uuid)
RETURNS TABLE (all_organizations boolean, organization_ids uuid[], untenanted boolean)
LANGUAGE sql
STABLE
AS $$
    SELECT
        a.is_admin AND p_organization_id IS NULL,
        CASE
            WHEN a.is_admin AND p_organization_id IS NULL THEN '{}'::pg_catalog.uuid[]
            WHEN p_organization_id IS NULL THEN coalesce(a.organization_ids, '{}'::pg_catalog.uuid[])
            WHEN a.is_admin OR a.any_organization
                OR coalesce(p_organization_id OPERATOR(pg_catalog.=) ANY (a.organization_ids), FALSE)
                THEN ARRAY[p_organization_id]
            ELSE '{}'::pg_catalog.uuid[]
        END,
        NOT a.is_admin AND a.organization_ids IS NULL AND p_organization_id IS NULL
    FROM pgrun._caller_access() AS a
$$;

REVOKE ALL ON FUNCTION pgrun._caller_scope(uuid) FROM public;

COMMENT ON FUNCTION pgrun._caller_scope(uuid) IS
'Private: the organizations a read by the login role may see, given the organization_id it passed.';

CREATE OR REPLACE FUNCTION pgrun._caller_write_organizations()
RETURNS TABLE (default_organization uuid, allowed_organizations uuid[])
LANGUAGE sql
STABLE
AS $$
    -- admin and any_organization: any organization, none by default; bound to L: L, and L's
    -- only member by default; no row: none ('{}': work without an organization only)
    SELECT
        CASE
            WHEN NOT (a.is_admin OR a.any_organization)
                AND pg_catalog.cardinality(a.organization_ids) OPERATOR(pg_catalog.=) 1
                THEN a.organization_ids[1]
        END,
        CASE
            WHEN NOT (a.is_admin OR a.any_organization) THEN coalesce(a.organization_ids, '{}'::pg_catalog.uuid[])
        END
    FROM pgrun._caller_access() AS a
$$;

REVOKE ALL ON FUNCTION pgrun._caller_write_organizations() FROM public;

COMMENT ON FUNCTION pgrun._caller_write_organizations() IS
'Private: the organizations a write by the login role may act for (NULL = any) and the one it acts for when '
'it names none. An empty array means work without an organization only.';

-- The filter _caller_scope describes, for one row's organization_id. No SET clause, so it is
-- inlined into the queries that use it (as pgrun._clip is); every name is qualified.
CREATE OR REPLACE FUNCTION pgrun._in_scope(
    p_organization_id uuid,
    p_all_organizations boolean,
    p_organization_ids uuid[],
    p_untenanted boolean
)
RETURNS boolean
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
AS $$
    SELECT p_all_organizations
        OR coalesce(p_organization_id OPERATOR(pg_catalog.=) ANY (p_organization_ids), FALSE)
        OR (p_untenanted AND p_organization_id IS NULL)
$$;

REVOKE ALL ON FUNCTION pgrun._in_scope(uuid, boolean, uuid[], boolean) FROM public;

COMMENT ON FUNCTION pgrun._in_scope(uuid, boolean, uuid[], boolean) IS
'Private: whether a row of organization p_organization_id is inside a scope from _caller_scope.';

-- The organization rule of a write, for one job: whether a login role whose writes may act
-- for p_allowed (never NULL here: NULL means any, and needs no test) may not create a job of
-- organization p_org. A job without an organization is refused when the role has some (it
-- must name one); a job with one, when it is not among them. Inlined where a write decides
-- it: the enqueue check (pgrun._enqueue_check_requests; an expression for a single enqueue, a
-- filter for a batch) and pgrun._caller_organization (below); every name is qualified.
CREATE OR REPLACE FUNCTION pgrun._organization_refused(p_org uuid, p_allowed uuid[])
RETURNS boolean
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
AS $$
    SELECT CASE
        WHEN p_org IS NULL THEN pg_catalog.cardinality(p_allowed) OPERATOR(pg_catalog.>) 0
        ELSE p_org OPERATOR(pg_catalog.<>) ALL (p_allowed)
    END
$$;

REVOKE ALL ON FUNCTION pgrun._organization_refused(uuid, uuid[]) FROM public;

COMMENT ON FUNCTION pgrun._organization_refused(uuid, uuid[]) IS
'Private: whether a role whose writes may act for p_allowed may not create a job of organization p_org '
'(none: refused when the role has some; one: refused when not among them).';

CREATE OR REPLACE FUNCTION pgrun._caller_organization(
    p_organization_id uuid,
    OUT organization_id uuid,
    OUT allowed boolean
)
LANGUAGE plpgsql
STABLE
AS $$
DECLARE
    v_write record;
BEGIN
    SELECT w.default_organization, w.allowed_organizations INTO v_write
    FROM pgrun._caller_write_organizations() AS w;
    organization_id := coalesce(p_organization_id, v_write.default_organization);
    IF v_write.allowed_organizations IS NULL THEN
        allowed := true;
    ELSE
        allowed := NOT pgrun._organization_refused(organization_id, v_write.allowed_organizations);
        IF NOT allowed AND organization_id IS NULL THEN
            PERFORM pgrun._raise_organization_required(cardinality(v_write.allowed_organizations));
        END IF;
    END IF;
END;
$$;

REVOKE ALL ON FUNCTION pgrun._caller_organization(uuid) FROM public;

COMMENT ON FUNCTION pgrun._caller_organization(uuid) IS
'Private: the one organization a write or a lookup by name acts for, and whether the login role may act '
'for it; raises access.organization_required when the role has several and named none.';

CREATE OR REPLACE FUNCTION pgrun._raise_organization_required(
    p_organizations integer, p_where text DEFAULT ''
)
RETURNS void
LANGUAGE plpgsql
STABLE
AS $$
BEGIN
    PERFORM pgrun._raise(
        'access.organization_required',
        format(
            '%srole %s acts for %s organizations and the call named none', p_where, session_user, p_organizations
        ),
        'Pass organization_id: the organization this call is for.'
    );
END;
$$;

REVOKE ALL ON FUNCTION pgrun._raise_organization_required(integer, text) FROM public;

COMMENT ON FUNCTION pgrun._raise_organization_required(integer, text) IS
'Private: raise access.organization_required (RQ003).';

CREATE OR REPLACE FUNCTION pgrun._raise_organization_denied(p_organization_id uuid, p_where text DEFAULT '')
RETURNS void
LANGUAGE plpgsql
STABLE
AS $$
BEGIN
    PERFORM pgrun._raise(
        'access.organization_denied',
        format(
            '%srole %s may not act for %s', p_where, session_user,
            coalesce('organization ' || p_organization_id::text, 'work without an organization')
        ),
        'An admin grants organizations to a role with pgrun.set_role_access.'
    );
END;
$$;

REVOKE ALL ON FUNCTION pgrun._raise_organization_denied(uuid, text) FROM public;

COMMENT ON FUNCTION pgrun._raise_organization_denied(uuid, text) IS
'Private: raise access.organization_denied (42501) for an organization the login role may not act for.';

CREATE OR REPLACE FUNCTION pgrun._caller_check_scope(
    p_queues text[],
    p_job_types text[],
    OUT queues text[],
    OUT job_types text[]
)
LANGUAGE plpgsql
STABLE
AS $$
DECLARE
    v_access record;
    v_denied text[];
BEGIN
    SELECT a.is_admin, a.queues, a.job_types INTO v_access FROM pgrun._caller_access() AS a;
    queues := p_queues;
    job_types := p_job_types;
    IF v_access.is_admin THEN
        RETURN;
    END IF;
    IF v_access.queues IS NOT NULL THEN
        v_denied := ARRAY(SELECT u.q FROM unnest(p_queues) AS u (q) WHERE NOT coalesce(u.q = ANY (v_access.queues), false));
        IF cardinality(v_denied) > 0 THEN
            PERFORM pgrun._raise(
                'access.queue_denied',
                format('role %s may not use queues %s (its scope: %s)', session_user,
                    pgrun._shown(array_to_string(v_denied, ', ', 'NULL')),
                    pgrun._shown(array_to_string(v_access.queues, ', '))),
                'Pass queues within the role''s scope, or NULL for all of them; an admin changes the '
                    'scope with pgrun.set_role_access.'
            );
        END IF;
        queues := coalesce(p_queues, v_access.queues);
    END IF;
    IF v_access.job_types IS NOT NULL THEN
        v_denied := ARRAY(
            SELECT u.t FROM unnest(p_job_types) AS u (t) WHERE NOT coalesce(u.t = ANY (v_access.job_types), false)
        );
        IF cardinality(v_denied) > 0 THEN
            PERFORM pgrun._raise(
                'access.job_type_denied',
                format('role %s may not use job types %s (its scope: %s)', session_user,
                    pgrun._shown(array_to_string(v_denied, ', ', 'NULL')),
                    pgrun._shown(array_to_string(v_access.job_types, ', '))),
                'Pass job types within the role''s scope, or NULL for all of them; an admin changes the '
                    'scope with pgrun.set_role_access.'
            );
        END IF;
        job_types := coalesce(p_job_types, v_access.job_types);
    END IF;
END;
$$;

REVOKE ALL ON FUNCTION pgrun._caller_check_scope(text[], text[]) FROM public;

COMMENT ON FUNCTION pgrun._caller_check_scope(text[], text[]) IS
'Private: the queues and job types a worker call may use: NULL becomes the role''s scope; outside it raises '
'access.queue_denied / access.job_type_denied (42501).';

CREATE OR REPLACE FUNCTION pgrun._audit(
    p_action text,
    p_organization_id uuid,
    p_subject text,
    p_detail jsonb DEFAULT '{}'
)
RETURNS void
LANGUAGE plpgsql
VOLATILE
AS $$
BEGIN
    INSERT INTO pgrun.audit_log (actor, action, organization_id, subject, detail, created_at)
    VALUES (session_user, p_action, p_organization_id, p_subject, coalesce(p_detail, '{}'::jsonb), pgrun.now());
END;
$$;

REVOKE ALL ON FUNCTION pgrun._audit(text, uuid, text, jsonb) FROM public;

COMMENT ON FUNCTION pgrun._audit(text, uuid, text, jsonb) IS
'Private: record an admin or producer action in audit_log, actor = the login role.';
