-- release_jobs puts claimed jobs back in the queue ready now: like an enqueue it wakes the
-- idle workers of their queues (one notification per queue per call, through the one
-- notify helper), so a stopping worker's handed-back jobs start elsewhere at once, not at
-- another worker's next poll. A job that ends cancelled, or a lost lease, wakes nobody.
BEGIN;
SELECT plan(4);

-- SETUP: three jobs over two queues, claimed; a fourth with a cancel request
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT job_id AS m1, lease_token AS m1_token FROM pgrun_test.running_job(p_job_type => 'test.mail') \gset
UPDATE pgrun.jobs SET queue = 'mail' WHERE id = :'m1';
SELECT job_id AS m2, lease_token AS m2_token FROM pgrun_test.running_job(p_job_type => 'test.mail') \gset
UPDATE pgrun.jobs SET queue = 'mail' WHERE id = :'m2';
SELECT job_id AS b1, lease_token AS b1_token FROM pgrun_test.running_job(p_job_type => 'test.bulk') \gset
UPDATE pgrun.jobs SET queue = 'bulk' WHERE id = :'b1';
SELECT job_id AS c1, lease_token AS c1_token FROM pgrun_test.running_job(p_job_type => 'test.gone') \gset
UPDATE pgrun.jobs SET queue = 'gone' WHERE id = :'c1';
SELECT pgrun.cancel_job(:'c1');
SELECT pgrun_test.record_notifications();

-- TEST: one notification per queue that got a job back, the cancelled job's queue not among them
SELECT results_eq(
    format(
        'SELECT outcome FROM pgrun.release_jobs(ARRAY[%L, %L, %L, %L]::uuid[], ARRAY[%L, %L, %L, %L]::uuid[])',
        :'m1', :'b1', :'c1', :'m2', :'m1_token', :'b1_token', :'c1_token', :'m2_token'
    ),
    $$VALUES ('released'), ('released'), ('cancelled'), ('released')$$,
    'three released, one cancelled'
);
SELECT results_eq(
    'SELECT queues FROM notify_calls ORDER BY call_no',
    $$VALUES (ARRAY['bulk', 'mail'])$$,
    'one notify call: the queues of the released jobs, each once'
);

-- TEST: a call that releases nothing notifies nothing
TRUNCATE notify_calls;
SELECT results_eq(
    format('SELECT outcome FROM pgrun.release_jobs(ARRAY[%L]::uuid[], ARRAY[%L]::uuid[])', :'m1', :'m1_token'),
    $$VALUES ('lease_lost')$$,
    'a second release of the same claim is lease_lost'
);
SELECT is_empty('SELECT 1 FROM notify_calls', 'and wakes nobody');

SELECT * FROM finish();
ROLLBACK;
