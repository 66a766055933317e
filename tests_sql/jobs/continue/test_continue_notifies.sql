-- continue_job queues the job's next step: like an enqueue it tells its queue's idle workers
-- (the queue when the step is due now, with its due time in Unix ms when later), so another
-- idle worker starts the step rather than at its next poll. A pending cancel, which ends the
-- job, wakes nobody.
BEGIN;
SELECT plan(6);

-- SETUP: three running jobs in queue mail
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT job_id AS j1, lease_token AS t1 FROM pgrun_test.running_job(p_job_type => 'test.mail') \gset
SELECT job_id AS j2, lease_token AS t2 FROM pgrun_test.running_job(p_job_type => 'test.mail') \gset
SELECT job_id AS j3, lease_token AS t3 FROM pgrun_test.running_job(p_job_type => 'test.mail') \gset
UPDATE pgrun.jobs SET queue = 'mail' WHERE id IN (:'j1', :'j2', :'j3');
SELECT pgrun_test.record_notifications();

-- TEST: a step due now
SELECT is(
    (SELECT outcome FROM pgrun.continue_job(:'j1', :'t1', 'next')), 'continued', 'continued now'
);
SELECT results_eq('SELECT queues FROM notify_calls', $$VALUES (ARRAY['mail'])$$, 'its queue');

-- TEST: a step due in 7 s
TRUNCATE notify_calls;
SELECT is(
    (SELECT outcome FROM pgrun.continue_job(:'j2', :'t2', 'next', delay => '7 s')), 'continued', 'continued in 7 s'
);
SELECT results_eq(
    'SELECT queues FROM notify_calls', $$VALUES (ARRAY['mail 1893456007000'])$$, 'its queue and due time'
);

-- TEST: a pending cancel ends the job instead: nobody woken
TRUNCATE notify_calls;
SELECT pgrun.cancel_job(:'j3');
SELECT is(
    (SELECT outcome FROM pgrun.continue_job(:'j3', :'t3', 'next')), 'cancelled', 'the cancel wins'
);
SELECT is_empty('SELECT 1 FROM notify_calls', 'nobody woken');

SELECT * FROM finish();
ROLLBACK;
