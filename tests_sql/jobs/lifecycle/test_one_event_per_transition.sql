-- One job walked through every transition of the lease machine writes exactly one
-- job_events row per transition but the claims and the success (issue 15: the job row shows
-- a running claim, the event that ends the attempt records it; the job row records the
-- attempt that succeeded), and none for heartbeats, progress or log lines; the events chain
-- (each from_status is the previous to_status, or running after queued: a claim in between)
-- and name their attempt.
BEGIN;
SELECT plan(6);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT pgrun_test.make_job(p_max_attempts => 3) AS job \gset

-- claimed (no event); heartbeat, progress and a log line are not transitions
SELECT pgrun_test.claim_job(:'job', p_lease_seconds => 30) AS t \gset
SELECT count(*) FROM pgrun.heartbeat_jobs('worker-1', 30, ARRAY[:'job']::uuid[], ARRAY[:'t']::uuid[]);
SELECT pgrun.report_progress(:'job', :'t', '{"done": 1}');
SELECT pgrun.append_job_log(:'job', :'t', 'working');
-- retry_scheduled
SELECT * FROM pgrun.fail_job(:'job', :'t', 'flaky', retry_delay => '0');
-- claimed, continued
SELECT * FROM pgrun.continue_job(:'job', pgrun_test.claim_job(:'job'), 'step-2');
-- claimed, then the lease runs out: lease_expired
SELECT pgrun_test.claim_job(:'job', p_lease_seconds => 30);
SELECT pgrun_test.advance_time(interval '1 minute');
SELECT * FROM pgrun.reap_expired_leases(retry_delay => '0');
-- claimed, cancel_requested, cancelled (by the worker's failure report)
SELECT pgrun_test.claim_job(:'job') AS t \gset
SELECT pgrun.cancel_job(:'job');
SELECT * FROM pgrun.fail_job(:'job', :'t', 'boom');
-- requeued, claimed, dead
SELECT pgrun.requeue_job(:'job');
SELECT * FROM pgrun.fail_job(:'job', pgrun_test.claim_job(:'job'), retryable => false);
-- requeued, cancelled (while queued), requeued
SELECT pgrun.requeue_job(:'job');
SELECT pgrun.cancel_job(:'job');
SELECT pgrun.requeue_job(:'job');
-- claimed, succeeded
SELECT pgrun.complete_job(:'job', pgrun_test.claim_job(:'job'));

-- TEST: the exact sequence
SELECT is(
    pgrun_test.events_of(:'job'),
    'retry_scheduled,continued,lease_expired,cancel_requested,cancelled,'
    'requeued,dead,requeued,cancelled,requeued',
    'one event per transition but the claims and the success, none for heartbeat, progress or log'
);

-- TEST: the events chain
SELECT is_empty(
    format(
        'SELECT * FROM (SELECT from_status, coalesce(lag(to_status) OVER (ORDER BY id), ''queued'') AS previous '
        'FROM pgrun.job_events WHERE job_id = %L) AS e '
        'WHERE from_status IS DISTINCT FROM previous AND NOT (previous = ''queued'' AND from_status = ''running'')',
        :'job'
    ),
    'each event starts where the previous one ended, or at running after queued (an unrecorded claim)'
);
SELECT is(
    (SELECT to_status FROM pgrun.job_events WHERE job_id = :'job' ORDER BY id DESC LIMIT 1),
    'queued',
    'the last event ends where the last claim began (the success is on the job row)'
);

-- TEST: claims and attempts agree
SELECT is(
    (SELECT array_agg(attempt ORDER BY id) FROM pgrun.job_events WHERE job_id = :'job' AND outcome IS NOT NULL),
    ARRAY[1, 2, 3, 4, 5],
    'the five claims that did not succeed each have the event that ended them, numbered in order'
);
SELECT is(
    (SELECT array_agg(attempt || ':' || outcome ORDER BY attempt) FROM pgrun.job_attempts WHERE job_id = :'job'),
    ARRAY['1:failed', '2:continued', '3:lease_expired', '4:cancelled', '5:failed', '6:succeeded'],
    'and job_attempts reads them from those events and the sixth from the succeeded job''s row'
);
SELECT is(
    (SELECT count(*) FROM pgrun.job_attempts WHERE job_id = :'job' AND outcome IS NULL),
    0::bigint,
    'every attempt has ended'
);

SELECT * FROM finish();
ROLLBACK;
