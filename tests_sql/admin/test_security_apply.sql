-- _security_plan / _security_apply: what migrate runs to keep the role model. A migrated
-- database needs nothing; a widened or lost grant is planned back and applied; a public
-- function outside the matrix stops it; missing group roles need a role that may create them.
BEGIN;
SELECT plan(8);

-- TEST: nothing to do after migrate
SELECT is_empty($$SELECT * FROM pgrun._security_plan(false)$$, 'a migrated database needs nothing');

-- TEST: drift is planned back, and applied
GRANT EXECUTE ON FUNCTION pgrun.purge_finished_jobs(interval, integer, uuid) TO pgrun_worker;
REVOKE EXECUTE ON FUNCTION pgrun.get_job(uuid, uuid) FROM pgrun_reader;
GRANT SELECT ON pgrun.audit_log TO PUBLIC;
SELECT set_eq(
    $$SELECT statement FROM pgrun._security_plan(false)$$,
    ARRAY[
        'REVOKE EXECUTE ON FUNCTION pgrun.purge_finished_jobs(interval,integer,uuid) FROM pgrun_worker',
        'GRANT EXECUTE ON FUNCTION pgrun.get_job(uuid,uuid) TO pgrun_reader',
        'REVOKE ALL ON pgrun.audit_log FROM PUBLIC'
    ],
    'a widened grant, a lost grant and a table privilege for PUBLIC are each planned back'
);
SELECT is(pgrun._security_apply(), 3, '_security_apply runs the three statements');
SELECT is_empty($$SELECT * FROM pgrun._security_plan(false)$$, 'and the model holds again');
SELECT ok(NOT has_function_privilege('pgrun_worker', 'pgrun.purge_finished_jobs(interval, integer, uuid)', 'EXECUTE'),
    'the worker may not purge any more');

-- TEST: every public function needs its row in the matrix
CREATE FUNCTION pgrun.rogue() RETURNS int LANGUAGE sql AS 'SELECT 1';
SELECT throws_ok($$SELECT * FROM pgrun._security_plan(false)$$, 'RQ005', 'access.function_not_in_matrix',
    'a public function without a row in the matrix stops the plan (and so migrate)');
DROP FUNCTION pgrun.rogue();

-- TEST: a missing group role needs a role that may create roles
UPDATE pgrun.install_roles SET role_name = 'pgrun_tap_missing_reader' WHERE kind = 'reader';
SELECT is(
    (SELECT statement FROM pgrun._security_plan(false) WHERE step = 1),
    'CREATE ROLE pgrun_tap_missing_reader NOLOGIN',
    'a missing group role is planned to be created'
);
SET LOCAL SESSION AUTHORIZATION pgrun_tap_owner_member;
SELECT throws_ok($$SELECT pgrun._security_apply()$$, '42501', 'access.cannot_create_roles',
    'a migrating role without CREATEROLE is told which roles to have made');
RESET SESSION AUTHORIZATION;

SELECT * FROM finish();
ROLLBACK;
