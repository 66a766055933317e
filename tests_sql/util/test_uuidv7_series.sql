-- pgrun._uuidv7_series(count): count valid UUIDv7 ids in strictly increasing order, continuing
-- (and continued by) the session's pgrun.uuidv7() sequence.
BEGIN;
SELECT plan(7);

-- SETUP
CREATE TEMP TABLE before_ids ON COMMIT DROP AS SELECT pgrun.uuidv7() AS id;
CREATE TEMP TABLE series ON COMMIT DROP AS
SELECT s.n, s.id FROM pgrun._uuidv7_series(10000) WITH ORDINALITY AS s (id, n);
CREATE TEMP TABLE after_ids ON COMMIT DROP AS SELECT pgrun.uuidv7() AS id;

-- TEST: shape
SELECT is((SELECT count(DISTINCT id) FROM series), 10000::bigint, '10000 distinct ids');
SELECT is(
    (SELECT count(*) FROM series
     WHERE substr(id::text, 15, 1) <> '7' OR substr(id::text, 20, 1) NOT IN ('8', '9', 'a', 'b')),
    0::bigint,
    'every id has version 7 and the RFC variant'
);

-- TEST: order, also across the 4096 counter values of one millisecond
SELECT is(
    (SELECT count(*) FROM (SELECT id, lag(id) OVER (ORDER BY n) AS prev FROM series) AS s WHERE id <= prev),
    0::bigint,
    'ids strictly increase in the order they are returned'
);

-- TEST: interleaving with uuidv7()
SELECT ok(
    (SELECT id FROM before_ids) < (SELECT id FROM series ORDER BY id LIMIT 1)
    AND (SELECT id FROM series ORDER BY id DESC LIMIT 1) < (SELECT id FROM after_ids),
    'a uuidv7() before the series is smaller, one after it is larger'
);

-- TEST: the timestamp field is now
SELECT ok(
    (SELECT abs(
        ('x' || lpad(replace(substr(id::text, 1, 13), '-', ''), 16, '0'))::bit(64)::bigint
        - floor(extract(EPOCH FROM clock_timestamp()) * 1000)::bigint
    ) < 60000 FROM series WHERE n = 1),
    'the first id carries the current Unix time in milliseconds'
);

-- TEST: empty requests
SELECT is_empty('SELECT * FROM pgrun._uuidv7_series(0)', 'count 0 gives no ids');
SELECT is_empty('SELECT * FROM pgrun._uuidv7_series(NULL)', 'count NULL gives no ids');

SELECT * FROM finish();
ROLLBACK;
