-- pgrun._log_entry_problem: the one rule for a log line's level and fields that append_job_log
-- (job.invalid_log_entry) and append_job_logs (outcome invalid) apply: NULL when taken, else
-- what is wrong.
BEGIN;
SELECT plan(9);

SELECT is(pgrun._log_entry_problem('info', NULL), NULL, 'a level and no fields are taken');
SELECT is(pgrun._log_entry_problem('debug', '{"k": [1, 2]}'), NULL, 'an object of fields is taken');
SELECT is(
    pgrun._log_entry_problem('warning', ('{"p": ' || repeat('[', 99) || repeat(']', 99) || '}')::jsonb),
    NULL,
    'fields nested 100 levels are taken'
);
SELECT is(
    pgrun._log_entry_problem('fatal', NULL),
    'level ''fatal'' is not one of debug, info, warning, error',
    'an unknown level'
);
SELECT is(
    pgrun._log_entry_problem(NULL, NULL),
    'level NULL is not one of debug, info, warning, error',
    'a NULL level (the callers make it info first)'
);
SELECT is(pgrun._log_entry_problem('error', '"text"'), 'fields is a JSON string, not an object', 'a string');
SELECT is(
    pgrun._log_entry_problem('info', jsonb_build_object('k', repeat('x', 70000))),
    'fields is 70009 bytes (at most 65536)',
    'fields over 64 KiB'
);
SELECT is(
    pgrun._log_entry_problem('info', ('{"p": ' || repeat('[', 100) || repeat(']', 100) || '}')::jsonb),
    'fields is nested more than 100 levels deep (arrays and objects)',
    'fields nested 101 levels'
);
SELECT is(
    pgrun._log_entry_problem('loud', '[1]'),
    'level ''loud'' is not one of debug, info, warning, error',
    'the level is named first'
);

SELECT * FROM finish();
ROLLBACK;
