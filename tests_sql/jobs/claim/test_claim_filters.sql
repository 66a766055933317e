-- queues and job_types narrow a claim; NULL means any, an empty array means none.
BEGIN;
SELECT plan(5);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT pgrun_test.make_job(p_job_type => 'mail.send', p_queue => 'mail') AS mail \gset
SELECT pgrun_test.make_job(p_job_type => 'report.build', p_queue => 'reports') AS report \gset
SELECT pgrun_test.make_job(p_job_type => 'mail.digest', p_queue => 'mail') AS digest \gset

-- TEST: empty arrays match nothing
SELECT is_empty(
    'SELECT job_id FROM pgrun.claim_jobs(worker_id => ''w'', max_jobs => 10, queues => ''{}'')',
    'an empty queues array claims nothing'
);
SELECT is_empty(
    'SELECT job_id FROM pgrun.claim_jobs(worker_id => ''w'', max_jobs => 10, job_types => ''{}'')',
    'an empty job_types array claims nothing'
);

-- TEST: queue and type filters combine
SELECT results_eq(
    'SELECT job_id FROM pgrun.claim_jobs(worker_id => ''w'', max_jobs => 10, queues => ARRAY[''mail''], '
    'job_types => ARRAY[''mail.digest'', ''report.build''])',
    ARRAY[:'digest'::uuid],
    'only a job in one of the queues and of one of the types'
);

-- TEST: a queue filter
SELECT results_eq(
    'SELECT job_id FROM pgrun.claim_jobs(worker_id => ''w'', max_jobs => 10, queues => ARRAY[''reports''])',
    ARRAY[:'report'::uuid],
    'only jobs of the named queue'
);

-- TEST: NULL filters take the rest
SELECT results_eq(
    'SELECT job_id FROM pgrun.claim_jobs(worker_id => ''w'', max_jobs => 10, queues => NULL, job_types => NULL)',
    ARRAY[:'mail'::uuid],
    'NULL filters mean any queue and any type'
);

SELECT * FROM finish();
ROLLBACK;
