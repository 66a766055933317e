-- With jitter j the delay d = least(max, base * 2^(attempt-1)) is spread over
-- [d * (1 - j), d * (1 + j)]: never outside, and actually spread.
BEGIN;
SELECT plan(5);

-- SETUP: 300 jobs, base 100 s, jitter 0.5: the first retry waits 50..150 s
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT pgrun_test.make_job(p_job_type => 'jitter.job', p_backoff_base_seconds => 100, p_backoff_jitter => 0.5)
FROM generate_series(1, 300);
CREATE TEMP TABLE claimed ON COMMIT DROP AS
SELECT job_id, lease_token FROM pgrun.claim_jobs(worker_id => 'w', max_jobs => 1000);
CREATE TEMP TABLE retried ON COMMIT DROP AS
SELECT f.job_id, f.outcome, extract(EPOCH FROM f.run_at - pgrun.now()) AS delay
FROM pgrun.fail_jobs(
    (SELECT array_agg(job_id ORDER BY job_id) FROM claimed),
    (SELECT array_agg(lease_token ORDER BY job_id) FROM claimed)
) AS f;

-- TEST: all retried
SELECT is(
    (SELECT count(*) FROM retried WHERE outcome = 'retry_scheduled'),
    300::bigint,
    'all 300 failures are scheduled for a retry'
);

-- TEST: inside the documented bounds
SELECT is(
    (SELECT count(*) FROM retried WHERE delay < 50 OR delay > 150),
    0::bigint,
    'every delay lies within d * (1 - jitter) .. d * (1 + jitter) = 50..150 s'
);

-- TEST: actually spread on both sides of d
SELECT ok((SELECT min(delay) < 90 FROM retried), 'some delays are well below d');
SELECT ok((SELECT max(delay) > 110 FROM retried), 'some delays are well above d');
SELECT ok((SELECT count(DISTINCT delay) > 100 FROM retried), 'the delays are spread, not a handful of values');

SELECT * FROM finish();
ROLLBACK;
