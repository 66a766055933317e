-- requeue_job puts a finished job back in the queue: like an enqueue it wakes the idle
-- workers of its queue at once when it is ready now, and tells them when it comes due
-- otherwise ('<queue> <unix ms>'), so it does not wait for a worker's next poll.
BEGIN;
SELECT plan(3);

-- SETUP: two dead jobs in queue mail
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT job_id AS now_job, lease_token AS now_token FROM pgrun_test.running_job(p_max_attempts => 1) \gset
UPDATE pgrun.jobs SET queue = 'mail' WHERE id = :'now_job';
SELECT * FROM pgrun.fail_job(:'now_job', :'now_token', 'boom');
SELECT job_id AS later_job, lease_token AS later_token FROM pgrun_test.running_job(p_max_attempts => 1) \gset
UPDATE pgrun.jobs SET queue = 'mail' WHERE id = :'later_job';
SELECT * FROM pgrun.fail_job(:'later_job', :'later_token', 'boom');
SELECT pgrun_test.record_notifications();

-- TEST: ready now: the queue's name
SELECT pgrun.requeue_job(:'now_job');
SELECT results_eq('SELECT queues FROM notify_calls ORDER BY call_no', $$VALUES (ARRAY['mail'])$$,
    'a job requeued for now wakes its queue');

-- TEST: later: the queue and its due time in Unix milliseconds
TRUNCATE notify_calls;
SELECT pgrun.requeue_job(:'later_job', run_at => '2030-01-01 00:01:00+00');
SELECT results_eq('SELECT queues FROM notify_calls ORDER BY call_no', $$VALUES (ARRAY['mail 1893456060000'])$$,
    'a job requeued for later tells its queue when');

-- TEST: a refused requeue wakes nobody
TRUNCATE notify_calls;
SELECT pgrun_test.error_of(format('SELECT pgrun.requeue_job(%L)', :'now_job'));
SELECT is_empty('SELECT 1 FROM notify_calls', 'a queued job is not requeued, and nobody is woken');

SELECT * FROM finish();
ROLLBACK;
