-- pgrun._uuidv7_reserve(count) and pgrun._uuidv7_at(slot): the two steps of a tree writer's
-- ids (enqueue_job takes one, _uuidv7_series many). A slot is ms * 4096 + counter; reserving
-- advances the session's UUIDv7 sequence, which uuidv7() and _uuidv7_series continue.
BEGIN;
SELECT plan(9);

-- SETUP
CREATE TEMP TABLE steps ON COMMIT DROP AS
SELECT pgrun.uuidv7() AS before_id, pgrun._uuidv7_reserve(3) AS first_slot;
CREATE TEMP TABLE state_after ON COMMIT DROP AS SELECT current_setting('pgrun.uuidv7_state') AS s;
CREATE TEMP TABLE after_ids ON COMMIT DROP AS SELECT pgrun.uuidv7() AS id;
CREATE TEMP TABLE reserved ON COMMIT DROP AS
SELECT g.i, pgrun._uuidv7_at(s.first_slot + g.i) AS id FROM steps AS s, generate_series(0, 2) AS g (i);

-- TEST: an id carries its slot: 48-bit ms, version 7, 12-bit counter, then the RFC variant
SELECT is(
    pgrun._uuidv7_at(7 * 4096 + 4095)::text ~ '^00000000-0007-7fff-[89ab][0-9a-f]{3}-[0-9a-f]{12}$',
    TRUE,
    'slot 7 * 4096 + 4095: ms 7, counter 4095'
);
SELECT is(
    (SELECT count(DISTINCT pgrun._uuidv7_at(42)) FROM generate_series(1, 100)),
    100::bigint,
    'the 62 random bits differ from call to call'
);
SELECT is(
    (SELECT count(*) FROM reserved
     WHERE substr(id::text, 15, 1) <> '7' OR substr(id::text, 20, 1) NOT IN ('8', '9', 'a', 'b')),
    0::bigint,
    'every id of the reserved slots has version 7 and the RFC variant'
);

-- TEST: reserving continues and advances the session's sequence
SELECT ok(
    (SELECT before_id FROM steps) < (SELECT id FROM reserved WHERE i = 0),
    'the first reserved slot comes after the uuidv7() before it'
);
SELECT ok(
    (SELECT id FROM reserved WHERE i = 0) < (SELECT id FROM reserved WHERE i = 1)
    AND (SELECT id FROM reserved WHERE i = 1) < (SELECT id FROM reserved WHERE i = 2),
    'consecutive slots give increasing ids'
);
SELECT ok(
    (SELECT id FROM reserved WHERE i = 2) < (SELECT id FROM after_ids),
    'a uuidv7() after the reservation comes after its last slot'
);
SELECT is(
    (SELECT split_part(s, ':', 1)::bigint * 4096 + split_part(s, ':', 2)::bigint FROM state_after),
    (SELECT first_slot + 2 FROM steps),
    'the session state holds the last reserved slot'
);

-- TEST: nothing to reserve
SELECT is(pgrun._uuidv7_reserve(0), NULL, 'count 0 reserves nothing');
SELECT is(
    (SELECT current_setting('pgrun.uuidv7_state')
     FROM (SELECT pgrun._uuidv7_reserve(NULL)) AS r),
    (SELECT current_setting('pgrun.uuidv7_state')),
    'count NULL reserves nothing and leaves the sequence where it was'
);

SELECT * FROM finish();
ROLLBACK;
