-- set_role_access / remove_role_access / list_role_access: the admin's switchboard. Each call
-- states a role's whole access (a full replace); bad input is refused with a code and changes
-- nothing.
BEGIN;
SELECT plan(18);

-- SETUP
SELECT gen_random_uuid() AS org_a, gen_random_uuid() AS org_b \gset

-- TEST: stating and restating
SELECT is(
    (SELECT (role::text, organization_ids, any_organization, queues, job_types)::text
     FROM pgrun.set_role_access('pgrun_tap_tenant_a', organization_ids => ARRAY[:'org_b', :'org_a', :'org_a']::uuid[],
        queues => ARRAY['b', 'a'])),
    (SELECT ('pgrun_tap_tenant_a', ARRAY(SELECT unnest(ARRAY[:'org_a', :'org_b']::uuid[]) ORDER BY 1), false,
        ARRAY['a', 'b'], NULL::text[])::text),
    'organizations and queues are stored sorted and without repeats'
);
SELECT is(
    (SELECT (organization_ids, any_organization, queues)::text FROM pgrun.set_role_access('pgrun_tap_tenant_a', any_organization => true)),
    (SELECT (NULL::uuid[], true, NULL::text[])::text),
    'a second call replaces the whole row (queues are back to any)'
);
SELECT is((SELECT updated_by FROM pgrun.role_access WHERE role = 'pgrun_tap_tenant_a'::regrole), session_user::text,
    'the row says who set it');
SELECT is(
    (SELECT role || ':' || array_to_string(pgrun_roles, '+') || ':' || any_organization FROM pgrun.list_role_access()
     WHERE role = 'pgrun_tap_tenant_a'),
    'pgrun_tap_tenant_a:producer:true',
    'list_role_access shows the row and the pgrun roles the role is a member of'
);

-- TEST: input errors, nothing written
SELECT pgrun_test.fingerprint() AS before \gset
SELECT throws_ok($$SELECT pgrun.set_role_access(NULL)$$, 'RQ003', 'access.invalid_role', 'a NULL role is refused');
SELECT throws_ok($$SELECT pgrun.set_role_access('no_such_role_anywhere')$$, 'RQ003', 'access.invalid_role',
    'a role that does not exist is refused');
SELECT throws_ok($$SELECT pgrun.set_role_access('PGRUN_TAP_TENANT_A')$$, 'RQ003', 'access.invalid_role',
    'the name is taken as spelled (roles are case-sensitive)');
SELECT throws_ok(format($$SELECT pgrun.set_role_access('pgrun_tap_tenant_a', ARRAY[%L]::uuid[], true)$$, :'org_a'),
    'RQ003', 'access.invalid_organizations', 'organizations and any_organization contradict each other');
SELECT throws_ok($$SELECT pgrun.set_role_access('pgrun_tap_tenant_a', '{}'::uuid[])$$,
    'RQ003', 'access.invalid_organizations', 'an empty organization list is refused (that would be no access)');
SELECT throws_ok($$SELECT pgrun.set_role_access('pgrun_tap_tenant_a', ARRAY[NULL]::uuid[])$$,
    'RQ003', 'access.invalid_organizations', 'a NULL organization is refused');
SELECT throws_ok($$SELECT pgrun.set_role_access('pgrun_tap_tenant_a', ARRAY['00000000-0000-0000-0000-000000000000']::uuid[])$$,
    'RQ003', 'access.invalid_organizations', 'the nil uuid is refused');
SELECT throws_ok($$SELECT pgrun.set_role_access('pgrun_tap_tenant_a', queues => ARRAY['Bad Queue'])$$,
    'RQ003', 'access.invalid_scope', 'a malformed queue name is refused');
SELECT throws_ok($$SELECT pgrun.set_role_access('pgrun_tap_tenant_a', job_types => '{}'::text[])$$,
    'RQ003', 'access.invalid_scope', 'an empty job type list is refused');
SELECT is(pgrun_test.fingerprint(), :'before', 'no refused call changed anything');

-- TEST: removing
SELECT is(pgrun.remove_role_access('pgrun_tap_tenant_a'), true, 'remove_role_access removes the row');
SELECT is(pgrun.remove_role_access('pgrun_tap_tenant_a'), false, 'and says so when there is none');
SELECT throws_ok($$SELECT pgrun.remove_role_access('no_such_role_anywhere')$$, 'RQ003', 'access.invalid_role',
    'removing an unknown role is refused');

-- TEST: a role dropped after it was given access does not break the listing
CREATE ROLE pgrun_tap_short_lived NOLOGIN;
SELECT pgrun.set_role_access('pgrun_tap_short_lived', any_organization => true);
DROP ROLE pgrun_tap_short_lived;
SELECT is(
    (SELECT count(*) FROM pgrun.list_role_access() WHERE pgrun_roles = '{}' AND any_organization),
    1::bigint, 'list_role_access still lists its row (under the old oid), a member of no pgrun role'
);

SELECT * FROM finish();
ROLLBACK;
