-- 0015 one job-type check: the CHECK constraints and the validators use one definition of a
-- valid job type, pgrun._valid_job_type (issue 14).
--
-- Until now the rule was written three times: job_definitions_job_type_check (0002),
-- job_schedules_job_type_check (0004), each as `job_type ~ '<pattern>' AND length(job_type)
-- <= 128`, and the function pgrun._valid_job_type in plpgsql/util/_limits.sql that every
-- validator calls (enqueue, definitions, workflow steps, role scopes). Both constraints now
-- call the function, so the pattern is written once, here.
--
-- Where the function lives, decided: in this migration, not in plpgsql/. A constraint
-- depends on the function, and migrate's tree step drops only the pgrun functions nothing
-- but functions depends on (python/pgrun/migrate.py, PREPARE_TREE): a tree copy would never
-- be dropped, yet a CREATE OR REPLACE from the tree could change the rule under the
-- constraints without checking a single stored row. Like pgrun.now() and pgrun.uuidv7()
-- (0001, used by column defaults), a function a table needs is versioned with the tables
-- (docs/migrations.md: functions go in plpgsql/ "unless a table definition needs them"),
-- and a changed rule is a new migration that re-creates, and so re-checks, the constraints.
-- The tree no longer defines it; on an existing install this file replaces the tree's copy
-- (same signature, same body) before the tree is re-applied.
--
-- Meaning unchanged: at most 128 characters (tested first, so a huge string is refused
-- without a regex over it), then the pattern; the columns are NOT NULL, so NULL never
-- reaches the function. IMMUTABLE SQL with no SET clause: the planner inlines it into the
-- constraint expression, which costs what the old one did.
--
-- Re-created with plain ADD CONSTRAINT, not NOT VALID + VALIDATE: job_definitions holds
-- one row per job type and job_schedules one per schedule, so the check of the existing
-- rows is a scan of a few rows, and DROP CONSTRAINT takes the ACCESS EXCLUSIVE lock for the
-- rest of the transaction anyway. The names stay the same.
--
-- Every function call is schema-qualified (tests_py/test_migrate_qualified.py).

CREATE OR REPLACE FUNCTION pgrun._valid_job_type(p_value text)
RETURNS boolean
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
AS $$
    SELECT CASE
        WHEN pg_catalog.length(p_value) OPERATOR(pg_catalog.>) 128 THEN FALSE
        ELSE p_value OPERATOR(pg_catalog.~) '^[a-z][a-z0-9_]*([.:-][a-z0-9_]+)*$'
    END
$$;

REVOKE EXECUTE ON FUNCTION pgrun._valid_job_type(text) FROM public;

COMMENT ON FUNCTION pgrun._valid_job_type(text) IS
'Private: whether a job type is valid (at most 128 characters, tested first, then the pattern); NULL for '
'NULL. THE rule: the CHECK constraints of job_definitions and job_schedules call it (sql/0015).';

ALTER TABLE pgrun.job_definitions
DROP CONSTRAINT job_definitions_job_type_check,
ADD CONSTRAINT job_definitions_job_type_check CHECK (pgrun._valid_job_type(job_type));

ALTER TABLE pgrun.job_schedules
DROP CONSTRAINT job_schedules_job_type_check,
ADD CONSTRAINT job_schedules_job_type_check CHECK (pgrun._valid_job_type(job_type));
