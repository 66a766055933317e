-- 0009 qualified checks: two CHECK constraints call pg_catalog.cardinality by its full name.
--
-- 0003 (workflow_run_mutations_steps_check) and 0004 (job_schedules_scope_check) wrote
-- cardinality(...) unqualified. A constraint binds its functions when it is created, with
-- the migrator's search_path of the time: a cardinality(text[]) planted in a schema on that
-- path (PostgreSQL 14's public, writable by everyone) matches text[] better than
-- pg_catalog.cardinality(anyarray) does, so the constraint called the planted function on
-- every insert and update, as pgrun's owner. Migrations now run with search_path pinned to
-- pg_catalog, pg_temp (docs/security.md), and this file re-creates both constraints with the
-- same names and the same meaning, bound to pg_catalog.cardinality whatever they were bound
-- to before. Neither table is rewritten: adding a check reads its rows once.
--
-- From this file on, every function call in sql/ is schema-qualified (pinned by
-- tests_py/test_migrate_qualified.py).

ALTER TABLE pgrun.workflow_run_mutations
DROP CONSTRAINT workflow_run_mutations_steps_check,
ADD CONSTRAINT workflow_run_mutations_steps_check CHECK (pg_catalog.cardinality(step_keys) >= 1);

ALTER TABLE pgrun.job_schedules
DROP CONSTRAINT job_schedules_scope_check,
ADD CONSTRAINT job_schedules_scope_check CHECK (
    -- none: one tick per plan time (scope '')
    -- organization: one per organization id in scopes; the job belongs to it
    -- key: one per free-form key in scopes
    scope_kind IN ('none', 'organization', 'key')
    AND (scope_kind = 'none') = (pg_catalog.cardinality(scopes) = 0)
    AND (scope_kind <> 'organization' OR organization_id IS NULL)
);
