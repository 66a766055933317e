-- Creating a job writes no job_events row (issue 15): the job row records the creation, and
-- get_job_history derives the job's 'enqueued' event from it. A keyed retry adds nothing.
BEGIN;
SELECT plan(5);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT job_id AS single FROM pgrun.enqueue_job('mail.send', idempotency_key => 'k') \gset
SELECT pgrun_test.freeze_time('2030-01-01 00:00:05+00');
SELECT pgrun.enqueue_job('mail.send', idempotency_key => 'k');
CREATE TEMP TABLE bulk ON COMMIT DROP AS
SELECT * FROM pgrun.enqueue_jobs('[{"job_type": "a"}, {"job_type": "b", "delay": 60}, {"job_type": "mail.send", "idempotency_key": "k"}]');

-- TEST: no event rows, from the single enqueue, the batch or the keyed retries
SELECT is((SELECT count(*) FROM pgrun.job_events), 0::bigint, 'enqueue_job and enqueue_jobs write no event');
SELECT is(
    (SELECT count(*) FILTER (WHERE created) FROM bulk),
    2::bigint,
    'the batch created its two new jobs all the same'
);

-- TEST: the job row records the creation
SELECT is(
    (SELECT (status, created_at)::text FROM pgrun.jobs WHERE id = :'single'),
    ROW('queued'::text, '2030-01-01 00:00:00+00'::timestamptz)::text,
    'the job is queued, created at pgrun.now() of the first call (the keyed retry changed nothing)'
);

-- TEST: the history derives the enqueued event from the row
SELECT is(
    pgrun.get_job_history(:'single') -> 'events',
    jsonb_build_array(
        to_jsonb(jsonb_populate_record(NULL::pgrun.job_events, jsonb_build_object(
            'event', 'enqueued', 'to_status', 'queued', 'attempt', 0, 'created_at', '2030-01-01 00:00:00+00'::timestamptz
        ))) - 'job_id' - 'lease_token' || '{"derived": true}'
    ),
    'get_job_history: one derived enqueued event, nothing -> queued, attempt 0, at the job''s created_at'
);
SELECT is(
    (SELECT count(*) FROM bulk AS b
     WHERE pgrun.get_job_history(b.job_id) #>> '{events,0,event}' = 'enqueued'
       AND (pgrun.get_job_history(b.job_id) #>> '{events,0,derived}')::boolean),
    3::bigint,
    'every job of the batch (and the existing keyed one) shows its derived enqueued event'
);

SELECT * FROM finish();
ROLLBACK;
