-- pgrun.uuidv7(): version and variant bits, embedded time, strict order within a session.
BEGIN;
SELECT plan(7);

-- SETUP
CREATE TEMP TABLE ids ON COMMIT DROP AS
SELECT n, pgrun.uuidv7() AS id FROM generate_series(1, 5000) AS n;

-- TEST: the version nibble is 7
SELECT is(
    (SELECT count(*) FROM ids WHERE substr(id::text, 15, 1) <> '7'),
    0::bigint,
    'every id has version 7'
);

-- TEST: the variant bits are 10 (RFC 9562)
SELECT is(
    (SELECT count(*) FROM ids WHERE substr(id::text, 20, 1) NOT IN ('8', '9', 'a', 'b')),
    0::bigint,
    'every id has the RFC variant'
);

-- TEST: the first 48 bits are the Unix time in milliseconds
SELECT ok(
    (SELECT abs(
        ('x' || lpad(replace(substr(id::text, 1, 13), '-', ''), 16, '0'))::bit(64)::bigint
        - floor(extract(EPOCH FROM clock_timestamp()) * 1000)::bigint
    ) < 60000 FROM ids WHERE n = 1),
    'the timestamp field is the current time in milliseconds'
);

-- TEST: values strictly increase in generation order, also within one millisecond
SELECT is(
    (SELECT count(*) FROM (
        SELECT id, lag(id) OVER (ORDER BY n) AS prev FROM ids
    ) AS s WHERE prev IS NOT NULL AND id <= prev),
    0::bigint,
    '5000 consecutive ids strictly increase'
);

SELECT is((SELECT count(DISTINCT id) FROM ids), 5000::bigint, 'no duplicates');

-- TEST: a clock that stands still or steps back keeps the order (counter borrows a millisecond)
CREATE TEMP TABLE future ON COMMIT DROP AS
SELECT floor(extract(EPOCH FROM clock_timestamp()) * 1000)::bigint + 3600000 AS ms;
SELECT set_config('pgrun.uuidv7_state', (SELECT ms FROM future) || ':4095', true);
CREATE TEMP TABLE after_step ON COMMIT DROP AS SELECT pgrun.uuidv7() AS id;
SELECT ok(
    (SELECT id FROM after_step) > (SELECT id FROM ids ORDER BY id DESC LIMIT 1),
    'after the clock steps back an hour, the next id is still greater'
);
SELECT is(
    (SELECT ('x' || lpad(replace(substr(id::text, 1, 13), '-', ''), 16, '0'))::bit(64)::bigint
            || '/' || ('x' || substr(id::text, 16, 3))::bit(12)::integer
     FROM after_step),
    ((SELECT ms FROM future) + 1) || '/0',
    'a counter overflow moves to the next millisecond with counter 0'
);

SELECT * FROM finish();
ROLLBACK;
