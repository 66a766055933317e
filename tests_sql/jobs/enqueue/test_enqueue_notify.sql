-- Each enqueue call wakes each queue that got a ready job exactly once, and tells each queue
-- that got delayed jobs when the earliest comes due ('<queue> <unix ms>'), through one helper
-- and never a trigger. (NOTIFY is delivered at commit, so here the private helper is swapped for a
-- recorder; the lead's pytest proves delivery to a LISTENing session.)
BEGIN;
SELECT plan(10);

-- TEST: one place notifies, on channel pgrun_jobs, and no trigger does
SELECT is(
    (SELECT string_agg(p.proname, ', ') FROM pg_proc AS p
     WHERE p.pronamespace = 'pgrun'::regnamespace AND p.prosrc ~ 'pg_notify\('),
    '_enqueue_notify',
    'pgrun._enqueue_notify is the only pgrun function calling pg_notify'
);
SELECT ok(
    (SELECT prosrc ~ $re$pg_notify\('pgrun_jobs', p_payload\)$re$ FROM pg_proc WHERE oid = 'pgrun._enqueue_notify(text)'::regprocedure)
    AND (SELECT prosrc ~ $re$pgrun\._enqueue_notify\(q\.queue\)$re$ FROM pg_proc WHERE oid = 'pgrun._enqueue_notify_queues(text[])'::regprocedure)
    AND NOT EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = 'pgrun.jobs'::regclass AND NOT tgisinternal),
    'it sends the payload on channel pgrun_jobs, the several-jobs helper goes through it, and pgrun.jobs has no trigger'
);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT pgrun_test.record_notifications();

-- TEST: a batch over several queues
SELECT count(*) FROM pgrun.enqueue_jobs($$[
    {"job_type": "a", "queue": "mail"}, {"job_type": "b", "queue": "mail"}, {"job_type": "c", "queue": "bulk"},
    {"job_type": "d", "queue": "mail"}, {"job_type": "e", "queue": "later", "delay": 60},
    {"job_type": "f", "queue": "bulk"}
]$$);
SELECT results_eq(
    'SELECT queues FROM notify_calls ORDER BY call_no',
    $$VALUES (ARRAY['bulk', 'later 1893456060000', 'mail'])$$,
    'one notify call for the statement, one entry per queue with ready jobs, the delayed queue with its due time'
);
SELECT is(
    (SELECT count(*) FROM pgrun.jobs),
    6::bigint,
    'all six jobs were enqueued'
);

-- TEST: a single ready job
TRUNCATE notify_calls;
SELECT pgrun.enqueue_job('a', queue => 'mail', idempotency_key => 'k');
SELECT results_eq('SELECT queues FROM notify_calls', $$VALUES (ARRAY['mail'])$$, 'enqueue_job wakes its queue');

-- TEST: a delayed job says when it comes due (2030-01-01 01:00 UTC in Unix ms); a keyed
-- retry creates nothing and wakes nobody
TRUNCATE notify_calls;
SELECT pgrun.enqueue_job('a', queue => 'mail', delay => interval '1 hour');
SELECT results_eq('SELECT queues FROM notify_calls', $$VALUES (ARRAY['mail 1893459600000'])$$,
    'a delayed job tells its queue when it comes due');
TRUNCATE notify_calls;
SELECT pgrun.enqueue_job('a', queue => 'mail', idempotency_key => 'k');
SELECT is_empty('SELECT * FROM notify_calls', 'a keyed retry notifies nobody');

-- TEST: several delayed jobs of one queue: its earliest due time, rounded up to the
-- millisecond (a worker woken then finds the job due); one job alone is rounded the same way
TRUNCATE notify_calls;
SELECT count(*) FROM pgrun.enqueue_jobs($$[
    {"job_type": "a", "queue": "later", "delay": 60}, {"job_type": "b", "queue": "later", "delay": 30.0005}
]$$);
SELECT results_eq('SELECT queues FROM notify_calls', $$VALUES (ARRAY['later 1893456030001'])$$,
    'the earliest of the queue''s due times, in whole milliseconds rounded up');
TRUNCATE notify_calls;
SELECT pgrun.enqueue_job('a', queue => 'soon', delay => interval '0.0004 seconds');
SELECT results_eq('SELECT queues FROM notify_calls', $$VALUES (ARRAY['soon 1893456000001'])$$,
    'a single delayed job''s due time is rounded up too');

-- TEST: a batch of which one job went in (the other's key was taken): that job's payload
SELECT count(*) FROM pgrun.enqueue_jobs('[{"job_type": "a", "queue": "keyed", "idempotency_key": "k-1"}]');
TRUNCATE notify_calls;
SELECT count(*) FROM pgrun.enqueue_jobs($$[
    {"job_type": "a", "queue": "keyed", "idempotency_key": "k-1"},
    {"job_type": "a", "queue": "keyed", "idempotency_key": "k-2", "delay": 60}
]$$);
SELECT results_eq('SELECT queues FROM notify_calls', $$VALUES (ARRAY['keyed 1893456060000'])$$,
    'one notification: the new job''s queue and due time; the existing key''s job wakes nobody');

SELECT * FROM finish();
ROLLBACK;
