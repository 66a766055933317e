-- The nesting rule for stored client JSON (pgrun._json_depth_ok): at most 100 arrays/objects
-- nested in one another, whatever their kind, however wide the value; NULL passes. The
-- size guard that skips the walk is exact (the smallest 101-deep document is 808 bytes), and
-- a compressed datum, which may be far smaller than its content, is always walked.
BEGIN;
SELECT plan(20);

-- SETUP: n nested arrays, the innermost empty: the smallest document n levels deep
CREATE FUNCTION pg_temp.arrays(n integer) RETURNS jsonb LANGUAGE sql AS
$$ SELECT (repeat('[', n) || repeat(']', n))::jsonb $$;
-- n nested objects {"k": {"k": ... 1}}
CREATE FUNCTION pg_temp.objects(n integer, p_key text DEFAULT 'k') RETURNS jsonb LANGUAGE sql AS
$$ SELECT (repeat(format('{%s:', to_jsonb(p_key)), n) || '1' || repeat('}', n))::jsonb $$;

-- TEST: the bound, by kind
SELECT ok(pgrun._json_depth_ok(pg_temp.arrays(100)), '100 nested arrays keep the rule');
SELECT ok(NOT pgrun._json_depth_ok(pg_temp.arrays(101)), '101 nested arrays, the innermost empty, do not');
SELECT ok(pgrun._json_depth_ok((repeat('[', 100) || '1' || repeat(']', 100))::jsonb), '100 arrays around a scalar keep it');
SELECT ok(NOT pgrun._json_depth_ok((repeat('[', 101) || '1' || repeat(']', 101))::jsonb), '101 around a scalar do not');
SELECT ok(pgrun._json_depth_ok(pg_temp.objects(100)), '100 nested objects keep the rule');
SELECT ok(NOT pgrun._json_depth_ok(pg_temp.objects(101)), '101 nested objects do not');
SELECT ok(pgrun._json_depth_ok((repeat('{"a": [', 50) || repeat(']}', 50))::jsonb), '100 alternating objects and arrays keep it');
SELECT ok(NOT pgrun._json_depth_ok((repeat('{"a": [', 50) || '{}' || repeat(']}', 50))::jsonb), '101 alternating do not');
SELECT ok(NOT pgrun._json_depth_ok(pg_temp.arrays(5000)), 'a 5000-deep document does not, and raises nothing');
SELECT ok(
    NOT pgrun._json_depth_ok(jsonb_build_object('wide', (SELECT jsonb_agg(g) FROM generate_series(1, 5000) AS g),
        'deep', pg_temp.arrays(100))),
    'depth counts from the top: a wide object holding 100 nested arrays is 101 deep'
);

-- TEST: ordinary values, wide ones and NULL
SELECT ok(pgrun._json_depth_ok(NULL), 'NULL passes');
SELECT ok(pgrun._json_depth_ok('{}'), '{} passes');
SELECT ok(pgrun._json_depth_ok('"s"'), 'a scalar passes');
SELECT ok(
    pgrun._json_depth_ok((SELECT jsonb_agg(jsonb_build_object('id', g, 'tags', jsonb_build_array(g, 'x', jsonb_build_object('y', g))))
        FROM generate_series(1, 20000) AS g)),
    'a wide document of 20000 items, 4 deep, passes'
);

-- TEST: the guard is exact: nothing smaller than 808 bytes can be 101 deep
SELECT is(pg_column_size(pg_temp.arrays(101)), 808, 'the smallest 101-deep document is 808 bytes');
SELECT cmp_ok(pg_column_size(pg_temp.objects(101, '')), '>', 808, 'nested objects take more room than arrays');
SELECT is(pg_column_size(pg_temp.arrays(100)), 800, 'and 100 nested arrays take 800');

-- TEST: a compressed datum is walked, however small it is
CREATE TEMP TABLE stored (v jsonb COMPRESSION pglz);
INSERT INTO stored VALUES (pg_temp.objects(101, repeat('k', 20)));
SELECT is(
    (SELECT pg_column_compression(v) IS NOT NULL AND pg_column_size(v) < 808 FROM stored),
    true,
    'a 101-deep document read from a table is stored compressed, in less than 808 bytes'
);
SELECT ok((SELECT NOT pgrun._json_depth_ok(v) FROM stored), 'it is still refused');
SELECT ok((SELECT pgrun._json_depth_ok(v) FROM (SELECT v -> repeat('k', 20) AS v FROM stored) AS x), 'its 100-deep member passes');

SELECT * FROM finish();
ROLLBACK;
