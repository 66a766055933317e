-- Set-based UUIDv7 ids for bulk paths (enqueue_jobs).
--
-- pgrun.uuidv7() costs a PL/pgSQL call and a strong random draw per id; a
-- 10k-row insert cannot afford that. pgrun._uuidv7_series(p_count) reserves
-- `p_count` consecutive (millisecond, counter) slots in one step, using and
-- advancing the same session setting pgrun.uuidv7_state, so ids from both
-- generators interleave in strictly increasing order within a session. A
-- batch larger than the 4096 counter values of one millisecond simply runs a
-- few milliseconds ahead of the clock, which is what uuidv7() does on a
-- counter overflow too.
--
-- The 62 random bits come from random() (the backend's PRNG, seeded from a
-- strong source at backend start), not gen_random_uuid(): ids need to be
-- unique, not unguessable, and the strong draw costs ten times more.
--
-- Locks: none. Errors: none (a NULL or non-positive p_count yields no rows).

CREATE OR REPLACE FUNCTION pgrun._uuidv7_series(p_count integer)
RETURNS SETOF uuid
LANGUAGE plpgsql
VOLATILE
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    v_clock timestamptz := clock_timestamp();
    v_ms bigint := floor(extract(EPOCH FROM v_clock) * 1000)::bigint;
    v_seq integer := floor(
        (extract(MICROSECONDS FROM v_clock)::bigint % 1000) * 4.096
    )::integer;
    v_state text := current_setting('pgrun.uuidv7_state', true);
    -- a slot is ms * 4096 + counter, so consecutive slots are consecutive ids
    v_first bigint;
    v_last bigint;
BEGIN
    IF p_count IS NULL OR p_count < 1 THEN
        RETURN;
    END IF;
    v_first := v_ms * 4096 + v_seq;
    IF v_state IS NOT NULL AND v_state <> '' THEN
        v_first := greatest(
            v_first,
            split_part(v_state, ':', 1)::bigint * 4096 + split_part(v_state, ':', 2)::integer + 1
        );
    END IF;
    v_last := v_first + p_count - 1;
    PERFORM set_config('pgrun.uuidv7_state', (v_last / 4096) || ':' || (v_last % 4096), false);

    -- high 64 bits: 48-bit ms, version 7, 12-bit counter; low 64 bits: variant 10 + 62 random bits
    RETURN QUERY
    SELECT (
        lpad(to_hex((((v_first + g.i) / 4096) << 16) | 28672 | ((v_first + g.i) % 4096)), 16, '0')
        || to_hex(
            (-9223372036854775808)::bigint
            | (floor(random() * 2147483648)::bigint << 31)
            | floor(random() * 2147483648)::bigint
        )
    )::uuid
    FROM generate_series(0, p_count - 1) AS g (i);
END;
$$;

REVOKE EXECUTE ON FUNCTION pgrun._uuidv7_series(integer) FROM public;

COMMENT ON FUNCTION pgrun._uuidv7_series(integer) IS
'Private: p_count strictly increasing UUIDv7 ids, in order, continuing the session''s uuidv7() sequence.';
