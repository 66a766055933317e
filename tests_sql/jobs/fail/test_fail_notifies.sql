-- fail_jobs queues retried jobs again: like an enqueue it tells their queues' idle workers
-- (one notification per queue per call, with the earliest due time when not ready now, through
-- the one notify helper), so another idle worker starts a retry when it comes due rather than at
-- its next poll. A job that dies, or a lost lease, wakes nobody.
BEGIN;
SELECT plan(6);

-- SETUP: two running jobs in queue mail, one in bulk, one with a single attempt in gone
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT job_id AS m1, lease_token AS m1_token FROM pgrun_test.running_job(p_job_type => 'test.mail') \gset
SELECT job_id AS m2, lease_token AS m2_token FROM pgrun_test.running_job(p_job_type => 'test.mail') \gset
SELECT job_id AS b1, lease_token AS b1_token FROM pgrun_test.running_job(p_job_type => 'test.bulk') \gset
SELECT job_id AS d1, lease_token AS d1_token FROM pgrun_test.running_job(p_job_type => 'test.gone', p_max_attempts => 1) \gset
UPDATE pgrun.jobs SET queue = 'mail' WHERE id IN (:'m1', :'m2');
UPDATE pgrun.jobs SET queue = 'bulk' WHERE id = :'b1';
UPDATE pgrun.jobs SET queue = 'gone' WHERE id = :'d1';
SELECT pgrun_test.record_notifications();

-- TEST: mail's retries in 20 s and 10 s, bulk's at once, gone's job dead
SELECT results_eq(
    format(
        'SELECT outcome FROM pgrun.fail_jobs(ARRAY[%L, %L, %L, %L]::uuid[], ARRAY[%L, %L, %L, %L]::uuid[], '
        'retry_delays => ARRAY[''20 s'', ''10 s'', ''0 s'', ''0 s'']::interval[])',
        :'m1', :'m2', :'b1', :'d1', :'m1_token', :'m2_token', :'b1_token', :'d1_token'
    ),
    $$VALUES ('retry_scheduled'), ('retry_scheduled'), ('retry_scheduled'), ('dead')$$,
    'three retried, one dead'
);
SELECT results_eq(
    'SELECT queues FROM notify_calls ORDER BY call_no',
    $$VALUES (ARRAY['bulk', 'mail 1893456010000'])$$,
    'one notify call: bulk (ready now), mail with its earliest due time (Unix ms); not the dead job''s queue'
);

-- TEST: one retry makes its one payload
TRUNCATE notify_calls;
SELECT job_id AS s1, lease_token AS s1_token FROM pgrun_test.running_job(p_job_type => 'test.mail') \gset
SELECT is(
    (SELECT outcome FROM pgrun.fail_jobs(ARRAY[:'s1']::uuid[], ARRAY[:'s1_token']::uuid[],
        retry_delays => ARRAY['5 s']::interval[])),
    'retry_scheduled',
    'one job retried in 5 s'
);
SELECT results_eq(
    'SELECT queues FROM notify_calls ORDER BY call_no',
    $$VALUES (ARRAY['default 1893456005000'])$$,
    'its queue and due time'
);

-- TEST: nothing retried, nobody woken
TRUNCATE notify_calls;
SELECT is(
    (SELECT outcome FROM pgrun.fail_jobs(ARRAY[:'s1']::uuid[], ARRAY[:'s1_token']::uuid[])),
    'lease_lost',
    'the same lease again is lost'
);
SELECT is_empty('SELECT 1 FROM notify_calls', 'and wakes nobody');

SELECT * FROM finish();
ROLLBACK;
