-- The organization rule of a write, for one job (pgrun._organization_refused): the enqueue
-- check reads it as an expression for a single enqueue and as the filter over a batch's
-- elements. A role bound to organizations must name one when it has several (a job without
-- one is refused when it has any), and may name only its own. tests_sql/access/
-- test_tenancy_kinds.sql drives both doors with real roles.
BEGIN;
SELECT plan(5);

-- TEST: no organization: refused when the role has some, allowed when it has none
SELECT is(
    pgrun._organization_refused(NULL, ARRAY['6f1c0000-0000-0000-0000-000000000001']::uuid[]),
    TRUE,
    'no organization, the role has one: refused'
);
SELECT is(
    pgrun._organization_refused(NULL, '{}'::uuid[]),
    FALSE,
    'no organization, the role has none (it works without one only): allowed'
);

-- TEST: an organization: allowed when it is the role's, refused otherwise
SELECT is(
    pgrun._organization_refused(
        '6f1c0000-0000-0000-0000-000000000002',
        ARRAY['6f1c0000-0000-0000-0000-000000000001', '6f1c0000-0000-0000-0000-000000000002']::uuid[]
    ),
    FALSE,
    'one of the role''s organizations: allowed'
);
SELECT is(
    pgrun._organization_refused(
        '6f1c0000-0000-0000-0000-000000000003', ARRAY['6f1c0000-0000-0000-0000-000000000001']::uuid[]
    ),
    TRUE,
    'another organization: refused'
);
SELECT is(
    pgrun._organization_refused('6f1c0000-0000-0000-0000-000000000003', '{}'::uuid[]),
    TRUE,
    'any organization, for a role that has none: refused'
);

SELECT * FROM finish();
ROLLBACK;
