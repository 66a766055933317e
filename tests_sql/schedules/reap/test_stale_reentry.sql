-- A schedule that forbids stale re-entry: when its job's lease expires the reaper kills the
-- job instead of queueing it again, and marks its tick failed. Other schedules' jobs are
-- retried like any job.
BEGIN;
SELECT plan(11);

-- SETUP: one job from each schedule, claimed with a 10 s lease
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT pgrun_test.make_schedule('plain', p_job_type => 'test.plain') AS p \gset
SELECT pgrun_test.make_schedule('once', p_job_type => 'test.once', p_forbid_stale_reentry => TRUE) AS o \gset
SELECT pgrun_test.freeze_time('2030-01-01 00:05:00+00');
SELECT pgrun_test.fire(:'p', '{2030-01-01 00:05:00+00}');
SELECT pgrun_test.fire(:'o', '{2030-01-01 00:05:00+00}');
SELECT id AS pj FROM pgrun.jobs WHERE schedule_id = :'p' \gset
SELECT id AS oj FROM pgrun.jobs WHERE schedule_id = :'o' \gset
SELECT pgrun_test.claim_job(:'pj', p_lease_seconds => 10);
SELECT pgrun_test.claim_job(:'oj', p_lease_seconds => 10);

-- TEST: nothing expired yet
SELECT is_empty($$SELECT * FROM pgrun.reap_expired_leases()$$, 'live leases are not reaped');

-- TEST: both leases expire
SELECT pgrun_test.freeze_time('2030-01-01 00:05:20+00');
SELECT set_eq($$SELECT job_id::text || ':' || outcome FROM pgrun.reap_expired_leases()$$,
    ARRAY[:'pj' || ':lease_expired', :'oj' || ':dead'],
    'the plain job is retried, the forbidding schedule''s job dies');
SELECT is((SELECT status FROM pgrun.jobs WHERE id = :'oj'), 'dead', 'dead');
SELECT is((SELECT reason FROM pgrun.job_dead_letters WHERE job_id = :'oj'), 'lease_expired',
    'with a dead letter, reason lease_expired');
SELECT is((SELECT (status, error_code)::text FROM pgrun.schedule_ticks WHERE job_id = :'oj'),
    '(failed,stale_reentry_forbidden)', 'its tick is marked failed');
SELECT is((SELECT (status, error_code)::text FROM pgrun.schedule_ticks WHERE job_id = :'pj'),
    '(fired,)', 'the plain tick stays fired');
SELECT is((SELECT status FROM pgrun.jobs WHERE id = :'pj'), 'queued', 'the plain job runs again');
SELECT is((SELECT count(*) FROM pgrun.job_events WHERE job_id = :'oj' AND event = 'dead'), 1::bigint,
    'one dead event');

-- TEST: the rule acts on the re-entry, never on the job's declared settings
SELECT is((SELECT max_attempts FROM pgrun.jobs WHERE id = :'oj'),
    (SELECT max_attempts FROM pgrun.jobs WHERE id = :'pj'),
    'the dead job keeps the max_attempts it was made with');
SELECT pgrun.requeue_job(:'oj');
SELECT pgrun_test.claim_job(:'oj', p_lease_seconds => 10);
SELECT pgrun.fail_job(:'oj', pgrun_test.token(:'oj'), 'boom', 'a reported failure');
SELECT is((SELECT status FROM pgrun.jobs WHERE id = :'oj'), 'queued',
    'requeued, a reported failure is retried: the job has its whole attempt budget again');
SELECT cmp_ok((SELECT max_attempts FROM pgrun.jobs WHERE id = :'oj'), '>', 1,
    'max_attempts as declared, not 1');

SELECT * FROM finish();
ROLLBACK;
