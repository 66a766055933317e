-- pgrun.now(): the database clock. The test suites install a clock that honours
-- pgrun.fake_now (pgrun.testing.install_test_clock); an install's own clock (migration
-- 0008) ignores every session setting.
BEGIN;
SELECT plan(12);

-- TEST: without fake_now it is the transaction start time
SELECT is(pgrun.now(), now(), 'pgrun.now() = now() when pgrun.fake_now is unset');

-- TEST: the test clock honours fake_now
SELECT set_config('pgrun.fake_now', '2030-01-02 03:04:05+00', true);
SELECT is(pgrun.now(), '2030-01-02 03:04:05+00'::timestamptz, 'the test clock honours pgrun.fake_now');

-- TEST: the fixture helpers move it
SELECT pgrun_test.advance_time(interval '90 seconds');
SELECT is(pgrun.now(), '2030-01-02 03:05:35+00'::timestamptz, 'advance_time moves the clock forward');

-- TEST: an empty setting means the real clock
SELECT set_config('pgrun.fake_now', '', true);
SELECT is(pgrun.now(), now(), 'an empty pgrun.fake_now falls back to now()');

-- TEST: a malformed setting is an error, not a silent real clock
SELECT set_config('pgrun.fake_now', 'not a time', true);
SELECT throws_ok('SELECT pgrun.now()', '22007', NULL, 'a malformed pgrun.fake_now raises invalid_datetime_format');
SELECT set_config('pgrun.fake_now', '', true);

-- From here on: the install's own clock, for the rest of this transaction.
SELECT pgrun_test.use_production_clock();

-- TEST: the production clock ignores fake_now, also values meant to break it
SELECT set_config('pgrun.fake_now', '2100-01-01 00:00:00+00', true);
SELECT is(pgrun.now(), now(), 'the production clock ignores pgrun.fake_now');
SELECT set_config('pgrun.fake_now', 'infinity', true);
SELECT is(pgrun.now(), now(), 'the production clock ignores pgrun.fake_now = infinity');
SELECT set_config('pgrun.fake_now', 'not a time', true);
SELECT lives_ok('SELECT pgrun.now()', 'a malformed pgrun.fake_now is not even read');

-- TEST: a session in the future cannot reap another worker's healthy lease
SELECT job_id AS healthy FROM pgrun_test.running_job() \gset
SELECT set_config('pgrun.fake_now', '2100-01-01 00:00:00+00', true);
SELECT is(
    (SELECT count(*) FROM pgrun.reap_expired_leases() AS r WHERE r.job_id = :'healthy'),
    0::bigint,
    'reap_expired_leases under fake_now = 2100 leaves a healthy lease alone'
);
SELECT is(
    (SELECT j.status FROM pgrun.jobs AS j WHERE j.id = :'healthy'),
    'running',
    'the healthy job is still running'
);

-- TEST: a session in the past cannot complete on a lease that has really expired
SELECT job_id AS expired FROM pgrun_test.running_job() \gset
UPDATE pgrun.jobs SET lease_expires_at = now() - interval '1 second' WHERE id = :'expired';
SELECT set_config('pgrun.fake_now', (now() - interval '1 hour')::text, true);
SELECT throws_ok(
    format('SELECT pgrun.complete_job(%L, %L)', :'expired', pgrun_test.token(:'expired')),
    'RQ004', 'job.lease_lost',
    'complete_job under a clock set back an hour still sees the expired lease'
);

-- TEST: a session in the future cannot claim a job delayed a day
SELECT pgrun_test.make_job(p_job_type => 'test.clock_delayed', p_run_at => now() + interval '1 day') AS delayed \gset
SELECT set_config('pgrun.fake_now', '2100-01-01 00:00:00+00', true);
SELECT is(
    (SELECT count(*) FROM pgrun.claim_jobs('worker-clock', 30, 10, NULL, ARRAY['test.clock_delayed'])),
    0::bigint,
    'claim_jobs under fake_now = 2100 does not claim a job delayed a day'
);

SELECT * FROM finish();
ROLLBACK;
