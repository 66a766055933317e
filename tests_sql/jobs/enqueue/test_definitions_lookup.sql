-- The one insert of new jobs reads the definitions of the job types it inserts, one probe of
-- job_definitions' primary key per type, and no other definition: with 500 job types defined
-- a single enqueue reads one definition (its plan used to read and hash all 500, whatever the
-- call brought), and a batch reads one per type it brings. pgrun._new_job_rows is where the
-- settings resolve: the request, else the definition of a type in p_types, else the built-in
-- defaults, one row per element in array order. The reads are this transaction's counters of
-- job_definitions (pg_stat_xact_user_tables), before and after each call.
BEGIN;
SELECT plan(8);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT count(*) FROM (
    SELECT pgrun.upsert_job_definition('many.' || g, priority => g, max_attempts => 3)
    FROM generate_series(1, 500) AS g
) AS s;
ANALYZE pgrun.job_definitions;

CREATE TEMP TABLE reads (
    label text PRIMARY KEY, seq_rows bigint, idx_scans bigint, idx_rows bigint
) ON COMMIT DROP;
CREATE FUNCTION pg_temp.mark(p_label text)
RETURNS void
LANGUAGE sql
AS $$
    INSERT INTO reads
    SELECT p_label, coalesce(s.seq_tup_read, 0), coalesce(s.idx_scan, 0), coalesce(s.idx_tup_fetch, 0)
    FROM pg_stat_xact_user_tables AS s
    WHERE s.relid = 'pgrun.job_definitions'::regclass
$$;
CREATE FUNCTION pg_temp.read_between(p_from text, p_to text)
RETURNS text
LANGUAGE sql
AS $$
    SELECT format('rows read by seq scans %s, index scans %s, rows fetched by index %s',
        b.seq_rows - a.seq_rows, b.idx_scans - a.idx_scans, b.idx_rows - a.idx_rows)
    FROM reads AS a, reads AS b WHERE a.label = p_from AND b.label = p_to
$$;

-- TEST: a single enqueue of a defined type reads its definition only, by the primary key
SELECT pg_temp.mark('single: before');
SELECT job_id AS defined_job FROM pgrun.enqueue_job('many.7') \gset
SELECT pg_temp.mark('single: after');
SELECT is(
    pg_temp.read_between('single: before', 'single: after'),
    'rows read by seq scans 0, index scans 1, rows fetched by index 1',
    'one enqueue among 500 definitions probes the one it needs'
);
SELECT results_eq(
    format('SELECT priority, max_attempts, queue FROM pgrun.jobs WHERE id = %L', :'defined_job'),
    $$VALUES (7, 3, 'default'::text)$$,
    'and takes its settings from it'
);

-- TEST: a type without a definition: one probe that finds nothing, the built-in defaults
SELECT pg_temp.mark('bare: before');
SELECT job_id AS bare_job FROM pgrun.enqueue_job('not.defined') \gset
SELECT pg_temp.mark('bare: after');
SELECT is(
    pg_temp.read_between('bare: before', 'bare: after'),
    'rows read by seq scans 0, index scans 1, rows fetched by index 0',
    'an undefined type costs one probe'
);
SELECT results_eq(
    format('SELECT priority, max_attempts FROM pgrun.jobs WHERE id = %L', :'bare_job'),
    $$VALUES (100, 20)$$,
    'and gets the built-in defaults'
);

-- TEST: a batch of 100 jobs of three types: one probe per type, each job its type's settings
SELECT pg_temp.mark('batch: before');
CREATE TEMP TABLE batch ON COMMIT DROP AS
SELECT * FROM pgrun.enqueue_jobs((
    SELECT jsonb_agg(jsonb_build_object(
        'job_type', CASE WHEN g % 5 = 0 THEN 'not.defined' WHEN g % 2 = 0 THEN 'many.2' ELSE 'many.1' END,
        'payload', jsonb_build_object('n', g)
    ) ORDER BY g)
    FROM generate_series(1, 100) AS g
));
SELECT pg_temp.mark('batch: after');
SELECT is(
    pg_temp.read_between('batch: before', 'batch: after'),
    'rows read by seq scans 0, index scans 3, rows fetched by index 2',
    'a batch probes once per job type it brings'
);
SELECT results_eq(
    $$SELECT j.job_type, j.priority, j.max_attempts, count(*)
      FROM batch AS b JOIN pgrun.jobs AS j ON j.id = b.job_id
      GROUP BY 1, 2, 3 ORDER BY 1$$,
    $$VALUES ('many.1'::text, 1, 3, 40::bigint), ('many.2', 2, 3, 40), ('not.defined', 100, 20, 20)$$,
    'every job of the batch has its own type''s settings'
);

-- TEST: pgrun._new_job_rows: array order, request before definition before defaults, and
-- only the definitions of the types in p_types
SELECT results_eq(
    $$SELECT n.job_type, n.queue, n.priority, n.max_attempts
      FROM pgrun._new_job_rows(ARRAY[
          ROW(pgrun.uuidv7(), 'many.9', '{}', NULL, NULL, NULL, NULL, now(), NULL, NULL, NULL, NULL, NULL, NULL),
          ROW(pgrun.uuidv7(), 'many.8', '{}', 'q', 4, NULL, NULL, now(), NULL, NULL, NULL, NULL, NULL, NULL),
          ROW(pgrun.uuidv7(), 'not.defined', '{}', NULL, NULL, 9, NULL, now(), NULL, NULL, NULL, NULL, NULL, NULL)
      ]::pgrun._new_job[], ARRAY['many.9', 'many.8', 'not.defined'], now()) AS n$$,
    $$VALUES
        ('many.9'::text, 'default'::text, 9, 3),
        ('many.8', 'q', 4, 3),
        ('not.defined', 'default', 100, 9)$$,
    'rows in array order; a request wins over the definition, the definition over the defaults'
);
SELECT results_eq(
    $$SELECT n.priority, n.max_attempts
      FROM pgrun._new_job_rows(ARRAY[
          ROW(pgrun.uuidv7(), 'many.9', '{}', NULL, NULL, NULL, NULL, now(), NULL, NULL, NULL, NULL, NULL, NULL)
      ]::pgrun._new_job[], ARRAY['many.8'], now()) AS n$$,
    $$VALUES (100, 20)$$,
    'a type left out of p_types is not looked up (the door names every type it brings)'
);

SELECT * FROM finish();
ROLLBACK;
