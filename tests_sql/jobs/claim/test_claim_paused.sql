-- Paused job types are skipped by claim_jobs; resuming makes their jobs claimable again.
BEGIN;
SELECT plan(4);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT pgrun_test.make_job(p_job_type => 'paused.job', p_priority => 0) AS paused_job \gset
SELECT pgrun_test.make_job(p_job_type => 'free.job', p_priority => 50) AS free_job \gset
INSERT INTO pgrun.job_runtime_configs (job_type, paused) VALUES ('paused.job', true);

-- TEST: the paused type is skipped even though it is first in line
SELECT results_eq(
    'SELECT job_id FROM pgrun.claim_jobs(worker_id => ''w'', max_jobs => 10)',
    ARRAY[:'free_job'::uuid],
    'only the job of the unpaused type is claimed'
);
SELECT is(
    (SELECT status FROM pgrun.jobs WHERE id = :'paused_job'),
    'queued',
    'the paused type''s job stays queued'
);

-- TEST: naming the paused type does not get around the pause
SELECT is_empty(
    'SELECT job_id FROM pgrun.claim_jobs(worker_id => ''w'', job_types => ARRAY[''paused.job''])',
    'a job_types filter naming a paused type claims nothing'
);

-- TEST: resumed
UPDATE pgrun.job_runtime_configs SET paused = false WHERE job_type = 'paused.job';
SELECT results_eq(
    'SELECT job_id FROM pgrun.claim_jobs(worker_id => ''w'', max_jobs => 10)',
    ARRAY[:'paused_job'::uuid],
    'after resuming, its job is claimed'
);

SELECT * FROM finish();
ROLLBACK;
