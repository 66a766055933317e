-- 0001 foundation: the pgrun schema, its migration history, the clock and the id generator.
--
-- Released migrations are immutable: a change goes into a new NNNN file.

CREATE SCHEMA IF NOT EXISTS pgrun;

COMMENT ON SCHEMA pgrun IS 'pgrun: a durable job queue and workflow engine inside PostgreSQL.';

-- One row per applied versioned file (kind = versioned) and one row for the
-- repeatable plpgsql/ tree (kind = repeatable), written by `pgrun migrate`.
CREATE TABLE IF NOT EXISTS pgrun.schema_migrations (
    version text PRIMARY KEY,
    name text NOT NULL,
    kind text NOT NULL,
    checksum text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    CONSTRAINT schema_migrations_kind_check CHECK (
        -- versioned: a sql/NNNN_name.sql file, applied once, never edited
        -- repeatable: the plpgsql/ tree, re-applied whenever its checksum changes
        kind IN ('versioned', 'repeatable')
    ),
    CONSTRAINT schema_migrations_version_check CHECK (
        (kind = 'versioned' AND version ~ '^[0-9]{4}$')
        OR (kind = 'repeatable' AND version !~ '^[0-9]')
    ),
    CONSTRAINT schema_migrations_checksum_check CHECK (
        checksum ~ '^[0-9a-f]{64}$'
    )
);

COMMENT ON TABLE pgrun.schema_migrations IS
'Migration history written by pgrun migrate: versioned files once each, the plpgsql tree by checksum.';

-- The one clock. Every timestamp pgrun writes comes from here, so tests can
-- move time with `SET pgrun.fake_now = '...'` instead of sleeping. It is the
-- transaction's start time, as now() is, so one transition sees one instant.
-- It has no SET search_path clause, because a SQL function with one is never inlined
-- (called from plpgsql it was parsed and planned anew in every transaction, about 45 us
-- per call site, and every lifecycle write calls it); every name and operator is
-- schema-qualified instead, so no search_path can redirect it. docs/performance.md.
CREATE OR REPLACE FUNCTION pgrun.now()
RETURNS timestamptz
LANGUAGE sql
STABLE
PARALLEL SAFE
AS $$
    SELECT CASE
        WHEN pg_catalog.current_setting('pgrun.fake_now', true) OPERATOR(pg_catalog.<>) ''
            THEN pg_catalog.current_setting('pgrun.fake_now', true)::pg_catalog.timestamptz
        ELSE pg_catalog.now()
    END
$$;

COMMENT ON FUNCTION pgrun.now() IS
'The database clock pgrun uses for every timestamp: the transaction start time, or the pgrun.fake_now setting when one is set (tests).';

-- UUIDv7 (RFC 9562): 48-bit Unix milliseconds, version 7, a 12-bit counter
-- seeded from the sub-millisecond clock, the RFC variant, 62 random bits.
-- Within one session values strictly increase, also when the clock stands
-- still or steps back: the last (millisecond, counter) pair is kept in the
-- session setting pgrun.uuidv7_state, and a counter overflow borrows the next
-- millisecond. A rolled-back transaction rolls the setting back too, which
-- only matters for ids that were themselves rolled back.
CREATE OR REPLACE FUNCTION pgrun.uuidv7()
RETURNS uuid
LANGUAGE plpgsql
VOLATILE
PARALLEL SAFE
SET search_path = ''
AS $$
DECLARE
    v_clock timestamptz := clock_timestamp();
    v_ms bigint := floor(extract(EPOCH FROM v_clock) * 1000)::bigint;
    v_seq integer := floor(
        (extract(MICROSECONDS FROM v_clock)::bigint % 1000) * 4.096
    )::integer;
    v_state text := current_setting('pgrun.uuidv7_state', true);
    v_last_ms bigint;
    v_bytes bytea;
BEGIN
    IF v_state IS NOT NULL AND v_state <> '' THEN
        v_last_ms := split_part(v_state, ':', 1)::bigint;
        IF v_ms <= v_last_ms THEN
            v_ms := v_last_ms;
            v_seq := split_part(v_state, ':', 2)::integer + 1;
            IF v_seq > 4095 THEN
                v_ms := v_ms + 1;
                v_seq := 0;
            END IF;
        END IF;
    END IF;
    PERFORM set_config('pgrun.uuidv7_state', v_ms || ':' || v_seq, false);

    -- Bytes 8..15 of a v4 uuid already carry the RFC variant bits and 62 random bits.
    v_bytes := uuid_send(gen_random_uuid());
    v_bytes := overlay(
        v_bytes PLACING substring(int8send(v_ms) FROM 3 FOR 6) FROM 1 FOR 6
    );
    v_bytes := set_byte(v_bytes, 6, 112 | (v_seq >> 8));
    v_bytes := set_byte(v_bytes, 7, v_seq & 255);
    RETURN encode(v_bytes, 'hex')::uuid;
END;
$$;

COMMENT ON FUNCTION pgrun.uuidv7() IS
'A time-ordered UUID (version 7). Values strictly increase within a session; every pgrun id comes from here.';
