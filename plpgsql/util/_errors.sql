-- Errors from one place: the category of every code pgrun raises, and the one way to raise.
--
-- * _error_codes(): THE registry, every dotted code a pgrun function raises with its SQLSTATE,
--   listed by category (docs/errors.md's tables: RQ001 conflict, RQ002 not found, RQ003
--   invalid input, RQ004 lease lost, RQ005 internal, RQ006 unsupported, and the standard
--   40001 serialization failure and 42501 insufficient privilege). A code is listed once, so
--   it cannot be raised with two categories; docs/errors.md lists the same codes with the same
--   SQLSTATEs (tests_py/test_error_registry.py compares them both ways).
-- * _error_sqlstate(code): the code's SQLSTATE, NULL for a code not in the registry.
-- * _raise(code, detail, hint): raises the code (as MESSAGE) with its registry SQLSTATE and
--   the given DETAIL and HINT (either may be NULL: RAISE refuses a NULL option, so an absent
--   one is left out). Every RAISE in plpgsql/ goes through it: a site names the code, never
--   the SQLSTATE. A code missing from the registry is a bug in pgrun and is not raised as
--   given: it becomes pgrun.unknown_error_code (RQ005), whose DETAIL names the code and the
--   DETAIL it came with. _raise is called only where an error is raised, never on a success
--   path; it is VOLATILE so that the planner never evaluates a call early.
--
-- Locks: none. Errors: _raise raises the code it is given, or pgrun.unknown_error_code (RQ005).

CREATE OR REPLACE FUNCTION pgrun._error_codes()
RETURNS TABLE (code text, sqlstate text)
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
AS $$
    SELECT c.code, r.sqlstate
    FROM (VALUES
        ('RQ001', ARRAY[
            'job.enqueue_conflicting_retry', 'job.not_cancellable', 'job.not_requeueable', 'job.in_workflow_run',
            'workflow.enqueue_conflicting_retry', 'workflow.append_conflicting_retry', 'workflow.run_finished',
            'workflow.step_not_waiting', 'workflow.step_already_finished', 'workflow.release_conflict',
            'schedule.not_active'
        ]),
        ('RQ002', ARRAY['job.not_found', 'workflow.run_not_found', 'workflow.step_not_found', 'schedule.not_found']),
        ('RQ003', ARRAY[
            'job.invalid_type', 'job.invalid_queue', 'job.invalid_priority', 'job.invalid_max_attempts',
            'job.invalid_timeout', 'job.invalid_backoff', 'job.invalid_max_result_bytes',
            'job.invalid_max_concurrency', 'job.invalid_payload', 'job.payload_too_large', 'job.invalid_schedule',
            'job.invalid_idempotency_key', 'job.invalid_organization', 'job.batch_too_large', 'job.invalid_status',
            'job.invalid_max_rows', 'job.invalid_worker_id', 'job.invalid_lease_seconds', 'job.invalid_max_jobs',
            'job.invalid_max_held',
            'job.invalid_batch', 'job.invalid_argument', 'job.invalid_delay', 'job.invalid_step',
            'job.invalid_progress', 'job.invalid_log_entry', 'job.invalid_older_than', 'job.result_too_large',
            'job.state_too_large', 'job.invalid_result', 'job.invalid_state',
            'workflow.invalid_spec', 'workflow.spec_too_large', 'workflow.too_many_steps', 'workflow.invalid_step',
            'workflow.invalid_step_key', 'workflow.duplicate_step_key', 'workflow.missing_job_type',
            'workflow.external_step_with_job_template', 'workflow.payload_too_large', 'workflow.invalid_output',
            'workflow.reserved_payload_key', 'workflow.too_many_dependencies', 'workflow.invalid_dependency',
            'workflow.invalid_release_mode', 'workflow.self_dependency', 'workflow.unknown_dependency',
            'workflow.duplicate_dependency', 'workflow.cycle_detected', 'workflow.step_not_external',
            'workflow.invalid_argument', 'workflow.invalid_status', 'workflow.invalid_max_rows',
            'schedule.invalid_name', 'schedule.invalid_cron', 'schedule.invalid_timezone',
            'schedule.invalid_catch_up', 'schedule.invalid_backfill_limit', 'schedule.invalid_misfire_grace',
            'schedule.invalid_scopes', 'schedule.reserved_payload_key', 'schedule.invalid_scheduler_id',
            'schedule.invalid_max_schedules', 'schedule.invalid_lease_seconds', 'schedule.invalid_argument',
            'schedule.invalid_plan_times', 'schedule.invalid_next_run_at', 'schedule.invalid_organization',
            'schedule.invalid_max_rows',
            'access.organization_required', 'access.invalid_role', 'access.invalid_organizations',
            'access.invalid_scope', 'access.invalid_max_rows', 'access.invalid_role_prefix'
        ]),
        ('RQ004', ARRAY['job.lease_lost', 'schedule.claim_lost']),
        -- workflow.cancel_retry never leaves cancel_workflow_run (raised and caught inside it)
        ('RQ005', ARRAY[
            'workflow.internal_error', 'workflow.cancel_retry', 'access.function_not_in_matrix',
            'pgrun.unknown_error_code'
        ]),
        ('RQ006', ARRAY[
            'job.enqueue_idempotency_unsupported_isolation', 'workflow.enqueue_idempotency_unsupported_isolation',
            'workflow.unsupported_isolation', 'job.claim_unsupported_isolation'
        ]),
        ('40001', ARRAY['job.enqueue_idempotency_race', 'workflow.enqueue_idempotency_race']),
        ('42501', ARRAY[
            'access.organization_denied', 'access.queue_denied', 'access.job_type_denied',
            'access.cannot_create_roles'
        ])
    ) AS r (sqlstate, codes)
    CROSS JOIN LATERAL pg_catalog.unnest(r.codes) AS c (code)
$$;

REVOKE EXECUTE ON FUNCTION pgrun._error_codes() FROM public;

COMMENT ON FUNCTION pgrun._error_codes() IS
'Private: the error registry, every code pgrun raises with its SQLSTATE (docs/errors.md lists the same).';

CREATE OR REPLACE FUNCTION pgrun._error_sqlstate(p_code text)
RETURNS text
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
AS $$
    SELECT e.sqlstate FROM pgrun._error_codes() AS e WHERE e.code OPERATOR(pg_catalog.=) p_code
$$;

REVOKE EXECUTE ON FUNCTION pgrun._error_sqlstate(text) FROM public;

COMMENT ON FUNCTION pgrun._error_sqlstate(text) IS
'Private: the SQLSTATE the error registry gives a code; NULL for a code it does not list.';

CREATE OR REPLACE FUNCTION pgrun._raise(p_code text, p_detail text DEFAULT NULL, p_hint text DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql
VOLATILE
AS $$
DECLARE
    v_code text := p_code;
    v_detail text := p_detail;
    v_hint text := p_hint;
    v_sqlstate text := pgrun._error_sqlstate(p_code);
BEGIN
    IF v_sqlstate IS NULL THEN
        v_code := 'pgrun.unknown_error_code';
        v_sqlstate := 'RQ005';
        v_detail := format(
            'error code %s is not in the error registry (pgrun._error_codes); its detail: %s',
            pgrun._shown(p_code), coalesce(p_detail, 'none')
        );
        v_hint := 'Report it: this is a bug in pgrun.';
    END IF;
    IF v_detail IS NULL AND v_hint IS NULL THEN
        RAISE EXCEPTION USING MESSAGE = v_code, ERRCODE = v_sqlstate;
    ELSIF v_hint IS NULL THEN
        RAISE EXCEPTION USING MESSAGE = v_code, ERRCODE = v_sqlstate, DETAIL = v_detail;
    ELSIF v_detail IS NULL THEN
        RAISE EXCEPTION USING MESSAGE = v_code, ERRCODE = v_sqlstate, HINT = v_hint;
    END IF;
    RAISE EXCEPTION USING MESSAGE = v_code, ERRCODE = v_sqlstate, DETAIL = v_detail, HINT = v_hint;
END;
$$;

REVOKE EXECUTE ON FUNCTION pgrun._raise(text, text, text) FROM public;

COMMENT ON FUNCTION pgrun._raise(text, text, text) IS
'Private: raise an error code with the SQLSTATE the registry gives it and the DETAIL / HINT given (NULL: none); '
'an unregistered code raises pgrun.unknown_error_code (RQ005) naming it.';
