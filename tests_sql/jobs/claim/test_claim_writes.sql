-- What one claim writes: the running job with a fresh lease and its open attempt row; no event
-- (issue 15): the job row shows the claim, and the event that ends the attempt records it.
BEGIN;
SELECT plan(11);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT pgrun_test.make_job(p_payload => '{"to": "a@b"}', p_max_attempts => 4) AS job \gset
SELECT pgrun_test.make_job() AS other \gset
CREATE TEMP TABLE claimed ON COMMIT DROP AS
SELECT * FROM pgrun.claim_jobs(worker_id => 'worker-7', lease_seconds => 45, max_jobs => 2);

-- TEST: what the handler gets
SELECT results_eq(
    format(
        'SELECT job_type, queue, priority, payload, attempt, max_attempts, lease_expires_at, step, state '
        'FROM claimed WHERE job_id = %L',
        :'job'
    ),
    $$VALUES ('test.job', 'default', 100, '{"to": "a@b"}'::jsonb, 1, 4,
              '2030-01-01 00:00:45+00'::timestamptz, NULL::text, NULL::jsonb)$$,
    'the claim returns the payload, the attempt, the lease and the (initial) step'
);

-- TEST: every job gets its own fresh token
SELECT is(
    (SELECT count(DISTINCT lease_token) FROM claimed WHERE lease_token IS NOT NULL),
    2::bigint,
    'two jobs, two different lease tokens'
);

-- TEST: the job row
SELECT results_eq(
    format(
        'SELECT status, worker_id, lease_token, lease_expires_at, heartbeat_at, attempt, total_attempts, started_at '
        'FROM pgrun.jobs WHERE id = %L',
        :'job'
    ),
    format(
        'SELECT ''running''::text, ''worker-7''::text, lease_token, lease_expires_at, '
        '''2030-01-01 00:00:00+00''::timestamptz, 1, 1, ''2030-01-01 00:00:00+00''::timestamptz '
        'FROM claimed WHERE job_id = %L',
        :'job'
    ),
    'the job is running under the returned lease, attempt and total_attempts are 1'
);

-- TEST: one open attempt row
SELECT results_eq(
    format(
        'SELECT attempt, worker_id, lease_token, started_at, finished_at, outcome FROM pgrun.job_attempts WHERE job_id = %L',
        :'job'
    ),
    format(
        'SELECT 1, ''worker-7''::text, lease_token, ''2030-01-01 00:00:00+00''::timestamptz, NULL::timestamptz, NULL::text '
        'FROM claimed WHERE job_id = %L',
        :'job'
    ),
    'one job_attempts row, open (no outcome yet), with the worker and the token'
);

-- TEST: no event
SELECT is((SELECT count(*) FROM pgrun.job_events), 0::bigint, 'a claim writes no event');

-- TEST: a second claim after a retry counts on
SELECT pgrun.fail_job(job_id => :'job', lease_token => (SELECT lease_token FROM claimed WHERE job_id = :'job'),
    retry_delay => interval '0');
SELECT results_eq(
    format('SELECT job_id, attempt FROM pgrun.claim_jobs(worker_id => ''worker-8'')'),
    format('VALUES (%L::uuid, 2)', :'job'),
    'the retried job is claimed with attempt 2'
);
SELECT is(
    (SELECT total_attempts FROM pgrun.jobs WHERE id = :'job'),
    2,
    'total_attempts counts both claims'
);
SELECT is(
    (SELECT array_agg(attempt ORDER BY attempt) FROM pgrun.job_attempts WHERE job_id = :'job'),
    ARRAY[1, 2],
    'each claim has its own attempt row'
);
SELECT isnt(
    pgrun_test.token(:'job'),
    (SELECT lease_token FROM claimed WHERE job_id = :'job'),
    'the new claim has a new token'
);
SELECT is(
    pgrun_test.events_of(:'job'),
    'retry_scheduled',
    'the first attempt''s end is the job''s one event; neither claim wrote one'
);
SELECT results_eq(
    format(
        'SELECT attempt, worker_id, lease_token, started_at, outcome FROM pgrun.job_events WHERE job_id = %L',
        :'job'
    ),
    format(
        'SELECT 1, ''worker-7''::text, lease_token, ''2030-01-01 00:00:00+00''::timestamptz, ''failed''::text '
        'FROM claimed WHERE job_id = %L',
        :'job'
    ),
    'the event that ended the first attempt records its claim: number, worker, lease token and start'
);

SELECT * FROM finish();
ROLLBACK;
