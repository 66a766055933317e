-- Which of pgrun's LANGUAGE sql functions PostgreSQL inlines into the statements that call
-- them (the SECURITY DEFINER ones are the API, called by clients, never inlined). An inlined
-- helper costs nothing of its own; one that is not is a function call whose body is parsed and
-- planned again in every statement (every call, under plpgsql). PostgreSQL does not inline a sql
-- function that has a SET clause, whose body is a query (FROM, aggregates) in a scalar position,
-- or that is declared IMMUTABLE while its body is not: pgrun._enqueue_run_at was, and with it
-- single enqueue ran at 1 / 1.13 and enqueue_jobs at 1 / 1.21 of today's rate with fsync off
-- (bench/inlining_bench.py). This file pins the list of those not inlined: a new helper is
-- inlined, or joins the list here with its reason.
--
-- Each function is called in a generic statement: its arguments are columns of a subquery
-- that cannot be flattened (OFFSET 0), so no call is folded into a constant at plan time; a
-- call the planner kept shows in EXPLAIN VERBOSE as pgrun.<name>(...).
BEGIN;
SELECT plan(2);

CREATE FUNCTION pg_temp.not_inlined()
RETURNS SETOF text
LANGUAGE plpgsql
AS $$
DECLARE
    f record;
    v_plan text;
BEGIN
    FOR f IN
        SELECT p.oid::regprocedure::text AS sig, p.proname, p.proretset,
            ARRAY(SELECT format_type(t, NULL) FROM unnest(p.proargtypes::oid[]) AS t) AS types
        FROM pg_proc AS p
        JOIN pg_language AS l ON l.oid = p.prolang
        WHERE p.pronamespace = 'pgrun'::regnamespace AND l.lanname = 'sql' AND NOT p.prosecdef
        ORDER BY 1
    LOOP
        SELECT string_agg(j.line, E'\n') INTO v_plan
        FROM pg_temp.explain_call(f.proname, f.types, f.proretset) AS j (line);
        IF position(format('pgrun.%s(', f.proname) IN v_plan) > 0 THEN
            RETURN NEXT f.sig;
        END IF;
    END LOOP;
END;
$$;

-- Under this search_path EXPLAIN VERBOSE names every pgrun function with its schema.
CREATE FUNCTION pg_temp.explain_call(p_name text, p_types text[], p_setof boolean)
RETURNS SETOF text
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_cols text := coalesce(
        (SELECT string_agg(format('NULL::%s AS a%s', t, n), ', ')
         FROM unnest(p_types) WITH ORDINALITY AS u (t, n)),
        '1 AS a0'
    );
    v_args text := coalesce(
        (SELECT string_agg(format('x.a%s', n), ', ') FROM generate_subscripts(p_types, 1) AS n),
        ''
    );
BEGIN
    RETURN QUERY EXECUTE format(
        CASE WHEN p_setof
            THEN 'EXPLAIN (VERBOSE, COSTS OFF) SELECT * FROM (SELECT %s OFFSET 0) AS x, LATERAL pgrun.%I(%s) AS f'
            ELSE 'EXPLAIN (VERBOSE, COSTS OFF) SELECT pgrun.%I(%s) FROM (SELECT %s OFFSET 0) AS x'
        END,
        VARIADIC CASE WHEN p_setof THEN ARRAY[v_cols, p_name, v_args] ELSE ARRAY[p_name, v_args, v_cols] END
    );
END;
$$;

-- TEST: the check sees a call that is not inlined (a sql function with a SET clause never is)
CREATE FUNCTION pgrun._probe_not_inlined(p_value integer)
RETURNS integer
LANGUAGE sql
STABLE
SET work_mem = '1MB'
AS $$ SELECT p_value $$;
SELECT ok(
    'pgrun._probe_not_inlined(integer)' IN (SELECT pg_temp.not_inlined()),
    'a sql function with a SET clause shows as not inlined'
);
DROP FUNCTION pgrun._probe_not_inlined(integer);

-- TEST: every other sql function is inlined but these, each for its reason
SELECT results_eq(
    $$SELECT s COLLATE "default" FROM pg_temp.not_inlined() AS s ORDER BY 1$$,
    $$VALUES
        -- a scalar query (the caller's role row); why a lease is lost, an error path only
        ('pgrun._caller_is_admin()'),
        -- a scalar query over the error registry; raising an error only
        ('pgrun._error_sqlstate(text)'),
        -- a scalar read of job_events: get_job, and list_jobs for the jobs that failed
        ('pgrun._job_attempt_error_message(uuid,integer)'),
        -- a scalar read of job_definitions, only for results over 1 KiB
        ('pgrun._job_result_cap(text)'),
        -- SET search_path; read by the role-model checks and the migration
        ('pgrun._security_matrix()'),
        -- IMMUTABLE over format(), which is STABLE; the DETAIL text of errors only
        ('pgrun._shown(text)'),
        -- a scalar query (aggregates over the two requests); the DETAIL of a conflicting request only
        ('pgrun._workflow_diff_requests(jsonb,jsonb)')$$,
    'the sql functions that are not inlined are exactly the listed ones'
);

SELECT * FROM finish();
ROLLBACK;
