-- A call of set_job_runtime_config that leaves a job type claimable (resumed, a cap raised or
-- cleared) wakes the idle workers of every queue holding queued jobs of that type, as an
-- enqueue does: resuming a paused type starts its jobs at once, not at the workers' next
-- poll. Pausing wakes nobody, nor does a type without queued jobs.
BEGIN;
SELECT plan(4);

-- SETUP: queued jobs of type t.switch in two queues (one delayed), a running one in a third,
-- and the type paused
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT pgrun_test.make_job(p_job_type => 't.switch', p_queue => 'mail') FROM generate_series(1, 3);
SELECT pgrun_test.make_job(p_job_type => 't.switch', p_queue => 'bulk', p_run_at => '2030-01-01 00:05:00+00');
SELECT pgrun_test.running_job(p_job_type => 't.switch');
UPDATE pgrun.jobs SET queue = 'busy' WHERE status = 'running';
SELECT pgrun_test.make_job(p_job_type => 't.other', p_queue => 'elsewhere');
SELECT pgrun.set_job_runtime_config('t.switch', paused => true);
SELECT pgrun_test.record_notifications();

-- TEST: pausing again wakes nobody
SELECT pgrun.set_job_runtime_config('t.switch', paused => true);
SELECT is_empty('SELECT 1 FROM notify_calls', 'a paused type wakes nobody');

-- TEST: resuming wakes each queue holding its queued jobs, once
SELECT pgrun.set_job_runtime_config('t.switch', paused => false);
SELECT results_eq(
    'SELECT queues FROM notify_calls ORDER BY call_no',
    $$VALUES (ARRAY['bulk', 'mail'])$$,
    'one notify call: the queues of its queued jobs (not the running job''s, not another type''s)'
);

-- TEST: a cap set, raised or cleared wakes them too
TRUNCATE notify_calls;
SELECT pgrun.set_job_runtime_config('t.switch', max_concurrency => 5);
SELECT results_eq('SELECT queues FROM notify_calls ORDER BY call_no', $$VALUES (ARRAY['bulk', 'mail'])$$,
    'a cap changed on a claimable type wakes its queues');

-- TEST: a type without queued jobs wakes nobody
TRUNCATE notify_calls;
SELECT pgrun.set_job_runtime_config('t.idle', paused => false);
SELECT is_empty('SELECT 1 FROM notify_calls', 'no queued jobs of the type: no notification');

SELECT * FROM finish();
ROLLBACK;
