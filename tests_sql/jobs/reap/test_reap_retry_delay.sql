-- The reaper's retry_delay overrides each job's backoff.
BEGIN;
SELECT plan(1);

-- SETUP: a policy that would wait 100 s +/- 50 %
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT pgrun_test.make_job(p_backoff_base_seconds => 100, p_backoff_jitter => 0.5) AS job \gset
SELECT pgrun_test.claim_job(:'job', p_lease_seconds => 30);
SELECT pgrun_test.freeze_time('2030-01-01 00:01:00+00');

-- TEST
SELECT results_eq(
    'SELECT * FROM pgrun.reap_expired_leases(retry_delay => interval ''2 seconds'')',
    format('VALUES (%L::uuid, ''lease_expired'', ''2030-01-01 00:01:02+00''::timestamptz)', :'job'),
    'the job is retried exactly retry_delay from now'
);

SELECT * FROM finish();
ROLLBACK;
