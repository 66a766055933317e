-- enqueue_jobs creates one job per element, in array order, each resolved like enqueue_job.
BEGIN;
SELECT plan(8);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT pgrun.upsert_job_definition('report.build', queue => 'reports', priority => 5);
CREATE TEMP TABLE r ON COMMIT DROP AS
SELECT * FROM pgrun.enqueue_jobs($$[
    {"job_type": "mail.send", "payload": {"to": "a@example.com"}},
    {"job_type": "report.build"},
    {"job_type": "report.build", "priority": 1, "queue": "urgent", "max_attempts": 2, "timeout_seconds": 30},
    {"job_type": "mail.send", "delay": 90},
    {"job_type": "mail.send", "delay": "2 hours"},
    {"job_type": "mail.send", "run_at": "2030-03-01T10:00:00Z"},
    {"job_type": "mail.send", "payload": null, "queue": null, "priority": null}
]$$);

-- TEST: one row per element, in order, all created
SELECT results_eq(
    'SELECT ordinality, created FROM r ORDER BY ordinality',
    $$VALUES (1, true), (2, true), (3, true), (4, true), (5, true), (6, true), (7, true)$$,
    'one row per element with its 1-based ordinality'
);
SELECT is(
    (SELECT count(*) FROM (SELECT job_id > lag(job_id) OVER (ORDER BY ordinality) AS up FROM r) AS s WHERE NOT up),
    0::bigint,
    'ids strictly increase in array order'
);
SELECT is((SELECT count(*) FROM pgrun.jobs), 7::bigint, 'seven jobs');

-- TEST: each element resolved on its own
SELECT results_eq(
    $$SELECT j.queue, j.priority, j.max_attempts, j.timeout_seconds, j.run_at, j.payload
      FROM r JOIN pgrun.jobs AS j ON j.id = r.job_id ORDER BY r.ordinality$$,
    $$VALUES
        ('default'::text, 100, 20, NULL::integer, '2030-01-01 00:00:00+00'::timestamptz, '{"to": "a@example.com"}'::jsonb),
        ('reports', 5, 20, NULL, '2030-01-01 00:00:00+00', '{}'),
        ('urgent', 1, 2, 30, '2030-01-01 00:00:00+00', '{}'),
        ('default', 100, 20, NULL, '2030-01-01 00:01:30+00', '{}'),
        ('default', 100, 20, NULL, '2030-01-01 02:00:00+00', '{}'),
        ('default', 100, 20, NULL, '2030-03-01 10:00:00+00', '{}'),
        ('default', 100, 20, NULL, '2030-01-01 00:00:00+00', '{}')$$,
    'definitions, explicit values, delay in seconds or as an interval, run_at, JSON nulls'
);

-- TEST: unkeyed jobs carry no snapshot
SELECT is(
    (SELECT count(*) FROM pgrun.jobs WHERE enqueue_request IS NOT NULL OR idempotency_key IS NOT NULL),
    0::bigint,
    'no idempotency key, no snapshot'
);

-- TEST: integral JSON numbers in any spelling
SELECT job_id AS seven FROM pgrun.enqueue_jobs('[{"job_type": "a", "priority": 7.0}]') \gset
SELECT is((SELECT priority FROM pgrun.jobs WHERE id = :'seven'), 7, 'priority 7.0 is the integer 7');
SELECT throws_ok(
    $$SELECT * FROM pgrun.enqueue_jobs('[{"job_type": "a", "priority": 7.5}]')$$,
    'RQ003', 'job.invalid_priority', 'a fractional priority is refused'
);

-- TEST: an empty array
SELECT is_empty($$SELECT * FROM pgrun.enqueue_jobs('[]')$$, 'an empty array enqueues nothing');

SELECT * FROM finish();
ROLLBACK;
