-- Private helpers of the schedule functions: the cron shape check, the time zone check,
-- the lookup of a schedule by (name, organization), and the scope list check.
--
-- SQL cannot evaluate a cron expression (that is croniter's job in the scheduler), so
-- _schedule_check_cron checks what SQL can: 5 or 6 whitespace-separated fields (the sixth
-- is seconds, croniter's convention) or one of the @macros, each field made only of the
-- characters its position allows, month and weekday names spelled right, and every plain
-- number (not a step after "/" or a "#" ordinal) inside the field's range. Anything that
-- passes here and still does not parse is refused by the Python side before upsert.
--
-- Locks: none (read-only). Errors (RQ003): schedule.invalid_cron, schedule.invalid_timezone,
-- schedule.invalid_scopes, schedule.invalid_name; RQ002: schedule.not_found.

-- The expression with its whitespace collapsed, or raises schedule.invalid_cron.
CREATE OR REPLACE FUNCTION pgrun._schedule_check_cron(p_cron text)
RETURNS text
LANGUAGE plpgsql
IMMUTABLE
AS $$
DECLARE
    c_macros CONSTANT text[] := ARRAY[
        '@yearly', '@annually', '@monthly', '@weekly', '@daily', '@midnight', '@hourly'
    ];
    -- per position: field name, allowed characters, lowest and highest plain number
    c_names CONSTANT text[] := ARRAY['minute', 'hour', 'day of month', 'month', 'day of week', 'second'];
    c_chars CONSTANT text[] := ARRAY[
        '^[0-9*,/-]+$', '^[0-9*,/-]+$', '^[0-9*,/?LW-]+$', '^[0-9A-Za-z*,/-]+$',
        '^[0-9A-Za-z*,/?#-]+$', '^[0-9*,/-]+$'
    ];
    c_low CONSTANT integer[] := ARRAY[0, 0, 1, 1, 0, 0];
    c_high CONSTANT integer[] := ARRAY[59, 23, 31, 12, 7, 59];
    v_cron text := btrim(regexp_replace(coalesce(p_cron, ''), '\s+', ' ', 'g'));
    v_fields text[];
    v_problem text;
    v_field text;
    v_word text;
    v_number integer;
BEGIN
    IF p_cron IS NULL OR v_cron = '' THEN
        v_problem := 'the expression is empty';
    ELSIF length(v_cron) > 200 THEN
        v_problem := format('the expression is %s characters long (at most 200)', length(v_cron));
    ELSIF left(v_cron, 1) = '@' THEN
        IF NOT lower(v_cron) = ANY (c_macros) THEN
            v_problem := format('unknown macro %s (known: %s)', v_cron, array_to_string(c_macros, ', '));
        END IF;
        v_cron := lower(v_cron);
    ELSE
        v_fields := string_to_array(v_cron, ' ');
        IF cardinality(v_fields) NOT IN (5, 6) THEN
            v_problem := format(
                '%s fields; a cron expression has 5 (minute hour day month weekday) or 6 '
                '(the same, then seconds)',
                cardinality(v_fields)
            );
        ELSE
            FOR v_i IN 1 .. cardinality(v_fields) LOOP
                v_field := v_fields[v_i];
                IF v_field !~ c_chars[v_i] THEN
                    v_problem := format('%s field %L has characters it cannot hold', c_names[v_i], v_field);
                    EXIT;
                END IF;
                -- names: months JAN..DEC, weekdays SUN..SAT (and L for "last")
                FOR v_word IN SELECT m[1] FROM regexp_matches(v_field, '([A-Za-z]+)', 'g') AS m LOOP
                    IF NOT (
                        (v_i = 4 AND lower(v_word) = ANY (ARRAY[
                            'jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'
                        ]))
                        OR (v_i = 5 AND lower(v_word) = ANY (ARRAY[
                            'sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'l'
                        ]))
                    ) THEN
                        v_problem := format('%s field %L: unknown name %L', c_names[v_i], v_field, v_word);
                        EXIT;
                    END IF;
                END LOOP;
                EXIT WHEN v_problem IS NOT NULL;
                -- plain numbers (not a step after "/", not a "#" ordinal) lie in the field's range
                FOR v_number IN
                    SELECT m[1]::integer
                    FROM regexp_matches(v_field, '(?:^|[,-])([0-9]{1,9})', 'g') AS m
                LOOP
                    IF v_number NOT BETWEEN c_low[v_i] AND c_high[v_i] THEN
                        v_problem := format(
                            '%s field %L: %s is outside %s..%s',
                            c_names[v_i], v_field, v_number, c_low[v_i], c_high[v_i]
                        );
                        EXIT;
                    END IF;
                END LOOP;
                EXIT WHEN v_problem IS NOT NULL;
                IF v_field ~ '[0-9]{10}' OR v_field ~ '/(0+)?([^0-9]|$)' THEN
                    v_problem := format('%s field %L: a step must be a positive number', c_names[v_i], v_field);
                    EXIT;
                END IF;
            END LOOP;
        END IF;
    END IF;
    IF v_problem IS NOT NULL THEN
        RAISE EXCEPTION 'schedule.invalid_cron' USING
            ERRCODE = 'RQ003',
            DETAIL = format('cron %s: %s', left(coalesce(quote_literal(p_cron), 'NULL'), 220), v_problem),
            HINT = 'Use 5 fields (minute hour day-of-month month day-of-week), or 6 with seconds last, '
                'e.g. ''*/5 * * * *'', or a macro such as @hourly.';
    END IF;
    RETURN v_cron;
END;
$$;

REVOKE EXECUTE ON FUNCTION pgrun._schedule_check_cron(text) FROM public;

COMMENT ON FUNCTION pgrun._schedule_check_cron(text) IS
'Private: the cron expression with whitespace collapsed, or raises schedule.invalid_cron (RQ003).';

-- Raises schedule.invalid_timezone unless PostgreSQL knows the zone by that exact name.
CREATE OR REPLACE FUNCTION pgrun._schedule_check_timezone(p_timezone text)
RETURNS void
LANGUAGE plpgsql
STABLE
AS $$
BEGIN
    IF p_timezone IS NULL OR NOT EXISTS (
        SELECT FROM pg_catalog.pg_timezone_names AS z WHERE z.name = p_timezone
    ) THEN
        RAISE EXCEPTION 'schedule.invalid_timezone' USING
            ERRCODE = 'RQ003',
            DETAIL = format('time zone %s is not a zone name PostgreSQL knows',
                coalesce(quote_literal(left(p_timezone, 100)), 'NULL')),
            HINT = 'Use an IANA zone name such as UTC or Europe/Berlin (see pg_timezone_names); '
                'fixed offsets and abbreviations are not accepted.';
    END IF;
END;
$$;

REVOKE EXECUTE ON FUNCTION pgrun._schedule_check_timezone(text) FROM public;

COMMENT ON FUNCTION pgrun._schedule_check_timezone(text) IS
'Private: raises schedule.invalid_timezone (RQ003) unless the zone is in pg_timezone_names.';

-- The scope list in canonical form (sorted; organization ids as lowercase uuid text), or
-- raises schedule.invalid_scopes. p_organization_id is the schedule's own organization.
CREATE OR REPLACE FUNCTION pgrun._schedule_check_scopes(
    p_scope_kind text, p_scopes text[], p_organization_id uuid
)
RETURNS text[]
LANGUAGE plpgsql
IMMUTABLE
AS $$
DECLARE
    v_n integer := coalesce(cardinality(p_scopes), 0);
    v_problem text;
BEGIN
    v_problem := CASE
        WHEN p_scope_kind IS NULL OR p_scope_kind NOT IN ('none', 'organization', 'key')
            THEN format('scope_kind %s is not none, organization or key',
                coalesce(quote_literal(left(p_scope_kind, 100)), 'NULL'))
        WHEN p_scope_kind = 'none' AND v_n > 0
            THEN 'scopes given for scope_kind none'
        WHEN p_scope_kind = 'none'
            THEN NULL
        WHEN v_n = 0
            THEN format('scope_kind %s needs a non-empty scopes array', p_scope_kind)
        WHEN array_ndims(p_scopes) <> 1
            THEN 'scopes must be a one-dimensional array'
        WHEN v_n > 10000
            THEN format('%s scopes (at most 10000)', v_n)
        WHEN array_position(p_scopes, NULL) IS NOT NULL
            THEN 'scopes must not contain NULL'
        WHEN EXISTS (
            SELECT FROM unnest(p_scopes) AS u (s)
            WHERE u.s = '' OR u.s <> btrim(u.s) OR length(u.s) > 200
        )
            THEN 'a scope is blank, has surrounding blanks, or is over 200 characters'
        WHEN p_scope_kind = 'organization' AND p_organization_id IS NOT NULL
            THEN 'a schedule that belongs to an organization cannot be scoped by organization'
        WHEN p_scope_kind = 'organization' AND EXISTS (
            SELECT FROM unnest(p_scopes) AS u (s)
            WHERE u.s !~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
                OR u.s = '00000000-0000-0000-0000-000000000000'
        )
            THEN 'scope_kind organization needs organization uuids (not the nil uuid)'
        WHEN (SELECT count(DISTINCT lower(u.s)) FROM unnest(p_scopes) AS u (s)) <> v_n
            THEN 'a scope appears more than once'
    END;
    IF v_problem IS NOT NULL THEN
        RAISE EXCEPTION 'schedule.invalid_scopes' USING
            ERRCODE = 'RQ003',
            DETAIL = v_problem,
            HINT = 'scope_kind none takes no scopes; organization takes organization uuids; key takes '
                'distinct non-empty keys (at most 10000, each up to 200 characters).';
    END IF;
    IF p_scope_kind = 'none' THEN
        RETURN '{}'::text[];
    END IF;
    RETURN ARRAY(
        SELECT CASE WHEN p_scope_kind = 'organization' THEN lower(u.s) ELSE u.s END
        FROM unnest(p_scopes) AS u (s)
        ORDER BY 1
    );
END;
$$;

REVOKE EXECUTE ON FUNCTION pgrun._schedule_check_scopes(text, text[], uuid) FROM public;

COMMENT ON FUNCTION pgrun._schedule_check_scopes(text, text[], uuid) IS
'Private: the canonical scope list of a schedule, or raises schedule.invalid_scopes (RQ003).';

-- The schedule (name, organization), locked FOR UPDATE: its id and organization, or raises
-- schedule.not_found (RQ002) / schedule.invalid_name (RQ003, NULL name). The organization
-- is the one the caller acts for (pgrun._caller_organization: a role bound to one
-- organization names its own when it passes none); a schedule of an organization the caller
-- may not act for is not found, exactly as a missing one.
CREATE OR REPLACE FUNCTION pgrun._schedule_lock(
    p_name text,
    p_organization_id uuid,
    OUT schedule_id uuid,
    OUT organization_id uuid
)
LANGUAGE plpgsql
VOLATILE
AS $$
DECLARE
    v_allowed boolean;
BEGIN
    IF p_name IS NULL THEN
        RAISE EXCEPTION 'schedule.invalid_name' USING
            ERRCODE = 'RQ003',
            DETAIL = 'name is NULL',
            HINT = 'Pass the schedule''s name (and its organization_id, if it has one).';
    END IF;
    SELECT o.organization_id, o.allowed INTO organization_id, v_allowed
    FROM pgrun._caller_organization(p_organization_id) AS o;
    IF v_allowed THEN
        SELECT s.id INTO schedule_id
        FROM pgrun.job_schedules AS s
        WHERE coalesce(s.organization_id, '00000000-0000-0000-0000-000000000000'::uuid)
            = coalesce(_schedule_lock.organization_id, '00000000-0000-0000-0000-000000000000'::uuid)
            AND s.name = p_name
        FOR UPDATE;
    END IF;
    IF schedule_id IS NULL THEN
        RAISE EXCEPTION 'schedule.not_found' USING
            ERRCODE = 'RQ002',
            DETAIL = format('no schedule %L%s', left(p_name, 200),
                CASE WHEN _schedule_lock.organization_id IS NULL THEN ' without an organization'
                    ELSE format(' in organization %s', _schedule_lock.organization_id) END),
            HINT = 'Check the name and the organization_id (a schedule of an organization is only '
                'found with that organization_id).';
    END IF;
END;
$$;

REVOKE EXECUTE ON FUNCTION pgrun._schedule_lock(text, uuid) FROM public;

COMMENT ON FUNCTION pgrun._schedule_lock(text, uuid) IS
'Private: locks the schedule (name, organization the caller acts for) FOR UPDATE and returns its id and '
'organization, or raises schedule.not_found (RQ002).';
