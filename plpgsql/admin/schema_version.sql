-- schema_version: which versioned migration this database has reached.
--
-- Reads pgrun.schema_migrations; takes no locks; raises nothing.

CREATE OR REPLACE FUNCTION pgrun.schema_version()
RETURNS integer
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT max(m.version::integer)
    FROM pgrun.schema_migrations AS m
    WHERE m.kind = 'versioned'
$$;

COMMENT ON FUNCTION pgrun.schema_version() IS
'The highest versioned migration applied to this database (NULL before the first).';
