-- Private helpers of the schedule functions: the cron grammar, the time zone check, the
-- scheduler id check, the lookup of a schedule by (name, organization), the claim check and
-- the scope list check.
--
-- The cron grammar is pgrun's one grammar: this check and the Python side
-- (python/pgrun/cron.py, then croniter) accept exactly the same expressions, pinned row by
-- row by tests_data/cron_grammar.csv (tests_py/test_cron_grammar.py runs it through both).
-- It is a subset of what croniter parses, written out in docs/schedules.md:
--   * at most 200 characters, checked before anything else (no regex ever runs on more);
--     only ASCII letters and digits, * , - / # ? @, blanks and tabs (blanks and tabs
--     separate fields; the stored form has single blanks);
--   * a macro alone (@yearly @annually @monthly @weekly @daily @midnight @hourly, any case),
--     or 5 fields (minute hour day-of-month month day-of-week) or 6 (seconds last);
--   * a field is a comma list of items *, */S, A, A-B, A-B/S, A/S; numbers have one or two
--     digits and lie in the field's range (weekday 0-7, 0 and 7 Sunday); months and weekdays
--     may be named (jan..dec, sun..sat, any case); a range rises (sun ending a range is 7);
--     a step S is 1 up to the field's largest value; a weekday start with a step is 0-6;
--   * ? alone in day of month or weekday means any; L alone in day of month is its last day;
--   * A#N (N 1-5) in the weekday field is the N-th such weekday; then every weekday item is
--     one and day of month is * or ?;
--   * it must be able to fire: when the weekday field is ? or has a bare * (day of month
--     alone decides), some listed day must exist in some listed month (29 February counts);
--     fifth weekdays of February alone (decades apart) are refused.
--
-- Locks: _schedule_lock takes the schedule's row FOR UPDATE; the others none.
-- Errors (RQ003): schedule.invalid_cron, schedule.invalid_timezone, schedule.invalid_scopes,
-- schedule.invalid_name, schedule.invalid_organization, schedule.invalid_scheduler_id;
-- schedule.not_found (RQ002); schedule.claim_lost (RQ004).

-- One field of a cron expression (p_index 1..6: minute hour day month weekday second): the
-- values it allows (weekday 7 folded to 0), whether it means "any" (? or a bare * item),
-- whether it is L (day of month), the N of its A#N items; or the problem, when it breaks
-- the grammar. The field is at most 200 characters (the whole expression is).
CREATE OR REPLACE FUNCTION pgrun._schedule_cron_field(
    p_index integer,
    p_text text,
    OUT field_values integer[],
    OUT is_any boolean,
    OUT is_last boolean,
    OUT nths integer[],
    OUT problem text
)
LANGUAGE plpgsql
IMMUTABLE
AS $$
DECLARE
    c_names CONSTANT text[] := ARRAY['minute', 'hour', 'day of month', 'month', 'day of week', 'second'];
    c_low CONSTANT integer[] := ARRAY[0, 0, 1, 1, 0, 0];
    c_high CONSTANT integer[] := ARRAY[59, 23, 31, 12, 7, 59];
    c_months CONSTANT text[] := ARRAY[
        'jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'
    ];
    c_weekdays CONSTANT text[] := ARRAY['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'];
    v_name text := c_names[p_index];
    v_low integer := c_low[p_index];
    v_high integer := c_high[p_index];
    -- weekday 7 is Sunday again: * and a start with a step stop at 6
    v_top integer := CASE WHEN p_index = 5 THEN 6 ELSE c_high[p_index] END;
    v_items text[];
    v_item text;
    v_m text[];
    v_tokens text[];
    v_vals integer[];
    v_token text;
    v_step integer;
    v_a integer;
    v_b integer;
    v_plain integer := 0;
BEGIN
    field_values := '{}';
    is_any := false;
    is_last := false;
    IF strpos(p_text, '?') > 0 THEN
        IF p_text <> '?' OR p_index NOT IN (3, 5) THEN
            problem := format('%s field %L: ? stands alone, in day of month or day of week', v_name, p_text);
            RETURN;
        END IF;
        field_values := ARRAY(SELECT generate_series(v_low, v_top));
        is_any := true;
        RETURN;
    END IF;
    IF p_index = 3 AND lower(p_text) = 'l' THEN
        is_last := true;
        RETURN;
    END IF;
    v_items := string_to_array(p_text, ',');
    FOREACH v_item IN ARRAY v_items LOOP
        IF v_item = '' THEN
            problem := format('%s field %L: an empty list item', v_name, p_text);
            RETURN;
        END IF;
        -- A#N: the N-th such weekday of the month
        v_m := CASE WHEN p_index = 5 THEN regexp_match(v_item, '^([0-9]{1,2}|[A-Za-z]{3})#([0-9])$') END;
        IF v_m IS NOT NULL THEN
            IF v_m[2]::integer NOT BETWEEN 1 AND 5 THEN
                problem := format('%s field %L: the N of A#N is 1..5', v_name, v_item);
                RETURN;
            END IF;
            v_tokens := ARRAY[v_m[1]];
            nths := coalesce(nths, '{}') || v_m[2]::integer;
        ELSE
            v_m := regexp_match(
                v_item, '^(?:(\*)|([0-9]{1,2}|[A-Za-z]{3})(?:-([0-9]{1,2}|[A-Za-z]{3}))?)(?:/([0-9]{1,2}))?$'
            );
            IF v_m IS NULL THEN
                problem := format('%s field %L: not *, */S, A, A-B, A-B/S or A/S', v_name, v_item);
                RETURN;
            END IF;
            v_plain := v_plain + 1;
            v_step := 1;
            IF v_m[4] IS NOT NULL THEN
                v_step := v_m[4]::integer;
                IF v_step NOT BETWEEN 1 AND v_high THEN
                    problem := format('%s field %L: a step is 1..%s', v_name, v_item, v_high);
                    RETURN;
                END IF;
            END IF;
            IF v_m[1] IS NOT NULL THEN
                -- a bare * (not */S) makes the field "any" (croniter reads it so: day of month and
                -- weekday then do not combine with "or")
                is_any := is_any OR v_m[4] IS NULL;
                field_values := field_values || ARRAY(SELECT generate_series(v_low, v_top, v_step));
                CONTINUE;
            END IF;
            v_tokens := ARRAY[v_m[2], v_m[3]];
        END IF;
        -- the numbers (names resolved; sun ending a range is 7), each in the field's range
        v_vals := '{}';
        FOR v_i IN 1 .. 2 LOOP
            v_token := v_tokens[v_i];
            EXIT WHEN v_token IS NULL;
            IF v_token ~ '^[0-9]+$' THEN
                v_vals := v_vals || v_token::integer;
            ELSIF p_index = 4 AND lower(v_token) = ANY (c_months) THEN
                v_vals := v_vals || array_position(c_months, lower(v_token));
            ELSIF p_index = 5 AND lower(v_token) = ANY (c_weekdays) THEN
                v_vals := v_vals || CASE
                    WHEN v_i = 2 AND lower(v_token) = 'sun' THEN 7
                    ELSE array_position(c_weekdays, lower(v_token)) - 1
                END;
            ELSE
                problem := format('%s field: unknown name %L', v_name, v_token);
                RETURN;
            END IF;
            IF v_vals[v_i] NOT BETWEEN v_low AND v_high THEN
                problem := format('%s field: %s is outside %s..%s', v_name, v_vals[v_i], v_low, v_high);
                RETURN;
            END IF;
        END LOOP;
        v_a := v_vals[1];
        v_b := v_vals[2];
        IF v_b IS NOT NULL THEN
            IF v_a >= v_b THEN
                problem := format('%s field %L: a range must rise', v_name, v_item);
                RETURN;
            END IF;
            field_values := field_values || ARRAY(
                SELECT CASE WHEN p_index = 5 THEN g % 7 ELSE g END FROM generate_series(v_a, v_b, v_step) AS g
            );
        ELSIF v_m[4] IS NOT NULL THEN
            IF v_a > v_top THEN
                problem := format('%s field %L: a start with a step is %s..%s', v_name, v_item, v_low, v_top);
                RETURN;
            END IF;
            field_values := field_values || ARRAY(SELECT generate_series(v_a, v_top, v_step));
        ELSE
            field_values := field_values || CASE WHEN p_index = 5 THEN v_a % 7 ELSE v_a END;
        END IF;
    END LOOP;
    IF nths IS NOT NULL AND v_plain > 0 THEN
        problem := format('%s field %L: A#N items cannot be mixed with plain weekdays', v_name, p_text);
    END IF;
END;
$$;

REVOKE EXECUTE ON FUNCTION pgrun._schedule_cron_field(integer, text) FROM public;

COMMENT ON FUNCTION pgrun._schedule_cron_field(integer, text) IS
'Private: one field of a cron expression under pgrun''s grammar: its values, whether it means any, L, its nth '
'weekdays, or the problem.';

-- The expression with blanks collapsed (a macro in lower case), or raises schedule.invalid_cron.
CREATE OR REPLACE FUNCTION pgrun._schedule_check_cron(p_cron text)
RETURNS text
LANGUAGE plpgsql
IMMUTABLE
AS $$
DECLARE
    c_macros CONSTANT text[] := ARRAY[
        '@yearly', '@annually', '@monthly', '@weekly', '@daily', '@midnight', '@hourly'
    ];
    -- the days a month can have (February: 29, in leap years)
    c_days CONSTANT integer[] := ARRAY[31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
    v_cron text;
    v_fields text[];
    v_problem text;
    v_dom record;
    v_month record;
    v_dow record;
    v_field record;
BEGIN
    -- length first: nothing below ever looks at more than 200 characters
    IF p_cron IS NULL THEN
        v_problem := 'the expression is empty';
    ELSIF length(p_cron) > 200 THEN
        v_problem := format('the expression is %s characters long (at most 200)', length(p_cron));
    ELSIF p_cron !~ ('^[0-9A-Za-z*,/#?@ ' || chr(9) || '-]*$') THEN
        v_problem := 'the expression holds a character a cron expression cannot (letters, digits, blanks, '
            'tabs and * , - / # ? @ only)';
    ELSE
        v_cron := btrim(translate(p_cron, chr(9), ' '));
        IF v_cron = '' THEN
            v_problem := 'the expression is empty';
        ELSE
            v_cron := regexp_replace(v_cron, ' +', ' ', 'g');
            v_fields := string_to_array(v_cron, ' ');
            IF strpos(v_cron, '@') > 0 THEN
                IF lower(v_cron) = ANY (c_macros) THEN
                    v_cron := lower(v_cron);
                ELSE
                    v_problem := format('not a known macro (%s)', array_to_string(c_macros, ', '));
                END IF;
            ELSIF cardinality(v_fields) NOT IN (5, 6) THEN
                v_problem := format(
                    '%s fields; a cron expression has 5 (minute hour day month weekday) or 6 '
                    '(the same, then seconds)',
                    cardinality(v_fields)
                );
            ELSE
                FOR v_i IN 1 .. cardinality(v_fields) LOOP
                    SELECT f.* INTO v_field FROM pgrun._schedule_cron_field(v_i, v_fields[v_i]) AS f;
                    v_problem := v_field.problem;
                    EXIT WHEN v_problem IS NOT NULL;
                    CASE v_i
                        WHEN 3 THEN v_dom := v_field;
                        WHEN 4 THEN v_month := v_field;
                        WHEN 5 THEN v_dow := v_field;
                        ELSE NULL;
                    END CASE;
                END LOOP;
                -- across fields (only once every field parsed)
                IF v_problem IS NOT NULL THEN
                    NULL;
                ELSIF v_dow.nths IS NOT NULL AND NOT v_dom.is_any THEN
                    v_problem := 'an nth weekday (A#N) needs day of month * or ?';
                ELSIF v_dow.nths IS NOT NULL AND v_month.field_values <@ ARRAY[2] AND v_dow.nths <@ ARRAY[5] THEN
                    v_problem := 'a fifth weekday of February only comes decades apart';
                ELSIF v_dow.is_any AND NOT v_dom.is_any AND NOT v_dom.is_last
                    AND NOT EXISTS (
                        SELECT
                        FROM unnest(v_month.field_values) AS m (month)
                        CROSS JOIN unnest(v_dom.field_values) AS d (day)
                        WHERE d.day <= c_days[m.month]
                    ) THEN
                    v_problem := format('day of month %L never comes in month %L', v_fields[3], v_fields[4]);
                END IF;
            END IF;
        END IF;
    END IF;
    IF v_problem IS NOT NULL THEN
        PERFORM pgrun._raise(
            'schedule.invalid_cron',
            format('cron %s: %s', pgrun._shown(p_cron), v_problem),
            'Use 5 fields (minute hour day-of-month month day-of-week), or 6 with seconds last, '
                'e.g. ''*/5 * * * *'', or a macro such as @hourly (docs/schedules.md has the grammar).'
        );
    END IF;
    RETURN v_cron;
END;
$$;

REVOKE EXECUTE ON FUNCTION pgrun._schedule_check_cron(text) FROM public;

COMMENT ON FUNCTION pgrun._schedule_check_cron(text) IS
'Private: the cron expression with whitespace collapsed, or raises schedule.invalid_cron (RQ003) unless it is '
'in pgrun''s cron grammar (the one the Python scheduler accepts).';

-- Raises schedule.invalid_timezone unless pg_timezone_names lists the zone by that exact name
-- (at most 200 characters, checked first). The names it listed at install are kept in
-- pgrun.timezone_names (sql/0025), looked up by key; pg_timezone_names itself, which loads
-- every zone file of the server's time zone database (~30-40 ms), is read only for a name not
-- found there: a zone the database gained since, or a name it does not know.
CREATE OR REPLACE FUNCTION pgrun._schedule_check_timezone(p_timezone text)
RETURNS void
LANGUAGE plpgsql
STABLE
AS $$
BEGIN
    IF p_timezone IS NULL OR length(p_timezone) > 200 OR NOT (
        EXISTS (SELECT FROM pgrun.timezone_names AS t WHERE t.name = p_timezone)
        OR EXISTS (SELECT FROM pg_catalog.pg_timezone_names AS z WHERE z.name = p_timezone)
    ) THEN
        PERFORM pgrun._raise(
            'schedule.invalid_timezone',
            format('time zone %s is not a zone name PostgreSQL knows',
                pgrun._shown(p_timezone)),
            'Use an IANA zone name such as UTC or Europe/Berlin (see pg_timezone_names); '
                'fixed offsets and abbreviations are not accepted.'
        );
    END IF;
END;
$$;

REVOKE EXECUTE ON FUNCTION pgrun._schedule_check_timezone(text) FROM public;

COMMENT ON FUNCTION pgrun._schedule_check_timezone(text) IS
'Private: raises schedule.invalid_timezone (RQ003) unless pg_timezone_names lists the zone: looked up first in '
'pgrun.timezone_names (the names it listed at install), then in pg_timezone_names itself.';

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
                pgrun._shown(p_scope_kind))
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
        WHEN EXISTS (SELECT FROM unnest(p_scopes) AS u (s) WHERE length(u.s) > 200)
            THEN 'a scope is over 200 characters'
        WHEN EXISTS (SELECT FROM unnest(p_scopes) AS u (s) WHERE u.s = '' OR u.s <> btrim(u.s))
            THEN 'a scope is blank or has surrounding blanks'
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
        PERFORM pgrun._raise(
            'schedule.invalid_scopes',
            v_problem,
            'scope_kind none takes no scopes; organization takes organization uuids; key takes '
                'distinct non-empty keys (at most 10000, each up to 200 characters).'
        );
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

-- Raises schedule.invalid_organization for the nil uuid: it is no organization's id (NULL
-- names the schedules without one), as enqueue_job refuses it (job.invalid_organization).
CREATE OR REPLACE FUNCTION pgrun._schedule_check_organization(p_organization_id uuid)
RETURNS void
LANGUAGE plpgsql
IMMUTABLE
AS $$
BEGIN
    IF p_organization_id = '00000000-0000-0000-0000-000000000000'::uuid THEN
        PERFORM pgrun._raise(
            'schedule.invalid_organization',
            'organization_id is the nil uuid',
            'Pass the organization''s uuid, or NULL for the schedules without an organization.'
        );
    END IF;
END;
$$;

REVOKE EXECUTE ON FUNCTION pgrun._schedule_check_organization(uuid) FROM public;

COMMENT ON FUNCTION pgrun._schedule_check_organization(uuid) IS
'Private: raises schedule.invalid_organization (RQ003) for the nil uuid.';

-- Raises schedule.invalid_scheduler_id unless the scheduler's name is 1..200 characters and
-- not blank (length first). claim_due_schedules and fire_schedule both check with it.
CREATE OR REPLACE FUNCTION pgrun._schedule_check_scheduler_id(p_scheduler_id text)
RETURNS void
LANGUAGE plpgsql
IMMUTABLE
AS $$
BEGIN
    IF p_scheduler_id IS NULL OR length(p_scheduler_id) > 200 OR btrim(p_scheduler_id) = '' THEN
        PERFORM pgrun._raise(
            'schedule.invalid_scheduler_id',
            format('scheduler_id %s is NULL, blank or longer than 200 characters',
                pgrun._shown(p_scheduler_id)),
            'Pass a stable, non-empty name for the scheduler process (e.g. host:pid).'
        );
    END IF;
END;
$$;

REVOKE EXECUTE ON FUNCTION pgrun._schedule_check_scheduler_id(text) FROM public;

COMMENT ON FUNCTION pgrun._schedule_check_scheduler_id(text) IS
'Private: raises schedule.invalid_scheduler_id (RQ003) unless the scheduler id is 1..200 characters, not blank.';

-- The schedule p_schedule_id, locked FOR UPDATE, if p_claim_token is its live claim; else
-- schedule.not_found (RQ002) or schedule.claim_lost (RQ004: the claim expired, another
-- scheduler took it, or an operator paused or restated the schedule since).
CREATE OR REPLACE FUNCTION pgrun._schedule_lock_claimed(
    p_schedule_id uuid, p_claim_token uuid, p_now timestamptz
)
RETURNS pgrun.job_schedules
LANGUAGE plpgsql
VOLATILE
AS $$
DECLARE
    v_s pgrun.job_schedules;
BEGIN
    SELECT s.* INTO v_s FROM pgrun.job_schedules AS s WHERE s.id = p_schedule_id FOR UPDATE;
    IF v_s.id IS NULL THEN
        PERFORM pgrun._raise(
            'schedule.not_found',
            format('no schedule with id %s', p_schedule_id),
            'The schedule was deleted; drop the plan.'
        );
    END IF;
    IF v_s.claim_token IS DISTINCT FROM p_claim_token OR v_s.claim_expires_at <= p_now THEN
        PERFORM pgrun._raise(
            'schedule.claim_lost',
            format(
                'schedule %s (%s): %s', v_s.id, v_s.name,
                CASE
                    WHEN v_s.claim_token IS NULL
                        THEN 'no scheduler holds a claim on it now (released, paused or restated since)'
                    WHEN v_s.claim_token = p_claim_token
                        THEN format('the claim expired at %s (now %s)', v_s.claim_expires_at, p_now)
                    ELSE format('scheduler %s claimed it since, until %s', v_s.claimed_by, v_s.claim_expires_at)
                END
            ),
            'Drop this plan: another scheduler (or the next pass) plans the schedule from its '
                'current state.'
        );
    END IF;
    RETURN v_s;
END;
$$;

REVOKE EXECUTE ON FUNCTION pgrun._schedule_lock_claimed(uuid, uuid, timestamptz) FROM public;

COMMENT ON FUNCTION pgrun._schedule_lock_claimed(uuid, uuid, timestamptz) IS
'Private: the schedule locked FOR UPDATE if the token is its live claim, else schedule.not_found (RQ002) or '
'schedule.claim_lost (RQ004).';

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
        PERFORM pgrun._raise(
            'schedule.invalid_name',
            'name is NULL',
            'Pass the schedule''s name (and its organization_id, if it has one).'
        );
    END IF;
    PERFORM pgrun._schedule_check_organization(p_organization_id);
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
        PERFORM pgrun._raise(
            'schedule.not_found',
            format('no schedule %s%s', pgrun._shown(p_name),
                CASE WHEN _schedule_lock.organization_id IS NULL THEN ' without an organization'
                    ELSE format(' in organization %s', _schedule_lock.organization_id) END),
            'Check the name and the organization_id (a schedule of an organization is only '
                'found with that organization_id).'
        );
    END IF;
END;
$$;

REVOKE EXECUTE ON FUNCTION pgrun._schedule_lock(text, uuid) FROM public;

COMMENT ON FUNCTION pgrun._schedule_lock(text, uuid) IS
'Private: locks the schedule (name, organization the caller acts for) FOR UPDATE and returns its id and '
'organization, or raises schedule.not_found (RQ002).';
