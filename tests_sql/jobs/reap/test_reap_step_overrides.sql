-- The reaper honours the step's overrides (continue_job's max_attempts and retry_delay):
-- the step's max_attempts replaces the job's, the step's retry_delay replaces both the
-- type's backoff and the reaper's own retry_delay argument.
BEGIN;
SELECT plan(4);

-- SETUP: two jobs of five attempts at a step with overrides, both leases expired
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT pgrun_test.make_job(p_max_attempts => 5) AS a \gset
SELECT pgrun_test.make_job(p_max_attempts => 5) AS b \gset
SELECT * FROM pgrun.continue_job(:'a', pgrun_test.claim_job(:'a'), 's', max_attempts => 1);
SELECT * FROM pgrun.continue_job(:'b', pgrun_test.claim_job(:'b'), 's', retry_delay => interval '1 hour');
SELECT pgrun_test.claim_job(:'a', p_lease_seconds => 30);
SELECT pgrun_test.claim_job(:'b', p_lease_seconds => 30);
SELECT pgrun_test.freeze_time('2030-01-01 00:01:00+00');

-- TEST
SELECT results_eq(
    'SELECT * FROM pgrun.reap_expired_leases()',
    format(
        'VALUES (%L::uuid, ''dead'', NULL::timestamptz), (%L, ''lease_expired'', ''2030-01-01 01:01:00+00'')',
        least(:'a'::uuid, :'b'::uuid), greatest(:'a'::uuid, :'b'::uuid)
    ),
    'a dies after its step''s single attempt; b is retried the step''s hour from now'
);
SELECT results_eq(
    format('SELECT reason FROM pgrun.job_dead_letters WHERE job_id = %L', :'a'),
    $$VALUES ('lease_expired')$$,
    'a''s dead letter says lease_expired'
);

-- TEST: the step's delay also wins over the reaper's call-wide retry_delay
SELECT pgrun_test.freeze_time('2030-01-01 01:01:00+00');
SELECT pgrun_test.claim_job(:'b', p_lease_seconds => 30);
SELECT pgrun_test.freeze_time('2030-01-01 01:02:00+00');
SELECT results_eq(
    'SELECT * FROM pgrun.reap_expired_leases(retry_delay => interval ''2 seconds'')',
    format('VALUES (%L::uuid, ''lease_expired'', ''2030-01-01 02:02:00+00''::timestamptz)', :'b'),
    'b is retried the step''s hour from now, not the reaper''s 2 s'
);
SELECT results_eq(
    format('SELECT attempt, status FROM pgrun.jobs WHERE id = %L', :'b'),
    $$VALUES (2, 'queued')$$,
    'b has used two of the job''s five attempts'
);

SELECT * FROM finish();
ROLLBACK;
