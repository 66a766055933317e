-- One job-type rule (sql/0015_one_job_type_check.sql): the CHECK constraints of
-- job_definitions and job_schedules call pgrun._valid_job_type, the function every
-- validator calls, so the tables and the API cannot disagree on what a job type is.
BEGIN;
SELECT plan(9);

-- TEST: both constraints are bound to the function (a dependency PostgreSQL records)
SELECT is(
    (SELECT string_agg(c.conrelid::regclass::text || ' ' || c.conname::text, ', ' ORDER BY c.conname::text)
     FROM pg_constraint AS c
     JOIN pg_depend AS d ON d.classid = 'pg_constraint'::regclass AND d.objid = c.oid
     WHERE d.refclassid = 'pg_proc'::regclass
       AND d.refobjid = 'pgrun._valid_job_type(text)'::regprocedure),
    'pgrun.job_definitions job_definitions_job_type_check, pgrun.job_schedules job_schedules_job_type_check',
    'job_definitions and job_schedules check job_type with pgrun._valid_job_type'
);

-- TEST: no constraint spells the pattern out any more
SELECT is_empty(
    $$SELECT c.conname FROM pg_constraint AS c
      WHERE c.connamespace = 'pgrun'::regnamespace
        AND pg_get_constraintdef(c.oid) LIKE '%[a-z0-9_]%'$$,
    'the job type pattern is written once, in the function'
);

-- TEST: the function keeps the rule: length first, then the pattern
SELECT results_eq(
    $$SELECT v, pgrun._valid_job_type(v)
      FROM (VALUES ('email.send'), ('a'), ('a1_b:c-d.e'), (repeat('a', 128)), (repeat('a', 129)),
                   ('Email.send'), ('1email'), ('email..send'), ('email.'), ('email send'), ('')) AS t (v)$$,
    $$VALUES ('email.send', true), ('a', true), ('a1_b:c-d.e', true), (repeat('a', 128), true),
             (repeat('a', 129), false), ('Email.send', false), ('1email', false), ('email..send', false),
             ('email.', false), ('email send', false), ('', false)$$,
    'valid: lowercase segments joined by . : -, starting with a letter, at most 128 characters'
);
SELECT is(pgrun._valid_job_type(NULL), NULL, 'NULL is neither valid nor invalid (the columns are NOT NULL)');
SELECT is(
    (SELECT provolatile FROM pg_proc WHERE oid = 'pgrun._valid_job_type(text)'::regprocedure),
    'i'::"char",
    'immutable, as a CHECK constraint needs'
);

-- TEST: a row written past the API meets the same rule
SELECT throws_ok(
    $$INSERT INTO pgrun.job_definitions (job_type) VALUES ('Bad.type')$$,
    '23514', NULL, 'job_definitions refuses a job type the function refuses'
);
SELECT throws_ok(
    format($$INSERT INTO pgrun.job_definitions (job_type) VALUES (%L)$$, repeat('a', 129)),
    '23514', NULL, 'and one over 128 characters'
);
SELECT lives_ok(
    format($$INSERT INTO pgrun.job_definitions (job_type) VALUES (%L)$$, repeat('a', 128)),
    'and takes one of 128'
);
SELECT pgrun_test.make_schedule('type-check') AS schedule_id \gset
SELECT throws_ok(
    format($$UPDATE pgrun.job_schedules SET job_type = 'Bad.type' WHERE id = %L$$, :'schedule_id'),
    '23514', NULL, 'job_schedules refuses it too'
);

SELECT * FROM finish();
ROLLBACK;
