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

-- TEST: the job is succeeded with its result, finished now, its lease's expiry cleared, its
-- worker and token kept (the row records the attempt: 0023)
SELECT results_eq(
    format(
        'SELECT status, result, finished_at, worker_id, lease_token, lease_expires_at FROM pgrun.jobs WHERE id = %L',
        :'job'
    ),
    format(
        $$VALUES ('succeeded', '{"sent": 3}'::jsonb, '2030-01-01 00:00:05+00'::timestamptz, 'worker-1'::text, %L::uuid, NULL::timestamptz)$$,
        :'token'
    ),
    'the job is succeeded, keeps the result, its last worker and token, and no longer holds a lease'
);
SELECT is(
    (SELECT attempt FROM pgrun.jobs WHERE id = :'job'),
    1,
    'the attempt counter is unchanged'
);

-- TEST: the attempt ends succeeded, read from the job row
SELECT results_eq(
    format(
        'SELECT attempt, worker_id, lease_token, started_at, outcome, finished_at FROM pgrun.job_attempts WHERE job_id = %L',
        :'job'
    ),
    format(
        $$VALUES (1, 'worker-1'::text, %L::uuid, '2030-01-01 00:00:00+00'::timestamptz, 'succeeded'::text,
                  '2030-01-01 00:00:05+00'::timestamptz)$$,
        :'token'
    ),
    'the attempt row ends with outcome succeeded: its worker, token, start and end'
);

-- TEST: no event at all (the claim wrote none, the success none since 0023)
SELECT is(pgrun_test.events_of(:'job'), '', 'success writes no event: the job row records it');
SELECT is(
    (SELECT count(*)::integer FROM pgrun.job_events WHERE job_id = :'job'),
    0,
    'no job_events row for the job'
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
