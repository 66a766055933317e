-- The model the matrix rests on: the API runs as pgrun's owner role with a pinned search_path,
-- the owner owns everything, clients hold no table privilege at all (the API is the only
-- door), and a migrated database has nothing left for _security_plan to do.
BEGIN;
SELECT plan(13);

-- SETUP
SELECT role_name AS owner FROM pgrun.install_roles WHERE kind = 'owner' \gset
SELECT role_name AS admin FROM pgrun.install_roles WHERE kind = 'admin' \gset
SELECT pgrun_test.make_job() AS job \gset
SELECT pgrun_test.fingerprint() AS before \gset

-- TEST: the group roles
SELECT set_eq(
    $$SELECT kind || '=' || role_name FROM pgrun.install_roles$$,
    ARRAY['owner=pgrun_owner', 'admin=pgrun_admin', 'producer=pgrun_producer', 'worker=pgrun_worker',
        'reader=pgrun_reader'],
    'five group roles, named from the default prefix pgrun'
);
SELECT is_empty(
    $$SELECT r.rolname FROM pg_roles AS r JOIN pgrun.install_roles AS i ON i.role_name = r.rolname
      WHERE r.rolcanlogin OR r.rolsuper OR r.rolcreaterole OR r.rolcreatedb OR r.rolbypassrls$$,
    'they are NOLOGIN group roles without special attributes (the owner included)'
);
SELECT ok(pg_has_role(:'owner', :'admin', 'MEMBER'), 'the owner role is an admin (whoever owns pgrun administers it)');

-- TEST: the API runs as the owner, with a pinned search_path
SELECT is_empty(
    $$SELECT p.oid::regprocedure FROM pg_proc AS p
      WHERE p.pronamespace = 'pgrun'::regnamespace AND p.proname !~ '^_' AND p.proname NOT IN ('now', 'uuidv7')
        AND NOT (p.prosecdef AND 'search_path=pg_catalog, pg_temp' = ANY (p.proconfig))$$,
    'every public function (but the clock and the id generator) is SECURITY DEFINER with search_path pg_catalog, pg_temp'
);
SELECT is_empty(
    $$SELECT p.oid::regprocedure FROM pg_proc AS p
      WHERE p.pronamespace = 'pgrun'::regnamespace AND p.proname ~ '^_' AND p.prosecdef$$,
    'private helpers run as their caller (the API, i.e. the owner): none is SECURITY DEFINER'
);
SELECT is_empty(
    $$SELECT p.oid::regprocedure FROM pg_proc AS p
      WHERE p.pronamespace = 'pgrun'::regnamespace AND p.proname ~ '^_' AND p.proname !~ '^_security'
        AND EXISTS (SELECT FROM unnest(p.proconfig) AS c (setting) WHERE c.setting LIKE 'search_path=%')$$,
    'private helpers pin nothing: they run inside the API and inherit its pinned search_path'
);
SELECT is(
    (SELECT string_agg(p.proname || ':' || array_to_string(p.proconfig, ';'), ', ' ORDER BY p.proname)
     FROM pg_proc AS p WHERE p.pronamespace = 'pgrun'::regnamespace AND p.proname ~ '^_security'),
    '_security_apply:search_path=pg_catalog, pg_temp, _security_matrix:search_path=pg_catalog, pg_temp, '
        '_security_plan:search_path=pg_catalog, pg_temp',
    'the helpers migrate runs itself (from the migrator''s session) pin theirs'
);
-- TEST: ownership
SELECT is_empty(
    format($$SELECT c.oid::regclass::text FROM pg_class AS c
      WHERE c.relnamespace = 'pgrun'::regnamespace AND c.relowner <> %L::regrole
      UNION ALL
      SELECT 'schema pgrun' FROM pg_namespace WHERE nspname = 'pgrun' AND nspowner <> %L::regrole$$,
      :'owner', :'owner'),
    'the schema and every relation in it belong to the owner role'
);
SELECT is_empty(
    format($$SELECT p.oid::regprocedure FROM pg_proc AS p
      WHERE p.pronamespace = 'pgrun'::regnamespace AND p.proowner <> %L::regrole$$, :'owner'),
    'every function belongs to the owner role'
);

-- TEST: no table privilege for any client role, nor PUBLIC
SELECT is_empty(
    $$SELECT c.oid::regclass, r.kind
      FROM pg_class AS c
      CROSS JOIN (SELECT kind, role_name FROM pgrun.install_roles WHERE kind <> 'owner'
                  UNION ALL SELECT 'public', 'public') AS r
      WHERE c.relnamespace = 'pgrun'::regnamespace AND c.relkind IN ('r', 'v', 'S')
        AND CASE WHEN c.relkind = 'S' THEN has_sequence_privilege(r.role_name, c.oid, 'USAGE, SELECT, UPDATE')
            ELSE has_table_privilege(r.role_name, c.oid, 'SELECT, INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER')
        END$$,
    'admin, producer, worker, reader and PUBLIC hold no privilege on any pgrun table, view or sequence'
);
SELECT is(
    pgrun_test.as_role('pgrun_tap_worker', format($$UPDATE pgrun.jobs SET status = 'succeeded' WHERE id = %L$$, :'job')),
    '42501 permission denied for table jobs',
    'a worker cannot mark a job succeeded behind the API''s back'
);
SELECT is(pgrun_test.fingerprint(), :'before', 'and nothing changed');

-- TEST: nothing left to apply
SELECT is_empty($$SELECT * FROM pgrun._security_plan(true)$$, 'a migrated database matches the role model');

SELECT * FROM finish();
ROLLBACK;
