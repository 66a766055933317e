-- pgrun.schema_version(): the highest applied versioned migration.
BEGIN;
SELECT plan(3);

SELECT is(
    pgrun.schema_version(),
    (SELECT max(version)::integer FROM pgrun.schema_migrations WHERE kind = 'versioned'),
    'schema_version() is the highest versioned migration'
);
SELECT ok(pgrun.schema_version() >= 1, 'at least the foundation migration is applied');

-- TEST: the repeatable plpgsql row does not count as a version
INSERT INTO pgrun.schema_migrations (version, name, kind, checksum)
VALUES ('zz_extra', 'extra', 'repeatable', repeat('0', 64));
SELECT is(
    pgrun.schema_version(),
    (SELECT max(version)::integer FROM pgrun.schema_migrations WHERE kind = 'versioned'),
    'repeatable rows are ignored'
);

SELECT * FROM finish();
ROLLBACK;
