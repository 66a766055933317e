-- purge_finished_jobs deletes finished jobs older than the cutoff with all their history,
-- and nothing else: not newer finished jobs, never queued or running ones.
BEGIN;
SELECT plan(8);

-- SETUP at day 0: one job of each terminal status (with attempts, events, a log line, a
-- dead letter), plus a queued and a running job that are just as old
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT job_id AS ok_job, lease_token AS ok_token FROM pgrun_test.running_job(p_lease_seconds => 86400) \gset
SELECT pgrun.append_job_log(:'ok_job', :'ok_token', 'hello');
SELECT pgrun.complete_job(:'ok_job', :'ok_token');
SELECT job_id AS dead_job, lease_token AS dead_token FROM pgrun_test.running_job() \gset
SELECT * FROM pgrun.fail_job(:'dead_job', :'dead_token', retryable => false);
SELECT pgrun_test.make_job() AS cancelled_job \gset
SELECT pgrun.cancel_job(:'cancelled_job');
SELECT pgrun_test.make_job(p_run_at => '2030-06-01 00:00:00+00') AS queued_job \gset
SELECT job_id AS running_job FROM pgrun_test.running_job(p_lease_seconds => 86400) \gset
-- day 6: a fresh finished job (dead: its ending event is a row of its own)
SELECT pgrun_test.freeze_time('2030-01-07 00:00:00+00');
SELECT job_id AS fresh_job, lease_token AS fresh_token FROM pgrun_test.running_job() \gset
SELECT * FROM pgrun.fail_job(:'fresh_job', :'fresh_token', retryable => false);
-- day 8: purge what finished more than a week ago
SELECT pgrun_test.freeze_time('2030-01-08 00:00:01+00');

-- TEST: the count
SELECT is(pgrun.purge_finished_jobs(interval '7 days'), 3::bigint, 'three finished jobs are older than a week');

-- TEST: the rows
SELECT set_eq(
    'SELECT id FROM pgrun.jobs',
    ARRAY[:'queued_job'::uuid, :'running_job'::uuid, :'fresh_job'::uuid],
    'the old queued and running jobs and the fresh finished job remain'
);

-- TEST: the history went with them
SELECT is(
    (SELECT count(*) FROM pgrun.job_attempts WHERE job_id IN (:'ok_job', :'dead_job', :'cancelled_job')),
    0::bigint, 'their attempts are gone'
);
SELECT is(
    (SELECT count(*) FROM pgrun.job_events WHERE job_id IN (:'ok_job', :'dead_job', :'cancelled_job')),
    0::bigint, 'their events are gone'
);
SELECT is(
    (SELECT count(*) FROM pgrun.job_logs WHERE job_id IN (:'ok_job', :'dead_job', :'cancelled_job'))
        + (SELECT count(*) FROM pgrun.job_dead_letters WHERE job_id IN (:'ok_job', :'dead_job', :'cancelled_job')),
    0::bigint, 'their logs and dead letters are gone'
);
SELECT is(
    (SELECT count(*) FROM pgrun.job_log_counts WHERE job_id = :'ok_job'),
    0::bigint, 'and so are their log line counts'
);
SELECT results_eq(
    format('SELECT job_id, event FROM pgrun.job_events WHERE job_id IN (%L, %L)', :'running_job', :'fresh_job'),
    format('VALUES (%L::uuid, ''dead''::text)', :'fresh_job'),
    'the remaining jobs keep their events (the fresh job''s dead; the running one has none: claims write none)'
);

-- TEST: nothing more to do
SELECT is(pgrun.purge_finished_jobs(interval '7 days'), 0::bigint, 'a second purge finds nothing');

SELECT * FROM finish();
ROLLBACK;
