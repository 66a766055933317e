-- pgrun._cap_lock_timeout(cap) caps lock_timeout for the transaction: a stricter caller value
-- is kept, an unlimited or longer one is capped; it returns the caller's value to set back.
BEGIN;
SELECT plan(8);

-- TEST: the cap itself
SET LOCAL lock_timeout = '100ms';
SELECT is(pgrun._cap_lock_timeout('5s'), '100ms', 'returns the previous value');
SELECT is(current_setting('lock_timeout'), '100ms', 'a stricter value is kept');

SET LOCAL lock_timeout = 0;
SELECT is(pgrun._cap_lock_timeout('5s'), '0', 'returns 0 for unlimited');
SELECT is(current_setting('lock_timeout'), '5s', 'unlimited is capped');

SET LOCAL lock_timeout = '5s';
SELECT pgrun._cap_lock_timeout('5s');
SELECT is(current_setting('lock_timeout'), '5s', 'the cap itself is kept');

SET LOCAL lock_timeout = '1min';
SELECT pgrun._cap_lock_timeout('5s');
SELECT is(current_setting('lock_timeout'), '5s', 'a longer value is capped');

SET LOCAL lock_timeout = '250ms';
SELECT pgrun._cap_lock_timeout('200ms');
SELECT is(current_setting('lock_timeout'), '200ms', 'a cap under a second, as claim_jobs uses');

-- TEST: not for PUBLIC
SELECT ok(
    NOT has_function_privilege('public', 'pgrun._cap_lock_timeout(text)', 'EXECUTE'),
    'PUBLIC may not call it'
);

SELECT * FROM finish();
ROLLBACK;
