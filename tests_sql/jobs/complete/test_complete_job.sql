-- complete_job: an owned lease ends the job succeeded, with its result, in one transition.
BEGIN;
SELECT plan(9);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT job_id AS job, lease_token AS token FROM pgrun_test.running_job() \gset
SELECT pgrun_test.advance_time(interval '5 seconds');

-- TEST: it returns the outcome
SELECT is(
    pgrun.complete_job(job_id => :'job', lease_token => :'token', result => '{"sent": 3}'),
    'succeeded',
    'complete_job returns succeeded'
);

-- TEST: the job is succeeded with its result, finished now, its lease cleared, its worker kept
SELECT results_eq(
    format(
        'SELECT status, result, finished_at, worker_id, lease_token, lease_expires_at FROM pgrun.jobs WHERE id = %L',
        :'job'
    ),
    $$VALUES ('succeeded', '{"sent": 3}'::jsonb, '2030-01-01 00:00:05+00'::timestamptz, 'worker-1'::text, NULL::uuid, NULL::timestamptz)$$,
    'the job is succeeded, keeps the result and its last worker, and no longer holds a lease'
);
SELECT is(
    (SELECT attempt FROM pgrun.jobs WHERE id = :'job'),
    1,
    'the attempt counter is unchanged'
);

-- TEST: the attempt ends succeeded
SELECT results_eq(
    format('SELECT outcome, finished_at FROM pgrun.job_attempts WHERE job_id = %L', :'job'),
    $$VALUES ('succeeded', '2030-01-01 00:00:05+00'::timestamptz)$$,
    'the attempt row ends with outcome succeeded'
);

-- TEST: exactly one succeeded event
SELECT is(pgrun_test.events_of(:'job'), 'succeeded', 'one succeeded event, the only one (the claim wrote none)');
SELECT results_eq(
    format(
        'SELECT from_status, to_status, attempt, worker_id FROM pgrun.job_events WHERE job_id = %L AND event = %L',
        :'job', 'succeeded'
    ),
    $$VALUES ('running', 'succeeded', 1, 'worker-1')$$,
    'the event records the transition, the attempt and the worker'
);

-- TEST: a NULL result is fine
SELECT job_id AS job2, lease_token AS token2 FROM pgrun_test.running_job() \gset
SELECT is(pgrun.complete_job(:'job2', :'token2'), 'succeeded', 'the result is optional');
SELECT is((SELECT result FROM pgrun.jobs WHERE id = :'job2'), NULL, 'no result is stored as NULL');

-- TEST: completing twice is a lost lease (the job no longer runs)
SELECT throws_ok(
    format('SELECT pgrun.complete_job(%L, %L)', :'job', :'token'),
    'RQ004',
    'job.lease_lost',
    'a second complete_job with the same lease raises job.lease_lost'
);

SELECT * FROM finish();
ROLLBACK;
