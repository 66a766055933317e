-- The reaper queues the jobs of expired leases again for a retry: like an enqueue it tells
-- their queues' idle workers (one notification per queue per call, with the earliest due
-- time when not ready now), so a worker that lost a lease does not leave its job to another
-- worker's poll. A job that dies wakes nobody.
BEGIN;
SELECT plan(4);

-- SETUP: two leases in queue mail and one in bulk expire at 00:00:30; a job with one attempt dies
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT job_id AS m1 FROM pgrun_test.running_job(p_job_type => 'test.mail') \gset
SELECT job_id AS m2 FROM pgrun_test.running_job(p_job_type => 'test.mail') \gset
SELECT job_id AS b1 FROM pgrun_test.running_job(p_job_type => 'test.bulk') \gset
SELECT job_id AS d1 FROM pgrun_test.running_job(p_job_type => 'test.gone', p_max_attempts => 1) \gset
UPDATE pgrun.jobs SET queue = 'mail' WHERE id IN (:'m1', :'m2');
UPDATE pgrun.jobs SET queue = 'bulk' WHERE id = :'b1';
UPDATE pgrun.jobs SET queue = 'gone' WHERE id = :'d1';
SELECT pgrun_test.freeze_time('2030-01-01 00:00:30+00');
SELECT pgrun_test.record_notifications();

-- TEST: three retried after 5 s, one dead; one notification per retried queue
SELECT results_eq(
    'SELECT outcome, count(*) FROM pgrun.reap_expired_leases(retry_delay => ''5 s'') GROUP BY outcome ORDER BY outcome',
    $$VALUES ('dead', 1::bigint), ('lease_expired', 3::bigint)$$,
    'three retried, one dead'
);
SELECT results_eq(
    'SELECT queues FROM notify_calls ORDER BY call_no',
    $$VALUES (ARRAY['bulk 1893456035000', 'mail 1893456035000'])$$,
    'one notify call: bulk and mail with their due time (Unix ms); not the dead job''s queue'
);

-- TEST: a pass that reaps nothing wakes nobody
TRUNCATE notify_calls;
SELECT is_empty('SELECT * FROM pgrun.reap_expired_leases()', 'nothing left to reap');
SELECT is_empty('SELECT 1 FROM notify_calls', 'and nobody woken');

SELECT * FROM finish();
ROLLBACK;
