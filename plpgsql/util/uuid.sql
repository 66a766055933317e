-- UUIDv7 ids for the tree's writers: one (enqueue_job) or many (enqueue_jobs, the workflow
-- release) at a time, continuing the session's pgrun.uuidv7() sequence.
--
-- pgrun.uuidv7() (sql/0001: table defaults need it) costs a PL/pgSQL call with a SET clause
-- and a strong random draw per id. Here an id is a slot, ms * 4096 + counter, in three parts:
-- pgrun._uuidv7_reserve(p_count) reserves p_count consecutive slots in one step, using and
-- advancing the same session setting pgrun.uuidv7_state, so ids from every generator
-- interleave in strictly increasing order within a session; pgrun._uuidv7_at(slot) makes a
-- slot's id (inlined into the statement or expression that asks: no call at run time);
-- pgrun._uuidv7_series(p_count) is both for a batch. A batch larger than the 4096 counter
-- values of one millisecond simply runs a few milliseconds ahead of the clock, which is what
-- uuidv7() does on a counter overflow too.
--
-- The 62 random bits come from random() (the backend's PRNG, seeded from a strong source at
-- backend start), not gen_random_uuid(): ids need to be unique, not unguessable (lease tokens,
-- which fence workers, stay gen_random_uuid()), and the strong draw costs ten times more.
--
-- Locks: none. Errors: none (a NULL or non-positive p_count reserves nothing).

-- No SET clause (a SET clause costs a single enqueue's id more than its arithmetic): every
-- name is schema-qualified, as in the other private helpers.
CREATE OR REPLACE FUNCTION pgrun._uuidv7_reserve(p_count integer)
RETURNS bigint
LANGUAGE plpgsql
VOLATILE
AS $$
DECLARE
    v_clock timestamptz := pg_catalog.clock_timestamp();
    v_state text := pg_catalog.current_setting('pgrun.uuidv7_state', true);
    v_first bigint;
    v_last bigint;
BEGIN
    IF p_count IS NULL OR p_count < 1 THEN
        RETURN NULL;
    END IF;
    -- now as a slot: the Unix time in ms, the sub-millisecond part spread over the counter
    v_first := pg_catalog.floor(extract(EPOCH FROM v_clock) * 1000)::bigint * 4096
        + pg_catalog.floor(
            (extract(MICROSECONDS FROM v_clock)::bigint % 1000) * 4.096
        )::bigint;
    IF v_state IS NOT NULL AND v_state <> '' THEN
        v_first := greatest(
            v_first,
            pg_catalog.split_part(v_state, ':', 1)::bigint * 4096
                + pg_catalog.split_part(v_state, ':', 2)::integer + 1
        );
    END IF;
    v_last := v_first + p_count - 1;
    PERFORM pg_catalog.set_config('pgrun.uuidv7_state', (v_last / 4096) || ':' || (v_last % 4096), false);
    RETURN v_first;
END;
$$;

REVOKE EXECUTE ON FUNCTION pgrun._uuidv7_reserve(integer) FROM public;

COMMENT ON FUNCTION pgrun._uuidv7_reserve(integer) IS
'Private: reserve p_count consecutive UUIDv7 slots (ms * 4096 + counter) of the session''s sequence; returns '
'the first (NULL for none).';

-- high 64 bits: 48-bit ms, version 7, 12-bit counter; low 64 bits: variant 10 + 62 random bits
CREATE OR REPLACE FUNCTION pgrun._uuidv7_at(p_slot bigint)
RETURNS uuid
LANGUAGE sql
VOLATILE
AS $$
    SELECT (
        pg_catalog.lpad(pg_catalog.to_hex(
            ((p_slot OPERATOR(pg_catalog./) 4096) OPERATOR(pg_catalog.<<) 16)
            OPERATOR(pg_catalog.|) 28672
            OPERATOR(pg_catalog.|) (p_slot OPERATOR(pg_catalog.%) 4096)
        ), 16, '0')
        OPERATOR(pg_catalog.||) pg_catalog.to_hex(
            (-9223372036854775808)::pg_catalog.int8
            OPERATOR(pg_catalog.|) (
                pg_catalog.floor(pg_catalog.random() OPERATOR(pg_catalog.*) 2147483648)::pg_catalog.int8
                OPERATOR(pg_catalog.<<) 31
            )
            OPERATOR(pg_catalog.|) pg_catalog.floor(pg_catalog.random() OPERATOR(pg_catalog.*) 2147483648)::pg_catalog.int8
        )
    )::pg_catalog.uuid
$$;

REVOKE EXECUTE ON FUNCTION pgrun._uuidv7_at(bigint) FROM public;

COMMENT ON FUNCTION pgrun._uuidv7_at(bigint) IS
'Private: the UUIDv7 id of a slot reserved by pgrun._uuidv7_reserve (62 random bits from random()).';

CREATE OR REPLACE FUNCTION pgrun._uuidv7_series(p_count integer)
RETURNS SETOF uuid
LANGUAGE plpgsql
VOLATILE
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    v_first bigint := pgrun._uuidv7_reserve(p_count);
BEGIN
    RETURN QUERY
    SELECT pgrun._uuidv7_at(v_first + g.i)
    FROM generate_series(0, p_count - 1) AS g (i)
    WHERE v_first IS NOT NULL;
END;
$$;

REVOKE EXECUTE ON FUNCTION pgrun._uuidv7_series(integer) FROM public;

COMMENT ON FUNCTION pgrun._uuidv7_series(integer) IS
'Private: p_count strictly increasing UUIDv7 ids, in order, continuing the session''s uuidv7() sequence.';
