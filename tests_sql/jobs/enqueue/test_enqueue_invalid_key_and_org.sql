-- An idempotency key must be 1..256 characters; the nil uuid is no organization id.
BEGIN;
SELECT plan(4);

-- TEST: keys
SELECT throws_ok($$SELECT * FROM pgrun.enqueue_job('a', idempotency_key => '')$$,
    'RQ003', 'job.invalid_idempotency_key', 'an empty key');
SELECT throws_ok(
    format('SELECT * FROM pgrun.enqueue_job(%L, idempotency_key => %L)', 'a', repeat('k', 257)),
    'RQ003', 'job.invalid_idempotency_key', 'a key of 257 characters'
);

-- TEST: organization
SELECT throws_ok(
    $$SELECT * FROM pgrun.enqueue_job('a', organization_id => '00000000-0000-0000-0000-000000000000')$$,
    'RQ003', 'job.invalid_organization', 'the nil uuid (it would share the no-organization key space)'
);

-- TEST: the longest key is fine
SELECT is(
    (SELECT created FROM pgrun.enqueue_job('a', idempotency_key => repeat('k', 256))),
    true,
    'a key of 256 characters is accepted'
);

SELECT * FROM finish();
ROLLBACK;
