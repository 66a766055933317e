-- The API reference is generated from the catalog: every public function documents itself,
-- every private helper says what it is for, and private helpers (leading underscore) are not
-- callable by PUBLIC.
BEGIN;
SELECT plan(4);

SELECT is_empty(
    $$
    SELECT p.oid::regprocedure::text
    FROM pg_proc AS p
    WHERE p.pronamespace = 'pgrun'::regnamespace
      AND p.proname !~ '^_'
      AND coalesce(obj_description(p.oid, 'pg_proc'), '') = ''
    $$,
    'every public function in schema pgrun has a COMMENT'
);

SELECT is_empty(
    $$
    SELECT p.oid::regprocedure::text
    FROM pg_proc AS p
    WHERE p.pronamespace = 'pgrun'::regnamespace
      AND p.proname ~ '^_'
      AND coalesce(obj_description(p.oid, 'pg_proc'), '') !~ '^Private: '
    $$,
    'every private helper has a COMMENT that starts with "Private: "'
);

SELECT ok(
    (SELECT count(*) FROM pg_proc WHERE pronamespace = 'pgrun'::regnamespace AND proname !~ '^_') >= 3,
    'the public API is not empty'
);

SELECT is_empty(
    $$
    SELECT p.oid::regprocedure::text
    FROM pg_proc AS p
    WHERE p.pronamespace = 'pgrun'::regnamespace
      AND p.proname ~ '^_'
      AND has_function_privilege('public', p.oid, 'EXECUTE')
    $$,
    'no private helper is executable by PUBLIC'
);

SELECT * FROM finish();
ROLLBACK;
