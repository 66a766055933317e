-- pgrun._workflow_find_run(run_id, organization_id): the run lookup of every call that names
-- an existing run (append_workflow_steps, cancel_workflow_run, complete_external_step),
-- made before it locks anything, so they all answer workflow.run_not_found alike: a run that does
-- not exist and a run outside the caller's scope (pgrun._caller_scope of the organization_id
-- passed, util/_access.sql) are the same error, and the DETAIL says nothing about which.
-- It returns the run's status and organization (the audit row names it). Each caller takes
-- its own locks afterwards (_lock.sql).
--
-- Locks: none. Errors: workflow.run_not_found (RQ002).

CREATE OR REPLACE FUNCTION pgrun._workflow_find_run(
    p_run_id uuid,
    p_organization_id uuid,
    OUT status text,
    OUT organization_id uuid
)
LANGUAGE plpgsql
STABLE
AS $$
DECLARE
    v_scope record;
BEGIN
    SELECT c.all_organizations, c.organization_ids, c.untenanted INTO v_scope
    FROM pgrun._caller_scope(p_organization_id) AS c;
    SELECT r.status, r.organization_id INTO status, organization_id
    FROM pgrun.workflow_runs AS r
    WHERE r.id = p_run_id
      AND pgrun._in_scope(r.organization_id, v_scope.all_organizations, v_scope.organization_ids, v_scope.untenanted);
    IF NOT FOUND THEN
        PERFORM pgrun._raise(
            'workflow.run_not_found',
            format('no workflow run %s%s', p_run_id, CASE
                WHEN p_organization_id IS NOT NULL THEN format(' in organization %s', p_organization_id)
                ELSE ''
            END),
            'Check the run id (and the organization it belongs to).'
        );
    END IF;
END;
$$;

REVOKE EXECUTE ON FUNCTION pgrun._workflow_find_run(uuid, uuid) FROM public;

COMMENT ON FUNCTION pgrun._workflow_find_run(uuid, uuid) IS
'Private: the status and organization of a run the caller may see; raises workflow.run_not_found.';
