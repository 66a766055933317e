-- Every created job gets exactly one 'enqueued' event; a keyed retry that creates nothing gets none.
BEGIN;
SELECT plan(4);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT job_id AS single FROM pgrun.enqueue_job('mail.send', idempotency_key => 'k') \gset
SELECT pgrun.enqueue_job('mail.send', idempotency_key => 'k');
CREATE TEMP TABLE bulk ON COMMIT DROP AS
SELECT * FROM pgrun.enqueue_jobs('[{"job_type": "a"}, {"job_type": "b", "delay": 60}, {"job_type": "mail.send", "idempotency_key": "k"}]');

-- TEST: the single enqueue
SELECT results_eq(
    format('SELECT event, from_status, to_status, attempt, created_at FROM pgrun.job_events WHERE job_id = %L', :'single'),
    $$VALUES ('enqueued'::text, NULL::text, 'queued'::text, 0, '2030-01-01 00:00:00+00'::timestamptz)$$,
    'one enqueued event: from nothing to queued, attempt 0, at pgrun.now()'
);

-- TEST: the bulk enqueue
SELECT is(
    (SELECT count(*) FROM pgrun.job_events AS e JOIN bulk AS b ON b.job_id = e.job_id WHERE b.created),
    2::bigint,
    'one event per created job of the batch'
);
SELECT is(
    (SELECT count(*) FROM pgrun.job_events WHERE job_id = :'single'),
    1::bigint,
    'the keyed retries (single and bulk) added no event to the existing job'
);

-- TEST: events match jobs one to one
SELECT is(
    (SELECT count(*) FROM pgrun.jobs) - (SELECT count(DISTINCT job_id) FROM pgrun.job_events WHERE event = 'enqueued'),
    0::bigint,
    'every job has its enqueued event'
);

SELECT * FROM finish();
ROLLBACK;
