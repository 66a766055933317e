-- The limits every API function applies the same way (docs/errors.md, "Limits").
--
-- * _time_ok(value), _check_time(code, name, value): THE rule for a time argument. A timestamp must be
--   finite, no earlier than 0001-01-02 UTC and no later than pgrun.now() + 100 years (so
--   every client can represent it: Python's datetime ends at year 9999 and starts at year 1,
--   a day of margin covers any time zone); an interval must lie in 0 s..100 years (100
--   Julian years, 3155760000 s, the bound enqueue applies to delay). Anything else raises
--   the caller's documented code (RQ003), never a raw datetime overflow (22008).
--   _time_ok says whether a value keeps the rule (set-based checks such as enqueue's use
--   it); _check_time raises. Two overloads each, one per type; the bounds live only in
--   _time_ok.
-- * _shown(value): a text value as a DETAIL echoes it: quoted, at most 200 characters
--   (longer ones are cut and say how long they were), 'NULL' for NULL. No DETAIL repeats a
--   huge argument into the client or the server log.
-- * _clip(value, max_chars): free text a worker or a caller reports (error messages, log
--   lines, reasons) is kept, never rejected: cut to max_chars, ending in ' [truncated]'.
-- * _valid_job_type(value): the job type rule, defined once in sql/0015_one_job_type_check.sql
--   (the CHECK constraints of job_definitions and job_schedules call it, so it is versioned
--   with the tables, not re-created here); jobs/_errors.sql raises job.invalid_type with
--   the one HINT that spells the rule out (_job_raise_invalid_type).
-- * _valid_queue(value): the queue name rule (job_definitions' CHECK constraint says the
--   same). Both test the length before the pattern, so a huge string is refused without
--   running a regex over it.
-- * _json_depth_ok(value): THE nesting rule for a JSON value pgrun stores from a client (a
--   payload, a result, a continue state, progress, log fields, run metadata, a step payload,
--   an external output): at most 100 arrays/objects nested in one another. A value nested
--   deeper is refused with the caller's documented code (RQ003), because no client could
--   read it back: Python's json stops near depth 1000 (RecursionError), so a job with such
--   a payload could never run. 100 leaves room for the levels pgrun adds around a value
--   (get_job's document, a release's "dependencies").
--   The test is the jsonpath strict $.**{100} filtered to arrays and objects: $ is level 0,
--   so a container at level 100 is the 101st nested one (strict: no lax unwrapping, so
--   levels count containers exactly; the walk stops at level 100, however deep the value).
--   Guard: a value whose datum is smaller than 808 bytes and not compressed cannot nest 101
--   containers, so it skips the walk (a few nanoseconds instead of microseconds, the hot
--   path's ordinary payloads and results). 808 is the smallest: each enclosing array costs a
--   4-byte header and a 4-byte entry, the innermost empty one its header, plus the 4-byte
--   varlena header: 100 * 8 + 4 + 4 (objects cost more, a key entry each;
--   tests_sql/util/test_json_depth.sql pins it). A compressed datum (an argument read from a
--   table by the caller) can be far smaller than its content (a 101-deep document of 2.6 kB
--   compresses to under 500 bytes), so it always takes the walk. NULL passes.
--
-- The SQL helpers have no SET clause, so they are inlined into the query that calls them;
-- every name in them is schema-qualified instead (as in pgrun._clip).
--
-- Locks: none. Errors: _check_time raises the code it is given (RQ003).

CREATE OR REPLACE FUNCTION pgrun._time_ok(p_value timestamptz)
RETURNS boolean
LANGUAGE sql
STABLE
PARALLEL SAFE
AS $$
    SELECT pg_catalog.isfinite(p_value)
        AND p_value OPERATOR(pg_catalog.>=) '0001-01-02 00:00:00+00'::pg_catalog.timestamptz
        AND p_value OPERATOR(pg_catalog.<=) (pgrun.now() OPERATOR(pg_catalog.+) '100 years'::pg_catalog.interval)
$$;

REVOKE EXECUTE ON FUNCTION pgrun._time_ok(timestamptz) FROM public;

COMMENT ON FUNCTION pgrun._time_ok(timestamptz) IS
'Private: whether a timestamp argument keeps the time-argument rule (finite, 0001-01-02..now + 100 years).';

CREATE OR REPLACE FUNCTION pgrun._time_ok(p_value interval)
RETURNS boolean
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
AS $$
    -- extract(EPOCH ...) is numeric: it never overflows, whatever the interval holds
    SELECT pg_catalog.extract('epoch', p_value) BETWEEN 0 AND 3155760000
$$;

REVOKE EXECUTE ON FUNCTION pgrun._time_ok(interval) FROM public;

COMMENT ON FUNCTION pgrun._time_ok(interval) IS
'Private: whether an interval argument keeps the time-argument rule (0 s..100 years).';

CREATE OR REPLACE FUNCTION pgrun._check_time(p_code text, p_name text, p_value timestamptz)
RETURNS void
LANGUAGE plpgsql
STABLE
AS $$
BEGIN
    IF NOT pgrun._time_ok(p_value) THEN
        PERFORM pgrun._raise(
            p_code,
            format('%s %s is not a finite time between 0001-01-02 and 100 years from now', p_name, p_value),
            'Pass a finite timestamp no later than 100 years from now (NULL for the default).'
        );
    END IF;
END;
$$;

REVOKE EXECUTE ON FUNCTION pgrun._check_time(text, text, timestamptz) FROM public;

COMMENT ON FUNCTION pgrun._check_time(text, text, timestamptz) IS
'Private: the time-argument rule for a timestamp (finite, 0001-01-02..now + 100 years); raises p_code (RQ003) '
'naming p_name otherwise. NULL passes.';

CREATE OR REPLACE FUNCTION pgrun._check_time(p_code text, p_name text, p_value interval)
RETURNS void
LANGUAGE plpgsql
IMMUTABLE
AS $$
BEGIN
    IF NOT pgrun._time_ok(p_value) THEN
        PERFORM pgrun._raise(
            p_code,
            format('%s %s is outside 0 seconds..100 years', p_name, p_value),
            format('Pass a %s from 0 seconds to 100 years (NULL for the default).', p_name)
        );
    END IF;
END;
$$;

REVOKE EXECUTE ON FUNCTION pgrun._check_time(text, text, interval) FROM public;

COMMENT ON FUNCTION pgrun._check_time(text, text, interval) IS
'Private: the time-argument rule for an interval (0 s..100 years); raises p_code (RQ003) naming p_name '
'otherwise. NULL passes.';

CREATE OR REPLACE FUNCTION pgrun._shown(p_value text)
RETURNS text
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
AS $$
    SELECT CASE
        WHEN p_value IS NULL THEN 'NULL'
        WHEN pg_catalog.length(p_value) OPERATOR(pg_catalog.<=) 200 THEN pg_catalog.quote_literal(p_value)
        ELSE pg_catalog.quote_literal(pg_catalog.left(p_value, 200))
            OPERATOR(pg_catalog.||) pg_catalog.format('... (%s characters)', pg_catalog.length(p_value))
    END
$$;

REVOKE EXECUTE ON FUNCTION pgrun._shown(text) FROM public;

COMMENT ON FUNCTION pgrun._shown(text) IS
'Private: a value as error DETAILs echo it: quoted, cut at 200 characters (saying how long it was), or NULL.';

-- Free text a worker reports is kept, never rejected: beyond p_max_chars characters it is
-- cut and ends in ' [truncated]' (the result is exactly p_max_chars long).
-- No SET search_path here, on purpose: it is called for every row of a batch, and a SQL
-- function with a SET clause is never inlined (each call then costs ~5 us). Every function
-- and operator is schema-qualified instead, so no search_path can redirect it.
CREATE OR REPLACE FUNCTION pgrun._clip(p_value text, p_max_chars integer)
RETURNS text
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
AS $$
    SELECT CASE
        WHEN pg_catalog.length(p_value) OPERATOR(pg_catalog.<=) p_max_chars THEN p_value
        ELSE pg_catalog.left(p_value, p_max_chars OPERATOR(pg_catalog.-) 12)
            OPERATOR(pg_catalog.||) ' [truncated]'
    END
$$;

REVOKE EXECUTE ON FUNCTION pgrun._clip(text, integer) FROM public;

COMMENT ON FUNCTION pgrun._clip(text, integer) IS
'Private: free text cut to p_max_chars characters, ending in " [truncated]" when it was longer.';

CREATE OR REPLACE FUNCTION pgrun._valid_queue(p_value text)
RETURNS boolean
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
AS $$
    SELECT CASE
        WHEN pg_catalog.length(p_value) OPERATOR(pg_catalog.>) 64 THEN FALSE
        ELSE p_value OPERATOR(pg_catalog.~) '^[a-z][a-z0-9_.:-]*$'
    END
$$;

REVOKE EXECUTE ON FUNCTION pgrun._valid_queue(text) FROM public;

COMMENT ON FUNCTION pgrun._valid_queue(text) IS
'Private: whether a queue name is valid (at most 64 characters, tested first, then the pattern); NULL for NULL.';

CREATE OR REPLACE FUNCTION pgrun._json_depth_ok(p_value jsonb)
RETURNS boolean
LANGUAGE sql
STABLE
PARALLEL SAFE
AS $$
    SELECT CASE
        WHEN coalesce(pg_catalog.pg_column_size(p_value), 0) OPERATOR(pg_catalog.<) 808
            AND pg_catalog.pg_column_compression(p_value) IS NULL
            THEN TRUE
        ELSE NOT pg_catalog.jsonb_path_exists(
            p_value, 'strict $.**{100} ? (@.type() == "array" || @.type() == "object")'::pg_catalog.jsonpath
        )
    END
$$;

REVOKE EXECUTE ON FUNCTION pgrun._json_depth_ok(jsonb) FROM public;

COMMENT ON FUNCTION pgrun._json_depth_ok(jsonb) IS
'Private: whether a JSON value nests at most 100 arrays/objects (the nesting rule for stored client JSON); '
'a small uncompressed value (under 808 bytes) passes without the walk. NULL passes.';
