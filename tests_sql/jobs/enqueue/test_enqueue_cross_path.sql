-- enqueue_job and enqueue_jobs share one canonical snapshot: a keyed request made through
-- one is recognised when retried through the other.
BEGIN;
SELECT plan(3);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT job_id AS single FROM pgrun.enqueue_job(
    'mail.send', '{"to": "a"}', priority => 3, delay => interval '2 minutes', timeout_seconds => 10,
    organization_id => '11111111-1111-1111-1111-111111111111', idempotency_key => 'one'
) \gset
SELECT job_id AS bulk FROM pgrun.enqueue_jobs(
    '[{"job_type": "mail.send", "payload": {"to": "b"}, "run_at": "2030-01-05T00:00:00+02:00", "idempotency_key": "two"}]'
) \gset

-- TEST: single first, bulk retry
SELECT results_eq(
    $$SELECT job_id, created FROM pgrun.enqueue_jobs('[{"job_type": "mail.send", "payload": {"to": "a"}, "priority": 3,
        "delay": "00:02:00", "timeout_seconds": 10, "organization_id": "11111111-1111-1111-1111-111111111111",
        "idempotency_key": "one"}]')$$,
    format($$VALUES (%L::uuid, false)$$, :'single'),
    'a bulk retry of a single enqueue returns its job'
);

-- TEST: bulk first, single retry (the same instant written in another time zone)
SET LOCAL TIME ZONE 'America/New_York';
SELECT results_eq(
    $$SELECT job_id, created FROM pgrun.enqueue_job('mail.send', '{"to": "b"}',
        run_at => '2030-01-04 17:00:00-05', idempotency_key => 'two')$$,
    format($$VALUES (%L::uuid, false)$$, :'bulk'),
    'a single retry of a bulk enqueue returns its job, whatever the session time zone'
);
SELECT is(
    (SELECT enqueue_request ->> 'run_at' FROM pgrun.jobs WHERE id = :'bulk'),
    '2030-01-04T22:00:00.000000Z',
    'run_at is kept in the snapshot as UTC text'
);

SELECT * FROM finish();
ROLLBACK;
