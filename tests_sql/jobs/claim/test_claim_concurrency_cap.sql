-- A job type's max_concurrency caps its running jobs: a batch takes only the room left,
-- a full type is skipped, and finishing a job frees one slot.
BEGIN;
SELECT plan(6);

-- SETUP: five capped jobs ahead of three free ones
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT pgrun_test.make_job(p_job_type => 'capped.job', p_priority => 1) FROM generate_series(1, 5);
SELECT pgrun_test.make_job(p_job_type => 'free.job', p_priority => 2) FROM generate_series(1, 3);
INSERT INTO pgrun.job_runtime_configs (job_type, max_concurrency) VALUES ('capped.job', 2);

CREATE TEMP TABLE first_batch ON COMMIT DROP AS
SELECT * FROM pgrun.claim_jobs(worker_id => 'w', max_jobs => 10);

-- TEST: the batch takes two capped jobs (the cap) and the free ones behind them
SELECT results_eq(
    'SELECT job_type, count(*) FROM first_batch GROUP BY job_type ORDER BY job_type',
    $$VALUES ('capped.job', 2::bigint), ('free.job', 3::bigint)$$,
    'two capped jobs (the cap) and all three free jobs'
);

-- TEST: the surplus capped jobs stay queued
SELECT is(
    (SELECT count(*) FROM pgrun.jobs WHERE job_type = 'capped.job' AND status = 'queued'),
    3::bigint,
    'the other three capped jobs are still queued'
);

-- TEST: a full type is skipped entirely
SELECT is_empty(
    'SELECT job_id FROM pgrun.claim_jobs(worker_id => ''w'', max_jobs => 10)',
    'with the cap reached nothing more of the type is claimed'
);

-- TEST: finishing one frees exactly one slot
SELECT pgrun.complete_job(job_id, lease_token)
FROM first_batch WHERE job_type = 'capped.job' ORDER BY job_id LIMIT 1;
SELECT is(
    (SELECT count(*) FROM pgrun.claim_jobs(worker_id => 'w', max_jobs => 10)),
    1::bigint,
    'one job finished, one more is claimed'
);
SELECT is(
    (SELECT count(*) FROM pgrun.jobs WHERE job_type = 'capped.job' AND status = 'running'),
    2::bigint,
    'running jobs of the type never exceed the cap'
);

-- TEST: raising the cap lets more through
UPDATE pgrun.job_runtime_configs SET max_concurrency = 10 WHERE job_type = 'capped.job';
SELECT is(
    (SELECT count(*) FROM pgrun.claim_jobs(worker_id => 'w', max_jobs => 10)),
    2::bigint,
    'with a higher cap the remaining two are claimed'
);

SELECT * FROM finish();
ROLLBACK;
