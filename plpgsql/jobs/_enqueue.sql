-- The core of the front door (enqueue.sql) and its helpers. Loaded before enqueue.sql
-- (file name order).
--
-- * _enqueue(requests): what enqueue_jobs runs, in sections:
--   0 and 1. _enqueue_check_requests: the call's shape (an array, at most 100000 elements),
--      every element valid (_enqueue_check with _enqueue_first_invalid, which applies THE
--      field rules, _enqueue_invalid_code, to every element; raised by
--      _enqueue_raise_invalid), the caller may act for every element's organization,
--      keyed elements only under READ COMMITTED. Nothing is written before all passed;
--   2. the elements parsed into the column arrays of their jobs (in _enqueue itself), then
--      _enqueue_insert_jobs (_insert.sql), the one insert every new job goes through;
--   3. _enqueue_check_retries: keyed elements that created nothing must be retries of the
--      request their key holds; then one result row per element.
-- * enqueue_job (enqueue.sql) takes the lean path with the same pieces: the same
--   _enqueue_check_requests on its request as a one-element array (p_single: the field
--   rules as one plpgsql expression, no subtransaction), its arguments straight into
--   _enqueue_insert_jobs, and _enqueue_check_retries when its key created nothing.
-- * _enqueue_payload, _enqueue_run_at, _enqueue_snapshot: what a valid request means (the
--   payload stored, when the job is ready, the idempotency snapshot), for both paths.
--
-- Locks: those of _enqueue_insert_jobs (_insert.sql); the helpers here take none.
-- Errors (each function's header lists its own; enqueue.sql lists them all):
-- _enqueue_check_requests job.invalid_batch, job.batch_too_large, the RQ003 input errors
-- (through _enqueue_raise_invalid), access.organization_denied (42501),
-- access.organization_required (RQ003), job.enqueue_idempotency_unsupported_isolation
-- (RQ006); _enqueue_check_retries job.enqueue_conflicting_retry (RQ001),
-- job.enqueue_idempotency_race (40001). The others raise nothing of their own.

-- What a request means once it passed the checks, the same through both doors (the
-- set-based parse in _enqueue and enqueue_job's typed arguments): the payload stored
-- (NULL and JSON null as {}), the effective run_at (run_at, else now + delay, else now) and
-- the idempotency snapshot (enqueue.sql, Idempotency: the request as asked, normalized;
-- the organization is the one stamped). SQL without a SET clause, so the planner inlines
-- them into the statement or plpgsql expression that asks: no call at run time. Every
-- name is schema-qualified (as in pgrun._clip); they only run inside the API.
CREATE OR REPLACE FUNCTION pgrun._enqueue_payload(p_payload jsonb)
RETURNS jsonb
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
AS $$
    SELECT coalesce(NULLIF(p_payload, 'null'::pg_catalog.jsonb), '{}'::pg_catalog.jsonb)
$$;

REVOKE EXECUTE ON FUNCTION pgrun._enqueue_payload(jsonb) FROM public;

COMMENT ON FUNCTION pgrun._enqueue_payload(jsonb) IS
'Private: the payload an enqueue request stores (NULL and JSON null as {}).';

-- STABLE, not IMMUTABLE: timestamptz + interval is STABLE in the catalog (with days or months
-- it depends on the session's TimeZone), and PostgreSQL never inlines a sql function declared
-- IMMUTABLE whose body is not: declared IMMUTABLE, this one was planned again on every call
-- (single enqueue 1.13x and enqueue_jobs 1.21x faster as STABLE with fsync off,
-- bench/inlining_bench.py; tests_sql/util/test_sql_helpers_inlined.sql pins which sql helpers
-- are inlined).
CREATE OR REPLACE FUNCTION pgrun._enqueue_run_at(
    p_run_at timestamptz, p_delay_seconds numeric, p_now timestamptz
)
RETURNS timestamptz
LANGUAGE sql
STABLE
PARALLEL SAFE
AS $$
    SELECT coalesce(
        p_run_at,
        p_now OPERATOR(pg_catalog.+) pg_catalog.make_interval(
            secs => p_delay_seconds::pg_catalog.float8
        ),
        p_now
    )
$$;

REVOKE EXECUTE ON FUNCTION pgrun._enqueue_run_at(timestamptz, numeric, timestamptz) FROM public;

COMMENT ON FUNCTION pgrun._enqueue_run_at(timestamptz, numeric, timestamptz) IS
'Private: when an enqueued job is ready: run_at, else now + delay (seconds), else now.';

CREATE OR REPLACE FUNCTION pgrun._enqueue_snapshot(
    p_job_type text,
    p_payload jsonb,
    p_organization_id uuid,
    p_queue text,
    p_priority integer,
    p_max_attempts integer,
    p_timeout_seconds integer,
    p_run_at timestamptz,
    p_delay_seconds numeric
)
RETURNS jsonb
LANGUAGE sql
STABLE
PARALLEL SAFE
AS $$
    SELECT pg_catalog.jsonb_build_object('job_type', p_job_type, 'payload', p_payload)
        OPERATOR(pg_catalog.||) CASE WHEN p_organization_id IS NULL THEN '{}'::pg_catalog.jsonb
            ELSE pg_catalog.jsonb_build_object('organization_id', p_organization_id) END
        OPERATOR(pg_catalog.||) CASE WHEN p_queue IS NULL THEN '{}'::pg_catalog.jsonb
            ELSE pg_catalog.jsonb_build_object('queue', p_queue) END
        OPERATOR(pg_catalog.||) CASE WHEN p_priority IS NULL THEN '{}'::pg_catalog.jsonb
            ELSE pg_catalog.jsonb_build_object('priority', p_priority) END
        OPERATOR(pg_catalog.||) CASE WHEN p_max_attempts IS NULL THEN '{}'::pg_catalog.jsonb
            ELSE pg_catalog.jsonb_build_object('max_attempts', p_max_attempts) END
        OPERATOR(pg_catalog.||) CASE WHEN p_timeout_seconds IS NULL THEN '{}'::pg_catalog.jsonb
            ELSE pg_catalog.jsonb_build_object('timeout_seconds', p_timeout_seconds) END
        OPERATOR(pg_catalog.||) CASE WHEN p_run_at IS NULL THEN '{}'::pg_catalog.jsonb
            ELSE pg_catalog.jsonb_build_object(
                'run_at',
                pg_catalog.to_char(p_run_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
            ) END
        OPERATOR(pg_catalog.||) CASE WHEN p_delay_seconds IS NULL THEN '{}'::pg_catalog.jsonb
            ELSE pg_catalog.jsonb_build_object('delay_seconds', p_delay_seconds) END
$$;

REVOKE EXECUTE ON FUNCTION pgrun._enqueue_snapshot(
    text, jsonb, uuid, text, integer, integer, integer, timestamptz, numeric
) FROM public;

COMMENT ON FUNCTION pgrun._enqueue_snapshot(
    text, jsonb, uuid, text, integer, integer, integer, timestamptz, numeric
) IS
'Private: the idempotency snapshot of an enqueue request (the request as asked, normalized), '
'which a keyed retry must equal.';

-- The elements of a request array with their 1-based index, in array order, each read out
-- once as a jsonb value of its own (array -> index). Not jsonb_array_elements: it hands its
-- elements out of a tuplestore, where a small element is stored with a short header, and
-- every field access (the rules make ~10 per element, the parse ~10 more) then copied the
-- element back to a full one (detoast_attr: 4 % of a bulk enqueue's server time). OFFSET 0
-- keeps the subquery whole, so each element is computed once and read in place. Inlined
-- (STABLE sql, no SET clause).
CREATE OR REPLACE FUNCTION pgrun._enqueue_elements(p_requests jsonb)
RETURNS TABLE (ord integer, elem jsonb)
LANGUAGE sql
STABLE
PARALLEL SAFE
AS $$
    SELECT g.i, p_requests OPERATOR(pg_catalog.->) (g.i OPERATOR(pg_catalog.-) 1)
    FROM pg_catalog.generate_series(1, pg_catalog.jsonb_array_length(p_requests)) AS g (i)
    OFFSET 0
$$;

REVOKE EXECUTE ON FUNCTION pgrun._enqueue_elements(jsonb) FROM public;

COMMENT ON FUNCTION pgrun._enqueue_elements(jsonb) IS
'Private: the elements of an enqueue request array with their 1-based index, in order, each its own '
'jsonb value.';

-- Whether a JSON number's text is an integer in lo..hi (priority, max_attempts, timeout).
CREATE OR REPLACE FUNCTION pgrun._enqueue_integer_in(p_value text, p_lo numeric, p_hi numeric)
RETURNS boolean
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
AS $$
    SELECT p_value::pg_catalog.numeric OPERATOR(pg_catalog.>=) p_lo
        AND p_value::pg_catalog.numeric OPERATOR(pg_catalog.<=) p_hi
        AND p_value::pg_catalog.numeric OPERATOR(pg_catalog.=) pg_catalog.trunc(p_value::pg_catalog.numeric)
$$;

REVOKE EXECUTE ON FUNCTION pgrun._enqueue_integer_in(text, numeric, numeric) FROM public;

COMMENT ON FUNCTION pgrun._enqueue_integer_in(text, numeric, numeric) IS
'Private: whether a JSON number''s text is an integer in p_lo..p_hi.';

-- Whether an element names any optional field (a key given as JSON null counts): which part
-- of the field rules it needs. Inlined.
CREATE OR REPLACE FUNCTION pgrun._enqueue_has_options(p_elem jsonb)
RETURNS boolean
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
AS $$
    SELECT p_elem OPERATOR(pg_catalog.?|) '{queue,priority,run_at,delay,max_attempts,timeout_seconds,idempotency_key,organization_id}'::pg_catalog.text[]
$$;

REVOKE EXECUTE ON FUNCTION pgrun._enqueue_has_options(jsonb) FROM public;

COMMENT ON FUNCTION pgrun._enqueue_has_options(jsonb) IS
'Private: whether an enqueue request element has a key besides job_type and payload (JSON null included), '
'so the optional fields'' rules apply to it.';

-- THE field rules of one enqueue request element, in the order they are checked: the error
-- code of the first one it breaks, or NULL. SQL without a SET clause, so the planner
-- inlines it: into _enqueue_first_invalid's statement over a whole array, and into a
-- plpgsql expression for the single request (enqueue_job through _enqueue_check_requests),
-- where it runs as a simple expression instead of a query. Every name is schema-qualified
-- (as in pgrun._clip); it only runs inside the API. The WHENs are tried in order, so a
-- string is parsed only when every earlier rule passed; a malformed timestamp, interval or
-- uuid string raises a data_exception (class 22), which _enqueue_check turns into the code.
-- JSON null counts as a field left out.
--
-- Two parts: _enqueue_invalid_code_basic, the rules every element needs (its keys, the
-- type, the payload), then the optional fields' rules, tried only when the first part
-- passed (coalesce evaluates its second argument only when the first is NULL: the same
-- order as one CASE). The single request with only a type and a payload evaluates the
-- first part alone: a plpgsql expression is set up whole in every transaction, and the
-- whole CASE costs ~33 us to set up against ~6 us for its first part.
CREATE OR REPLACE FUNCTION pgrun._enqueue_invalid_code_basic(p_elem jsonb)
RETURNS text
LANGUAGE sql
STABLE
PARALLEL SAFE
AS $$
    SELECT CASE
        WHEN pg_catalog.jsonb_typeof(p_elem) OPERATOR(pg_catalog.<>) 'object'
            OR p_elem OPERATOR(pg_catalog.-) '{job_type,payload,queue,priority,run_at,delay,max_attempts,timeout_seconds,idempotency_key,organization_id}'::pg_catalog.text[]
            OPERATOR(pg_catalog.<>) '{}'::pg_catalog.jsonb
            THEN 'job.invalid_batch'
        -- the rule the job_definitions / job_schedules CHECK constraints call
        WHEN coalesce(pg_catalog.jsonb_typeof(p_elem OPERATOR(pg_catalog.->) 'job_type'), 'null')
            OPERATOR(pg_catalog.<>) 'string'
            OR NOT pgrun._valid_job_type(p_elem OPERATOR(pg_catalog.->>) 'job_type')
            THEN 'job.invalid_type'
        WHEN p_elem OPERATOR(pg_catalog.?) 'payload'
            AND pg_catalog.jsonb_typeof(p_elem OPERATOR(pg_catalog.->) 'payload')
            OPERATOR(pg_catalog.<>) ALL ('{"null",object}'::pg_catalog.text[])
            THEN 'job.invalid_payload'
        -- 1 MiB of jsonb
        WHEN pg_catalog.pg_column_size(p_elem OPERATOR(pg_catalog.->) 'payload') OPERATOR(pg_catalog.>) 1048576
            THEN 'job.payload_too_large'
        -- the nesting rule (util/_limits.sql): a small payload skips the walk
        WHEN NOT pgrun._json_depth_ok(p_elem OPERATOR(pg_catalog.->) 'payload')
            THEN 'job.invalid_payload'
    END
$$;

REVOKE EXECUTE ON FUNCTION pgrun._enqueue_invalid_code_basic(jsonb) FROM public;

COMMENT ON FUNCTION pgrun._enqueue_invalid_code_basic(jsonb) IS
'Private: the error code of the first rule every enqueue request element needs (keys, type, payload) '
'it breaks, or NULL; the first part of pgrun._enqueue_invalid_code.';

CREATE OR REPLACE FUNCTION pgrun._enqueue_invalid_code(p_elem jsonb)
RETURNS text
LANGUAGE sql
STABLE
PARALLEL SAFE
AS $$
    SELECT coalesce(pgrun._enqueue_invalid_code_basic(p_elem), CASE
        -- the common element has nothing else: one cheap test instead of many
        WHEN NOT pgrun._enqueue_has_options(p_elem)
            THEN NULL
        WHEN p_elem OPERATOR(pg_catalog.?) 'queue' AND (
            pg_catalog.jsonb_typeof(p_elem OPERATOR(pg_catalog.->) 'queue')
            OPERATOR(pg_catalog.<>) ALL ('{"null",string}'::pg_catalog.text[])
            OR NOT pgrun._valid_queue(p_elem OPERATOR(pg_catalog.->>) 'queue')
        )
            THEN 'job.invalid_queue'
        WHEN p_elem OPERATOR(pg_catalog.?) 'priority' AND (
            pg_catalog.jsonb_typeof(p_elem OPERATOR(pg_catalog.->) 'priority')
            OPERATOR(pg_catalog.<>) ALL ('{"null",number}'::pg_catalog.text[])
            OR NOT pgrun._enqueue_integer_in(p_elem OPERATOR(pg_catalog.->>) 'priority', 0, 32767)
        )
            THEN 'job.invalid_priority'
        WHEN p_elem OPERATOR(pg_catalog.?) 'max_attempts' AND (
            pg_catalog.jsonb_typeof(p_elem OPERATOR(pg_catalog.->) 'max_attempts')
            OPERATOR(pg_catalog.<>) ALL ('{"null",number}'::pg_catalog.text[])
            OR NOT pgrun._enqueue_integer_in(p_elem OPERATOR(pg_catalog.->>) 'max_attempts', 1, 1000)
        )
            THEN 'job.invalid_max_attempts'
        WHEN p_elem OPERATOR(pg_catalog.?) 'timeout_seconds' AND (
            pg_catalog.jsonb_typeof(p_elem OPERATOR(pg_catalog.->) 'timeout_seconds')
            OPERATOR(pg_catalog.<>) ALL ('{"null",number}'::pg_catalog.text[])
            OR NOT pgrun._enqueue_integer_in(p_elem OPERATOR(pg_catalog.->>) 'timeout_seconds', 1, 2147483647)
        )
            THEN 'job.invalid_timeout'
        WHEN coalesce(pg_catalog.jsonb_typeof(p_elem OPERATOR(pg_catalog.->) 'run_at'), 'null')
            OPERATOR(pg_catalog.<>) 'null'
            AND coalesce(pg_catalog.jsonb_typeof(p_elem OPERATOR(pg_catalog.->) 'delay'), 'null')
            OPERATOR(pg_catalog.<>) 'null'
            THEN 'job.invalid_schedule'
        WHEN p_elem OPERATOR(pg_catalog.?) 'run_at' AND (
            pg_catalog.jsonb_typeof(p_elem OPERATOR(pg_catalog.->) 'run_at')
            OPERATOR(pg_catalog.<>) ALL ('{"null",string}'::pg_catalog.text[])
            OR NOT pgrun._time_ok((p_elem OPERATOR(pg_catalog.->>) 'run_at')::pg_catalog.timestamptz)
        )
            THEN 'job.invalid_schedule'
        -- 100 Julian years: the time-argument rule (pgrun._time_ok), for a delay in seconds
        WHEN p_elem OPERATOR(pg_catalog.?) 'delay' AND (
            pg_catalog.jsonb_typeof(p_elem OPERATOR(pg_catalog.->) 'delay')
            OPERATOR(pg_catalog.<>) ALL ('{"null",number,string}'::pg_catalog.text[])
            OR NOT (
                CASE pg_catalog.jsonb_typeof(p_elem OPERATOR(pg_catalog.->) 'delay')
                    WHEN 'number' THEN (p_elem OPERATOR(pg_catalog.->>) 'delay')::pg_catalog.numeric
                    ELSE pg_catalog.extract(
                        'epoch', (p_elem OPERATOR(pg_catalog.->>) 'delay')::pg_catalog.interval
                    )
                END OPERATOR(pg_catalog.<@) '[0,3155760000]'::pg_catalog.numrange
            )
        )
            THEN 'job.invalid_schedule'
        WHEN p_elem OPERATOR(pg_catalog.?) 'idempotency_key' AND (
            pg_catalog.jsonb_typeof(p_elem OPERATOR(pg_catalog.->) 'idempotency_key')
            OPERATOR(pg_catalog.<>) ALL ('{"null",string}'::pg_catalog.text[])
            OR NOT pg_catalog.length(p_elem OPERATOR(pg_catalog.->>) 'idempotency_key')
            OPERATOR(pg_catalog.<@) '[1,256]'::pg_catalog.int4range
        )
            THEN 'job.invalid_idempotency_key'
        -- the nil uuid is the "no organization" slot of jobs_idempotency_idx
        WHEN p_elem OPERATOR(pg_catalog.?) 'organization_id' AND (
            pg_catalog.jsonb_typeof(p_elem OPERATOR(pg_catalog.->) 'organization_id')
            OPERATOR(pg_catalog.<>) ALL ('{"null",string}'::pg_catalog.text[])
            OR (p_elem OPERATOR(pg_catalog.->>) 'organization_id')::pg_catalog.uuid
            OPERATOR(pg_catalog.=) '00000000-0000-0000-0000-000000000000'::pg_catalog.uuid
        )
            THEN 'job.invalid_organization'
    END)
$$;

REVOKE EXECUTE ON FUNCTION pgrun._enqueue_invalid_code(jsonb) FROM public;

COMMENT ON FUNCTION pgrun._enqueue_invalid_code(jsonb) IS
'Private: the error code of the first field rule an enqueue request element breaks, or NULL; '
'raises data_exception on an unparsable timestamp, interval or uuid string.';

-- The whole validation of a request array, as one read-only statement: the first
-- bad element's 1-based index and error code (pgrun._enqueue_invalid_code, inlined), or no
-- row. A malformed timestamp, interval or uuid string raises a data_exception (class 22)
-- instead; _enqueue_check then finds the element one by one.
CREATE OR REPLACE FUNCTION pgrun._enqueue_first_invalid(p_requests jsonb)
RETURNS TABLE (bad_ordinality integer, bad_code text)
LANGUAGE plpgsql
STABLE
SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
    RETURN QUERY
    SELECT c.ord, c.code
    FROM (
        SELECT e.ord, pgrun._enqueue_invalid_code(e.elem) AS code
        FROM pgrun._enqueue_elements(p_requests) AS e
    ) AS c
    WHERE c.code IS NOT NULL
    ORDER BY c.ord
    LIMIT 1;
END;
$$;

REVOKE EXECUTE ON FUNCTION pgrun._enqueue_first_invalid(jsonb) FROM public;

COMMENT ON FUNCTION pgrun._enqueue_first_invalid(jsonb) IS
'Private: the first invalid element of an enqueue request array (index, error code), or no row; '
'raises data_exception on an unparsable timestamp, interval or uuid string.';

-- The first invalid element (1-based index, error code), or NULLs when all are valid.
-- Normally one pass of _enqueue_first_invalid; when a string does not parse, the
-- elements are checked one by one so the error still names the first bad one.
CREATE OR REPLACE FUNCTION pgrun._enqueue_check(
    p_requests jsonb, OUT bad_ordinality integer, OUT bad_code text
)
LANGUAGE plpgsql
STABLE
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    v_elem jsonb;
    v_ord integer;
    v_code text;
BEGIN
    BEGIN
        SELECT f.bad_ordinality, f.bad_code INTO bad_ordinality, bad_code
        FROM pgrun._enqueue_first_invalid(p_requests) AS f;
        RETURN;
    EXCEPTION WHEN data_exception THEN
        NULL;  -- fall through to the element-by-element search
    END;
    FOR v_elem, v_ord IN
        SELECT e.elem, e.ord::integer
        FROM jsonb_array_elements(p_requests) WITH ORDINALITY AS e (elem, ord)
    LOOP
        BEGIN
            SELECT f.bad_code INTO v_code
            FROM pgrun._enqueue_first_invalid(jsonb_build_array(v_elem)) AS f;
        EXCEPTION WHEN data_exception THEN
            -- only run_at, delay and organization_id are parsed from strings
            v_code := 'job.invalid_schedule';
            BEGIN
                PERFORM (v_elem ->> 'organization_id')::uuid;
            EXCEPTION WHEN data_exception THEN
                v_code := 'job.invalid_organization';
            END;
        END;
        IF v_code IS NOT NULL THEN
            bad_ordinality := v_ord;
            bad_code := v_code;
            RETURN;
        END IF;
    END LOOP;
END;
$$;

REVOKE EXECUTE ON FUNCTION pgrun._enqueue_check(jsonb) FROM public;

COMMENT ON FUNCTION pgrun._enqueue_check(jsonb) IS
'Private: the first invalid element of an enqueue request array (index, error code), or NULLs.';

-- Raises the input error p_code for one request element, with a DETAIL naming the
-- element (by its 1-based index when p_ordinality is given) and the offending value.
CREATE OR REPLACE FUNCTION pgrun._enqueue_raise_invalid(
    p_code text, p_elem jsonb, p_ordinality integer
)
RETURNS void
LANGUAGE plpgsql
STABLE
AS $$
DECLARE
    v_where text := CASE WHEN p_ordinality IS NULL THEN '' ELSE format('element %s: ', p_ordinality) END;
    v_detail text;
    v_hint text;
BEGIN
    CASE p_code
        WHEN 'job.invalid_batch' THEN
            v_detail := CASE
                WHEN jsonb_typeof(p_elem) <> 'object'
                    THEN format('%sis a JSON %s, not an object', v_where, jsonb_typeof(p_elem))
                ELSE format(
                    '%sunknown keys %s',
                    v_where,
                    pgrun._clip((SELECT string_agg(k.key, ', ' ORDER BY k.key)
                     FROM jsonb_object_keys(p_elem) AS k (key)
                     WHERE k.key <> ALL (ARRAY[
                         'job_type', 'payload', 'queue', 'priority', 'run_at', 'delay',
                         'max_attempts', 'timeout_seconds', 'idempotency_key', 'organization_id'
                     ])), 200)
                )
            END;
            v_hint := 'Each element is an object whose keys are enqueue_job''s parameter names.';
        WHEN 'job.invalid_type' THEN
            PERFORM pgrun._job_raise_invalid_type(format('%sjob_type %s is not a valid job type', v_where,
                left(coalesce(p_elem -> 'job_type', 'null'::jsonb)::text, 200)));
        WHEN 'job.invalid_payload' THEN
            IF jsonb_typeof(p_elem -> 'payload') = 'object' THEN
                v_detail := format('%spayload is nested more than 100 levels deep (arrays and objects)', v_where);
                v_hint := 'Flatten the payload: pgrun stores JSON nested at most 100 levels.';
            ELSE
                v_detail := format('%spayload is a JSON %s, not an object', v_where,
                    jsonb_typeof(p_elem -> 'payload'));
                v_hint := 'Wrap the value in an object, e.g. {"value": ...}.';
            END IF;
        WHEN 'job.payload_too_large' THEN
            v_detail := format('%spayload is %s bytes of jsonb; the limit is 1 MiB (1048576)', v_where,
                pg_column_size(p_elem -> 'payload'));
            v_hint := 'Store large data elsewhere and pass a reference in the payload.';
        WHEN 'job.invalid_queue' THEN
            v_detail := format('%squeue %s is not a valid queue name', v_where,
                left((p_elem -> 'queue')::text, 100));
            v_hint := 'Use at most 64 characters: a lowercase letter, then lowercase letters, '
                'digits, "_", ".", ":" or "-".';
        WHEN 'job.invalid_priority' THEN
            v_detail := format('%spriority %s is not an integer in 0..32767', v_where,
                left((p_elem -> 'priority')::text, 100));
            v_hint := 'Lower numbers run first; the default is 100.';
        WHEN 'job.invalid_max_attempts' THEN
            v_detail := format('%smax_attempts %s is not an integer in 1..1000', v_where,
                left((p_elem -> 'max_attempts')::text, 100));
            v_hint := 'max_attempts counts every try, the first included; the default is 20.';
        WHEN 'job.invalid_timeout' THEN
            v_detail := format('%stimeout_seconds %s is not a positive integer', v_where,
                left((p_elem -> 'timeout_seconds')::text, 100));
            v_hint := 'Pass a positive number of seconds, or leave it out for no timeout.';
        WHEN 'job.invalid_schedule' THEN
            v_detail := format('%srun_at %s, delay %s', v_where,
                left(coalesce(p_elem -> 'run_at', 'null'::jsonb)::text, 100),
                left(coalesce(p_elem -> 'delay', 'null'::jsonb)::text, 100));
            v_hint := 'Give run_at (a finite timestamp at most 100 years ahead) or delay (0 s to 100 years), '
                'not both.';
        WHEN 'job.invalid_idempotency_key' THEN
            v_detail := format('%sidempotency_key %s is not a string of 1..256 characters', v_where,
                left((p_elem -> 'idempotency_key')::text, 200));
            v_hint := 'Pass a non-empty string of at most 256 characters, or leave it out.';
        WHEN 'job.invalid_organization' THEN
            v_detail := format('%sorganization_id %s is not a usable uuid', v_where,
                left((p_elem -> 'organization_id')::text, 100));
            v_hint := 'Pass the organization''s uuid (not the nil uuid), or leave it out.';
        ELSE
            v_detail := format('%sinvalid request', v_where);
            v_hint := NULL;
    END CASE;
    PERFORM pgrun._raise(p_code, v_detail, v_hint);
END;
$$;

REVOKE EXECUTE ON FUNCTION pgrun._enqueue_raise_invalid(text, jsonb, integer) FROM public;

COMMENT ON FUNCTION pgrun._enqueue_raise_invalid(text, jsonb, integer) IS
'Private: raises enqueue input error p_code (RQ003) for one request element, DETAIL naming it.';


-- Sections 0 and 1 of _enqueue: everything checked before anything is written, in this
-- order: the call's shape (a JSON array of at most 100000 elements; an empty one returns at
-- once), every element's fields (pgrun._enqueue_check, the first bad element raised by
-- pgrun._enqueue_raise_invalid), the organizations (the caller may act for every element's,
-- util/_access.sql; admins and any-organization roles skip the pass), and the isolation
-- level of keyed elements (READ COMMITTED, at which a second insert of a key waits for the
-- first and then reads its committed row; READ UNCOMMITTED is READ COMMITTED in
-- PostgreSQL). Returns the organization an element without organization_id is stamped
-- with (NULL for none). One function, not one per check: each plpgsql call on the hot path
-- costs a single enqueue about 1% (its expressions are set up again in every transaction).
-- p_single => true words errors for one job (no element index).
-- Errors: job.invalid_batch, job.batch_too_large and the RQ003 input errors of enqueue.sql;
-- access.organization_denied (42501: an element names, or defaults to, an organization the
-- caller may not act for), access.organization_required (RQ003: the caller acts for several
-- and an element names none); job.enqueue_idempotency_unsupported_isolation (RQ006).
CREATE OR REPLACE FUNCTION pgrun._enqueue_check_requests(p_requests jsonb, p_single boolean)
RETURNS uuid
LANGUAGE plpgsql
STABLE
AS $$
DECLARE
    c_max_batch CONSTANT integer := 100000;
    v_count integer;
    v_bad_ord integer;
    v_bad_code text;
    v_default_org uuid;
    v_allowed_orgs uuid[];
    v_bad_org uuid;
    v_where text;
BEGIN
    IF p_requests IS NULL OR jsonb_typeof(p_requests) <> 'array' THEN
        PERFORM pgrun._raise(
            'job.invalid_batch',
            format(
                'jobs is %s, not a JSON array', coalesce(jsonb_typeof(p_requests), 'NULL')
            ),
            'Pass a JSON array of objects, e.g. [{"job_type": "email.send", "payload": {}}].'
        );
    END IF;
    v_count := jsonb_array_length(p_requests);
    IF v_count = 0 THEN
        RETURN NULL;
    END IF;
    IF v_count > c_max_batch THEN
        PERFORM pgrun._raise(
            'job.batch_too_large',
            format('%s jobs in one call; the limit is %s', v_count, c_max_batch),
            'Split the array into several calls.'
        );
    END IF;

    -- A single request comes from enqueue_job's typed arguments, whose JSON always parses
    -- back: the rules as one plpgsql expression, no query, no subtransaction; a request of
    -- only a type and a payload needs the first part of the rules alone.
    IF p_single THEN
        IF pgrun._enqueue_has_options(p_requests -> 0) THEN
            v_bad_code := pgrun._enqueue_invalid_code(p_requests -> 0);
        ELSE
            v_bad_code := pgrun._enqueue_invalid_code_basic(p_requests -> 0);
        END IF;
        v_bad_ord := CASE WHEN v_bad_code IS NOT NULL THEN 1 END;
    ELSE
        SELECT c.bad_ordinality, c.bad_code INTO v_bad_ord, v_bad_code
        FROM pgrun._enqueue_check(p_requests) AS c;
    END IF;
    IF v_bad_ord IS NOT NULL THEN
        PERFORM pgrun._enqueue_raise_invalid(
            v_bad_code, p_requests -> (v_bad_ord - 1), CASE WHEN NOT p_single THEN v_bad_ord END
        );
    END IF;

    SELECT w.default_organization, w.allowed_organizations INTO v_default_org, v_allowed_orgs
    FROM pgrun._caller_write_organizations() AS w;
    -- A role bound to organizations: each element's (or the default) must be one of them. A
    -- single request's is an expression, not a query over the array (the query cost a single
    -- enqueue by such a role ~22 us more, docs/performance.md).
    IF v_allowed_orgs IS NOT NULL THEN
        IF p_single THEN
            v_bad_org := coalesce((p_requests -> 0 ->> 'organization_id')::uuid, v_default_org);
            v_bad_ord := CASE WHEN pgrun._organization_refused(v_bad_org, v_allowed_orgs) THEN 1 END;
        ELSE
            SELECT e.ord::integer, o.org
            INTO v_bad_ord, v_bad_org
            FROM jsonb_array_elements(p_requests) WITH ORDINALITY AS e (elem, ord)
            CROSS JOIN LATERAL (SELECT coalesce((e.elem ->> 'organization_id')::uuid, v_default_org) AS org) AS o
            WHERE pgrun._organization_refused(o.org, v_allowed_orgs)
            ORDER BY e.ord
            LIMIT 1;
        END IF;
        IF v_bad_ord IS NOT NULL THEN
            v_where := CASE WHEN p_single THEN '' ELSE format('element %s: ', v_bad_ord) END;
            IF v_bad_org IS NULL THEN
                PERFORM pgrun._raise_organization_required(cardinality(v_allowed_orgs), v_where);
            END IF;
            PERFORM pgrun._raise_organization_denied(v_bad_org, v_where);
        END IF;
    END IF;

    IF current_setting('transaction_isolation') NOT IN ('read committed', 'read uncommitted') THEN
        SELECT e.ord::integer INTO v_bad_ord
        FROM jsonb_array_elements(p_requests) WITH ORDINALITY AS e (elem, ord)
        WHERE jsonb_typeof(e.elem -> 'idempotency_key') = 'string'
        ORDER BY e.ord
        LIMIT 1;
        IF v_bad_ord IS NOT NULL THEN
            PERFORM pgrun._raise(
                'job.enqueue_idempotency_unsupported_isolation',
                format(
                    '%sa keyed enqueue ran at isolation level %s',
                    CASE WHEN p_single THEN '' ELSE format('element %s: ', v_bad_ord) END,
                    current_setting('transaction_isolation')
                ),
                'Run keyed enqueues in a READ COMMITTED transaction (the default), '
                    'or leave out the idempotency key.'
            );
        END IF;
    END IF;
    RETURN v_default_org;
END;
$$;

REVOKE EXECUTE ON FUNCTION pgrun._enqueue_check_requests(jsonb, boolean) FROM public;

COMMENT ON FUNCTION pgrun._enqueue_check_requests(jsonb, boolean) IS
'Private: every check of an enqueue call before it writes (shape, fields, organizations, isolation of keyed '
'elements); returns the organization it stamps on elements that name none.';

-- Section 3 of _enqueue: the keyed elements of p_jobs (the jobs handed to the insert) that
-- created nothing (their id is not in p_created, the ids the insert returned). Each must be a retry of the request that holds
-- its key: the stored snapshot equals the element's. Returns them, in array order, as a
-- JSON array of {ordinality, id, status, run_at}, the job each key names as it is now, for
-- the result (NULL when every keyed element created its job). The existing rows are read
-- once, in this new statement, which sees a concurrent insert committed while the insert
-- waited for it (READ COMMITTED). Errors: job.enqueue_conflicting_retry (RQ001: the key
-- holds a different request; DETAIL lists the keys that differ),
-- job.enqueue_idempotency_race (40001: the row holding the key is gone, e.g. purged
-- meanwhile), each naming the first such element unless p_single.
CREATE OR REPLACE FUNCTION pgrun._enqueue_check_retries(
    p_jobs pgrun._new_job[],
    p_created uuid[],
    p_single boolean
)
RETURNS jsonb
LANGUAGE plpgsql
STABLE
AS $$
DECLARE
    v_found jsonb;
    v_bad_ord integer;
    v_existing_id uuid;
    v_existing_request jsonb;
    v_request jsonb;
    v_where text;
BEGIN
    WITH found AS MATERIALIZED (
        SELECT u.ordinality AS ord, u.enqueue_request AS request, x.id, x.status, x.run_at, x.enqueue_request
        FROM unnest(p_jobs) WITH ORDINALITY AS u
        -- LIMIT keeps this a per-element probe of jobs_idempotency_idx, never a join over jobs
        LEFT JOIN LATERAL (
            SELECT h.id, h.status, h.run_at, h.enqueue_request
            FROM pgrun.jobs AS h
            WHERE h.job_type = u.job_type
                AND coalesce(h.organization_id, '00000000-0000-0000-0000-000000000000'::uuid)
                = coalesce(u.organization_id, '00000000-0000-0000-0000-000000000000'::uuid)
                AND h.idempotency_key = u.idempotency_key
            LIMIT 1
        ) AS x ON TRUE
        WHERE u.idempotency_key IS NOT NULL
            AND NOT EXISTS (SELECT FROM unnest(p_created) AS c (id) WHERE c.id = u.id)
    )
    SELECT
        (SELECT jsonb_agg(
            jsonb_build_object('ordinality', f.ord, 'id', f.id, 'status', f.status, 'run_at', f.run_at)
            ORDER BY f.ord
        ) FROM found AS f),
        b.ord, b.id, b.enqueue_request, b.request
    INTO v_found, v_bad_ord, v_existing_id, v_existing_request, v_request
    FROM (SELECT 1) AS one
    LEFT JOIN LATERAL (
        SELECT f.ord::integer AS ord, f.id, f.enqueue_request, f.request
        FROM found AS f
        WHERE f.id IS NULL OR f.enqueue_request IS DISTINCT FROM f.request
        ORDER BY f.ord
        LIMIT 1
    ) AS b ON TRUE;
    IF v_bad_ord IS NULL THEN
        RETURN v_found;
    END IF;
    v_where := CASE WHEN p_single THEN '' ELSE format('element %s: ', v_bad_ord) END;
    IF v_existing_id IS NULL THEN
        PERFORM pgrun._raise(
            'job.enqueue_idempotency_race',
            format(
                '%sthe job holding this idempotency key was deleted while the call ran', v_where
            ),
            'Retry the call.'
        );
    END IF;
    PERFORM pgrun._raise(
        'job.enqueue_conflicting_retry',
        format(
            '%sthe idempotency key already names job %s, enqueued with a different request '
            '(differs in: %s)',
            v_where,
            v_existing_id,
            (SELECT string_agg(k.key, ', ' ORDER BY k.key)
             FROM (
                 SELECT a.key FROM jsonb_each(v_existing_request) AS a
                 UNION
                 SELECT b.key FROM jsonb_each(v_request) AS b
             ) AS k
             WHERE v_existing_request -> k.key IS DISTINCT FROM v_request -> k.key)
        ),
        'Resend the original request unchanged, or use a new idempotency key '
            'for a different request.'
    );
    RETURN NULL;  -- not reached: pgrun._raise never returns
END;
$$;

REVOKE EXECUTE ON FUNCTION pgrun._enqueue_check_retries(pgrun._new_job[], uuid[], boolean) FROM public;

COMMENT ON FUNCTION pgrun._enqueue_check_retries(pgrun._new_job[], uuid[], boolean) IS
'Private: the keyed enqueue elements that created nothing, each checked to be a retry of its key''s request; '
'raises job.enqueue_conflicting_retry (RQ001) or job.enqueue_idempotency_race (40001).';

-- enqueue_jobs' core, section by section: 0 and 1. the call's shape, every element valid, the
-- caller's organizations, the isolation level, before anything is written
-- (_enqueue_check_requests); 2. the elements parsed into jobs (here) and inserted through the
-- one insert every new job goes through; 3. keyed elements that created nothing checked as
-- retries (_enqueue_check_retries); then one row per element, in array order. Its errors name
-- the element (enqueue_job calls the same helpers for its one job and words them without).
-- Generic plans (here and in the helpers, which inherit the setting: only the ones other
-- callers use too set it themselves): with the default plan cache mode its statements were
-- re-planned on every call, about a third of the cost of an enqueue of one element; their
-- plans do not depend on the values anyway.
-- Errors: those of its sections, listed in enqueue.sql.
CREATE OR REPLACE FUNCTION pgrun._enqueue(p_requests jsonb)
RETURNS TABLE (
    r_ordinality integer, r_job_id uuid, r_created boolean, r_status text, r_run_at timestamptz
)
LANGUAGE plpgsql
VOLATILE
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    v_now timestamptz := pgrun.now();
    v_count integer;
    v_first_slot bigint;
    v_default_org uuid;
    v_jobs pgrun._new_job[];
    v_keyed boolean;
    v_created uuid[];
    v_pending jsonb;
BEGIN
    -- 0 and 1. Validate everything before writing anything.
    v_default_org := pgrun._enqueue_check_requests(p_requests, FALSE);
    v_count := jsonb_array_length(p_requests);
    IF v_count = 0 THEN
        RETURN;
    END IF;
    v_first_slot := pgrun._uuidv7_reserve(v_count);

    -- 2. Each element as its job (a pgrun._new_job), in array order: a new id (the next
    -- of the session's UUIDv7 slots, pgrun._uuidv7_reserve), the payload (NULL as {}), the
    -- settings asked (NULL = not asked), the effective run_at (run_at, else now + delay,
    -- else now), the organization (the element's, else the default), the key and, for a
    -- keyed element only, the snapshot of the request as asked (enqueue.sql, Idempotency).
    -- Written here, not in a helper: arrays handed out of a function are copied twice more.
    -- Then the shared insert resolves, inserts and announces them.
    SELECT
        array_agg(ROW(
            q.id, q.job_type, q.payload, q.queue, q.priority, q.max_attempts, q.timeout_seconds,
            q.eff_run_at, q.organization_id, q.idempotency_key, q.request, NULL, NULL, NULL
        )::pgrun._new_job),
        count(q.idempotency_key) > 0
    INTO v_jobs, v_keyed
    FROM (
        SELECT
            e.ord,
            e.id,
            r.*,
            pgrun._enqueue_run_at(r.run_at, r.delay_seconds, v_now) AS eff_run_at,
            CASE WHEN r.idempotency_key IS NOT NULL THEN pgrun._enqueue_snapshot(
                r.job_type, r.payload, r.organization_id, r.queue, r.priority, r.max_attempts,
                r.timeout_seconds, r.run_at, r.delay_seconds
            ) END AS request
        FROM (
            -- ids in array order: the slots reserved above, one each
            SELECT x.ord, x.elem, pgrun._uuidv7_at(v_first_slot + x.ord - 1) AS id
            FROM pgrun._enqueue_elements(p_requests) AS x
        ) AS e
        CROSS JOIN LATERAL (
            SELECT
                e.elem ->> 'job_type' AS job_type,
                pgrun._enqueue_payload(e.elem -> 'payload') AS payload,
                e.elem ->> 'queue' AS queue,
                (e.elem ->> 'priority')::numeric::integer AS priority,
                (e.elem ->> 'max_attempts')::numeric::integer AS max_attempts,
                (e.elem ->> 'timeout_seconds')::numeric::integer AS timeout_seconds,
                (e.elem ->> 'run_at')::timestamptz AS run_at,
                CASE jsonb_typeof(e.elem -> 'delay')
                    WHEN 'number' THEN (e.elem ->> 'delay')::numeric
                    WHEN 'string' THEN extract(EPOCH FROM (e.elem ->> 'delay')::interval)
                END AS delay_seconds,
                e.elem ->> 'idempotency_key' AS idempotency_key,
                coalesce((e.elem ->> 'organization_id')::uuid, v_default_org) AS organization_id
        ) AS r
        -- the aggregates keep this order: every array lists the elements in array order
        ORDER BY e.ord
    ) AS q;
    v_created := pgrun._enqueue_insert_jobs(v_jobs);

    -- 3. Keyed elements that created nothing: an identical earlier request, or a conflict.
    IF v_keyed THEN
        v_pending := pgrun._enqueue_check_retries(v_jobs, v_created, FALSE);
    END IF;

    IF v_pending IS NULL THEN
        RETURN QUERY
        SELECT u.ordinality::integer, u.id, TRUE, 'queued'::text, u.run_at
        FROM unnest(v_jobs) WITH ORDINALITY AS u
        ORDER BY u.ordinality;
        RETURN;
    END IF;
    -- a retried element returns the job its key names, as _enqueue_check_retries read it
    RETURN QUERY
    SELECT
        u.ordinality::integer,
        coalesce(e.id, u.id),
        e.ordinality IS NULL,
        coalesce(e.status, 'queued'),
        coalesce(e.run_at, u.run_at)
    FROM unnest(v_jobs) WITH ORDINALITY AS u
    LEFT JOIN jsonb_to_recordset(v_pending) AS e (ordinality integer, id uuid, status text, run_at timestamptz)
        ON e.ordinality = u.ordinality
    ORDER BY u.ordinality;
END;
$$;

REVOKE EXECUTE ON FUNCTION pgrun._enqueue(jsonb) FROM public;

COMMENT ON FUNCTION pgrun._enqueue(jsonb) IS
'Private: the set-based core of enqueue_jobs (enqueue_job takes its own lean path through the same helpers).';
