-- pgrun.now(): the transaction clock, or pgrun.fake_now when set.
BEGIN;
SELECT plan(5);

-- TEST: without fake_now it is the transaction start time
SELECT is(pgrun.now(), now(), 'pgrun.now() = now() when pgrun.fake_now is unset');

-- TEST: fake_now wins when set
SELECT set_config('pgrun.fake_now', '2030-01-02 03:04:05+00', true);
SELECT is(pgrun.now(), '2030-01-02 03:04:05+00'::timestamptz, 'pgrun.now() honours pgrun.fake_now');

-- TEST: the fixture helpers move it
SELECT pgrun_test.advance_time(interval '90 seconds');
SELECT is(pgrun.now(), '2030-01-02 03:05:35+00'::timestamptz, 'advance_time moves the clock forward');

-- TEST: an empty setting means the real clock
SELECT set_config('pgrun.fake_now', '', true);
SELECT is(pgrun.now(), now(), 'an empty pgrun.fake_now falls back to now()');

-- TEST: a malformed setting is an error, not a silent real clock
SELECT set_config('pgrun.fake_now', 'not a time', true);
SELECT throws_ok('SELECT pgrun.now()', '22007', NULL, 'a malformed pgrun.fake_now raises invalid_datetime_format');

SELECT * FROM finish();
ROLLBACK;
