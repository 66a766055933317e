-- Errors from one place (plpgsql/util/_errors.sql): every code has one SQLSTATE, in the
-- registry; pgrun._raise raises a code with it and with the DETAIL / HINT given, and a code
-- the registry does not list is never raised as given: it becomes pgrun.unknown_error_code
-- (RQ005), whose DETAIL names it. (tests_py/test_error_registry.py compares the registry with
-- docs/errors.md, and finds no SQLSTATE typed at a RAISE outside _raise.)
BEGIN;
SELECT plan(14);

CREATE FUNCTION pg_temp.raised(p_sql text)
RETURNS text[]
LANGUAGE plpgsql
AS $$
DECLARE
    v_state text;
    v_message text;
    v_detail text;
    v_hint text;
BEGIN
    EXECUTE p_sql;
    RETURN NULL;
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS v_state = RETURNED_SQLSTATE, v_message = MESSAGE_TEXT,
        v_detail = PG_EXCEPTION_DETAIL, v_hint = PG_EXCEPTION_HINT;
    RETURN ARRAY[v_state, v_message, v_detail, v_hint];
END;
$$;

-- the registry
SELECT is(
    (SELECT count(*) FROM pgrun._error_codes()),
    (SELECT count(DISTINCT code) FROM pgrun._error_codes()),
    'the registry lists each code once'
);
SELECT is_empty(
    $$SELECT code FROM pgrun._error_codes() WHERE code !~ '^[a-z]+\.[a-z_]+$'$$,
    'every registered code is a dotted <family>.<code>'
);
SELECT is_empty(
    $$SELECT code, sqlstate FROM pgrun._error_codes()
      WHERE sqlstate NOT IN ('RQ001', 'RQ002', 'RQ003', 'RQ004', 'RQ005', 'RQ006', '40001', '42501')$$,
    'every SQLSTATE is a pgrun category or a standard one docs/errors.md names'
);
SELECT is(pgrun._error_sqlstate('job.not_found'), 'RQ002', '_error_sqlstate: job.not_found is not found');
SELECT is(pgrun._error_sqlstate('job.lease_lost'), 'RQ004', '_error_sqlstate: job.lease_lost is lease lost');
SELECT is(pgrun._error_sqlstate('job.no_such_code'), NULL, '_error_sqlstate: NULL for an unregistered code');

-- _raise: the registry's SQLSTATE, with the DETAIL and HINT given
SELECT throws_ok(
    $$SELECT pgrun._raise('schedule.not_active', 'd', 'h')$$, 'RQ001', 'schedule.not_active',
    '_raise raises a code with its registry SQLSTATE'
);
SELECT is(
    pg_temp.raised($$SELECT pgrun._raise('job.invalid_batch', 'the detail', 'the hint')$$),
    ARRAY['RQ003', 'job.invalid_batch', 'the detail', 'the hint'],
    '_raise passes the DETAIL and the HINT'
);
SELECT is(
    pg_temp.raised($$SELECT pgrun._raise('job.invalid_batch', 'the detail')$$),
    ARRAY['RQ003', 'job.invalid_batch', 'the detail', ''],
    '_raise without a HINT raises none'
);
SELECT is(
    pg_temp.raised($$SELECT pgrun._raise('job.invalid_batch', NULL, 'the hint')$$),
    ARRAY['RQ003', 'job.invalid_batch', '', 'the hint'],
    '_raise with a NULL DETAIL raises none'
);
SELECT is(
    pg_temp.raised($$SELECT pgrun._raise('workflow.cancel_retry')$$),
    ARRAY['RQ005', 'workflow.cancel_retry', '', ''],
    '_raise with the code alone'
);

-- an unregistered code is an internal error naming it
SELECT throws_ok(
    $$SELECT pgrun._raise('job.no_such_code', 'what happened', 'what to do')$$,
    'RQ005', 'pgrun.unknown_error_code',
    'an unregistered code raises pgrun.unknown_error_code (RQ005)'
);
SELECT matches(
    (pg_temp.raised($$SELECT pgrun._raise('job.no_such_code', 'what happened', 'what to do')$$))[3],
    '^error code ''job\.no_such_code'' is not in the error registry .*: what happened$',
    'its DETAIL names the unregistered code and keeps the DETAIL it came with'
);
SELECT is(
    (pg_temp.raised($$SELECT pgrun._raise(NULL)$$))[1:2],
    ARRAY['RQ005', 'pgrun.unknown_error_code'],
    'a NULL code is unregistered too'
);

SELECT * FROM finish();
ROLLBACK;
