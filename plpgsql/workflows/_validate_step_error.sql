-- pgrun._workflow_raise_invalid_step: the error for the first step that
-- pgrun._workflow_check_step_fields (_validate.sql, check 2 of _workflow_check_steps) found
-- malformed, with a DETAIL naming the step (1-based position and key) and what is wrong,
-- and a HINT. The caller passes its field lists and limits so they are stated in one place.
--
-- Locks: none. Errors: always raises p_code (RQ003): workflow.invalid_step,
-- workflow.invalid_step_key, workflow.external_step_with_job_template,
-- workflow.missing_job_type, workflow.payload_too_large, workflow.reserved_payload_key,
-- workflow.invalid_dependency.

CREATE OR REPLACE FUNCTION pgrun._workflow_raise_invalid_step(
    p_code text,
    p_ord integer,
    p_step jsonb,
    p_step_fields text[],
    p_template_fields text[],
    p_max_key_length integer,
    p_max_payload_bytes integer
)
RETURNS void
LANGUAGE plpgsql
STABLE
AS $$
DECLARE
    v_key text;
    v_detail text;
    v_hint text;
BEGIN
    v_key := CASE WHEN jsonb_typeof(p_step -> 'key') = 'string' THEN p_step ->> 'key' END;
    v_detail := format('step %s%s: ', p_ord, CASE WHEN v_key IS NULL THEN '' ELSE format(' (%s)', pgrun._clip(v_key, 200)) END);
    CASE p_code
        WHEN 'workflow.invalid_step' THEN
            v_detail := v_detail || CASE
                WHEN jsonb_typeof(p_step) <> 'object' THEN format('is a JSON %s, not an object', jsonb_typeof(p_step))
                WHEN p_step - p_step_fields <> '{}'::jsonb THEN format(
                    'unknown fields %s',
                    pgrun._clip((SELECT string_agg(k.key, ', ' ORDER BY k.key)
                     FROM jsonb_object_keys(p_step) AS k (key)
                     WHERE k.key <> ALL (p_step_fields)), 200)
                )
                WHEN coalesce(p_step ->> 'kind', 'job') NOT IN ('job', 'external')
                    OR jsonb_typeof(p_step -> 'kind') NOT IN ('null', 'string')
                    THEN format('kind %s is neither "job" nor "external"', left((p_step -> 'kind')::text, 200))
                -- a well-formed job type and an object payload, refused by the nesting rule
                WHEN jsonb_typeof(p_step -> 'job_type') = 'string'
                    AND pgrun._valid_job_type(p_step ->> 'job_type')
                    AND jsonb_typeof(p_step -> 'payload') = 'object'
                    AND NOT pgrun._json_depth_ok(p_step -> 'payload')
                    THEN 'payload is nested more than 100 levels deep (arrays and objects)'
                ELSE format(
                    'job template out of range: job_type %s, payload type %s, queue %s, priority %s, '
                    'max_attempts %s, timeout_seconds %s',
                    left(coalesce(p_step -> 'job_type', 'null'::jsonb)::text, 200),
                    coalesce(jsonb_typeof(p_step -> 'payload'), 'absent'),
                    left(coalesce(p_step -> 'queue', 'null'::jsonb)::text, 200),
                    left(coalesce(p_step -> 'priority', 'null'::jsonb)::text, 200),
                    left(coalesce(p_step -> 'max_attempts', 'null'::jsonb)::text, 200),
                    left(coalesce(p_step -> 'timeout_seconds', 'null'::jsonb)::text, 200)
                )
            END;
            v_hint := 'A step has key, kind ("job" or "external"), depends_on and, for a job step, '
                'job_type, payload (an object nested at most 100 levels), queue, priority (0..32767), '
                'max_attempts (1..1000), timeout_seconds (> 0).';
        WHEN 'workflow.invalid_step_key' THEN
            v_detail := v_detail || format(
                'key %s is not a non-empty string of at most %s characters without surrounding blanks',
                left(coalesce(p_step -> 'key', 'null'::jsonb)::text, 200), p_max_key_length
            );
            v_hint := 'Give every step a unique, non-empty "key".';
        WHEN 'workflow.external_step_with_job_template' THEN
            v_detail := v_detail || format(
                'an external step carries job template fields %s',
                (SELECT string_agg(k.key, ', ' ORDER BY k.key)
                 FROM jsonb_object_keys(jsonb_strip_nulls(p_step)) AS k (key)
                 WHERE k.key = ANY (p_template_fields))
            );
            v_hint := 'An external step is closed by complete_external_step, not run as a job: '
                'drop job_type, payload, queue, priority, max_attempts and timeout_seconds, or make it '
                'a job step.';
        WHEN 'workflow.missing_job_type' THEN
            v_detail := v_detail || 'a job step names no job_type';
            v_hint := 'Give the step a job_type, or mark it "kind": "external".';
        WHEN 'workflow.payload_too_large' THEN
            v_detail := v_detail || format(
                'payload is %s bytes; the limit is %s', pg_column_size(p_step -> 'payload'), p_max_payload_bytes
            );
            v_hint := 'Store large data elsewhere and pass a reference in the payload.';
        WHEN 'workflow.reserved_payload_key' THEN
            v_detail := v_detail || 'payload has a top-level "dependencies" key';
            v_hint := 'pgrun puts the prerequisites'' outputs under payload.dependencies when it creates '
                'the job; rename your key.';
        ELSE
            v_detail := v_detail || format(
                'depends_on is a JSON %s, not an array', jsonb_typeof(p_step -> 'depends_on')
            );
            v_hint := 'depends_on is an array of step keys or {"step": key, "release_mode": mode} objects.';
    END CASE;
    PERFORM pgrun._raise(p_code, v_detail, v_hint);
END;
$$;

REVOKE EXECUTE ON FUNCTION pgrun._workflow_raise_invalid_step(
    text, integer, jsonb, text[], text[], integer, integer
) FROM public;

COMMENT ON FUNCTION pgrun._workflow_raise_invalid_step(text, integer, jsonb, text[], text[], integer, integer) IS
'Private: raise the validation error of one malformed workflow step, with DETAIL and HINT.';
