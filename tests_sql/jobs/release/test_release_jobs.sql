-- release_jobs: a claimed job that never started goes back to the queue under its lease
-- token without burning an attempt; total_attempts keeps counting claims.
BEGIN;
SELECT plan(12);

-- SETUP: two queued jobs, the first ahead in the claim order; both claimed by one call
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT pgrun_test.make_job(p_job_type => 'test.release', p_priority => 10) AS first \gset
SELECT pgrun_test.make_job(p_job_type => 'test.release', p_priority => 20) AS second \gset
SELECT run_at AS first_run_at FROM pgrun.jobs WHERE id = :'first' \gset
SELECT pgrun_test.advance_time('5 seconds');
CREATE TEMP TABLE claimed ON COMMIT DROP AS
SELECT * FROM pgrun.claim_jobs('worker-1', 30, 2, NULL, ARRAY['test.release']);
SELECT lease_token AS first_token FROM claimed WHERE job_id = :'first' \gset
SELECT lease_token AS second_token FROM claimed WHERE job_id = :'second' \gset
SELECT pgrun_test.advance_time('1 second');

-- TEST: both are released, one row each in input order
SELECT results_eq(
    format(
        'SELECT job_id, outcome, lost_reason FROM pgrun.release_jobs(ARRAY[%L, %L]::uuid[], ARRAY[%L, %L]::uuid[])',
        :'second', :'first', :'second_token', :'first_token'
    ),
    format('VALUES (%L::uuid, ''released'', NULL::text), (%L::uuid, ''released'', NULL::text)', :'second', :'first'),
    'owned leases are released'
);

-- TEST: queued again, the lease cleared, the attempt budget back, run_at kept
SELECT results_eq(
    format(
        'SELECT status, lease_token, lease_expires_at, attempt, total_attempts, run_at, finished_at '
        'FROM pgrun.jobs WHERE id = %L',
        :'first'
    ),
    format(
        'VALUES (''queued'', NULL::uuid, NULL::timestamptz, 0, 1, %L::timestamptz, NULL::timestamptz)',
        :'first_run_at'
    ),
    'queued, no lease, attempt 0 (the claim burned none), total_attempts 1 (it counts the claim), run_at unchanged'
);

-- TEST: one released event, which ends no attempt
SELECT is(pgrun_test.events_of(:'first'), 'released', 'the release is the one event (a claim writes none)');
SELECT results_eq(
    format(
        'SELECT from_status, to_status, attempt, worker_id, outcome, lease_token, created_at, detail '
        'FROM pgrun.job_events WHERE job_id = %L AND event = ''released''',
        :'first'
    ),
    $$VALUES ('running', 'queued', 1, 'worker-1'::text, NULL::text, NULL::uuid,
              '2030-01-01 00:00:06+00'::timestamptz, '{"claimed_at": "2030-01-01T00:00:05+00:00"}'::jsonb)$$,
    'the released event records the claim it undoes: its number, worker and time (detail.claimed_at); no outcome'
);
SELECT is_empty(
    format('SELECT * FROM pgrun.job_attempts WHERE job_id = %L', :'first'),
    'no attempt row for a claim whose handler never ran'
);

-- TEST: the old token is dead: a write under it is refused
SELECT throws_ok(
    format('SELECT pgrun.complete_job(%L, %L)', :'first', :'first_token'),
    'RQ004', 'job.lease_lost', 'the released lease no longer owns the job'
);
SELECT results_eq(
    format(
        'SELECT outcome, lost_reason FROM pgrun.release_jobs(ARRAY[%L]::uuid[], ARRAY[%L]::uuid[])',
        :'first', :'first_token'
    ),
    $$VALUES ('lease_lost', 'not_running')$$,
    'releasing twice: the second is reported lease_lost, not_running'
);

-- TEST: the next claim takes them in the same order, with the next claim number
CREATE TEMP TABLE again ON COMMIT DROP AS
SELECT *, row_number() OVER () AS n FROM pgrun.claim_jobs('worker-2', 30, 2, NULL, ARRAY['test.release']);
SELECT results_eq(
    'SELECT job_id, attempt FROM again ORDER BY n',
    format('VALUES (%L::uuid, 1), (%L::uuid, 1)', :'first', :'second'),
    'claimed again in priority order, as attempt 1 of the budget'
);
SELECT is(
    (SELECT total_attempts FROM pgrun.jobs WHERE id = :'first'), 2,
    'the second claim is claim number 2 (numbers are never reused)'
);
SELECT pgrun.complete_job(:'first', (SELECT lease_token FROM again WHERE job_id = :'first'));
SELECT results_eq(
    format('SELECT attempt, outcome, worker_id FROM pgrun.job_attempts WHERE job_id = %L', :'first'),
    $$VALUES (2, 'succeeded', 'worker-2'::text)$$,
    'the one attempt that ran is the one job_attempts shows'
);
SELECT is(
    pgrun_test.events_of(:'first'), 'released',
    'the whole history: the released claim (the attempt that succeeded is on the job row)'
);

-- TEST: an empty batch is a no-op
SELECT is_empty(
    'SELECT * FROM pgrun.release_jobs(''{}''::uuid[], ''{}''::uuid[])',
    'an empty batch returns no rows'
);

SELECT * FROM finish();
ROLLBACK;
