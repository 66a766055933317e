-- enqueue_jobs honours idempotency keys per element, mixed with unkeyed ones; elements
-- sharing a key behave like retries in array order.
BEGIN;
SELECT plan(6);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT job_id AS old FROM pgrun.enqueue_job('mail.send', '{"n": 1}', idempotency_key => 'old') \gset
CREATE TEMP TABLE r ON COMMIT DROP AS
SELECT * FROM pgrun.enqueue_jobs($$[
    {"job_type": "mail.send", "payload": {"n": 1}, "idempotency_key": "old"},
    {"job_type": "mail.send", "payload": {"n": 2}},
    {"job_type": "mail.send", "payload": {"n": 3}, "idempotency_key": "new"},
    {"job_type": "mail.send", "payload": {"n": 3}, "idempotency_key": "new"},
    {"job_type": "mail.send", "payload": {"n": 4}},
    {"job_type": "mail.send", "payload": {"n": 3}, "idempotency_key": "new", "organization_id": "11111111-1111-1111-1111-111111111111"}
]$$);

-- TEST: created flags
SELECT results_eq(
    'SELECT ordinality, created FROM r ORDER BY ordinality',
    $$VALUES (1, false), (2, true), (3, true), (4, false), (5, true), (6, true)$$,
    'existing key: not created; new key: first created, duplicate not; unkeyed: created'
);

-- TEST: which job each element got
SELECT is((SELECT job_id FROM r WHERE ordinality = 1), :'old'::uuid, 'the existing key returns the existing job');
SELECT is(
    (SELECT job_id FROM r WHERE ordinality = 4),
    (SELECT job_id FROM r WHERE ordinality = 3),
    'a repeated key in the batch returns the job its first element created'
);
SELECT isnt(
    (SELECT job_id FROM r WHERE ordinality = 6),
    (SELECT job_id FROM r WHERE ordinality = 3),
    'the same key in another organization is another job'
);
SELECT is((SELECT count(*) FROM pgrun.jobs), 5::bigint, 'five jobs in all: the old one and four new');

-- TEST: a conflicting duplicate inside the batch rolls the whole call back
SELECT is(
    regexp_replace(pgrun_test.error_of($$SELECT * FROM pgrun.enqueue_jobs('[
        {"job_type": "a", "idempotency_key": "x"},
        {"job_type": "b"},
        {"job_type": "a", "idempotency_key": "x", "payload": {"other": true}}
    ]')$$), '[0-9a-f-]{36}', '<id>')
    || ' / jobs: ' || (SELECT count(*) FROM pgrun.jobs),
    'RQ001 job.enqueue_conflicting_retry: element 3: the idempotency key already names job <id>, '
    'enqueued with a different request (differs in: payload) / jobs: 5',
    'a different request under a key used earlier in the same batch conflicts, naming element 3; nothing is written'
);

SELECT * FROM finish();
ROLLBACK;
