-- A finished attempt lives on the job_events row that ended it (migration 0005):
-- job_events_attempt_check allows an outcome only on a transition out of running other than
-- cancel_requested, and only with the attempt's start and lease token; the lifecycle writes
-- put the attempt on exactly that event. jobs keeps room on its pages (fillfactor 50).
BEGIN;
SELECT plan(19);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT pgrun_test.make_job() AS queued \gset

-- TEST: job_events_attempt_check against direct writes
SELECT throws_ok(
    format($$INSERT INTO pgrun.job_events (job_id, event, from_status, to_status, attempt, worker_id, outcome, started_at, lease_token)
        VALUES (%L, 'claimed', 'queued', 'running', 1, 'worker-1', 'succeeded', pgrun.now(), gen_random_uuid())$$, :'queued'),
    '23514', NULL, 'a claimed event cannot carry an outcome (it starts an attempt)'
);
SELECT throws_ok(
    format($$INSERT INTO pgrun.job_events (job_id, event, from_status, to_status, attempt, worker_id, outcome, started_at, lease_token)
        VALUES (%L, 'cancel_requested', 'running', 'running', 1, 'worker-1', 'cancelled', pgrun.now(), gen_random_uuid())$$, :'queued'),
    '23514', NULL, 'a cancel_requested event cannot carry an outcome (the attempt goes on)'
);
SELECT throws_ok(
    format($$INSERT INTO pgrun.job_events (job_id, event, from_status, to_status, attempt, worker_id, outcome, started_at, lease_token)
        VALUES (%L, 'succeeded', 'running', 'succeeded', 1, 'worker-1', 'succeeded', NULL, gen_random_uuid())$$, :'queued'),
    '23514', NULL, 'an attempt-ending event with an outcome needs started_at'
);
SELECT throws_ok(
    format($$INSERT INTO pgrun.job_events (job_id, event, from_status, to_status, attempt, worker_id, outcome, started_at, lease_token)
        VALUES (%L, 'succeeded', 'running', 'succeeded', 1, 'worker-1', 'succeeded', pgrun.now(), NULL)$$, :'queued'),
    '23514', NULL, 'an attempt-ending event with an outcome needs the lease token'
);
SELECT throws_ok(
    format($$INSERT INTO pgrun.job_events (job_id, event, from_status, to_status, attempt, worker_id, outcome, started_at, lease_token)
        VALUES (%L, 'succeeded', 'running', 'succeeded', 1, 'worker-1', 'finished', pgrun.now(), gen_random_uuid())$$, :'queued'),
    '23514', NULL, 'the outcome is one of the documented values'
);
SELECT throws_ok(
    format($$INSERT INTO pgrun.job_events (job_id, event, from_status, to_status, attempt, worker_id, outcome, started_at, lease_token)
        VALUES (%L, 'enqueued', NULL, 'queued', 0, 'worker-1', 'succeeded', pgrun.now(), gen_random_uuid())$$, :'queued'),
    '23514', NULL, 'an event without a from_status (enqueued) cannot carry an outcome'
);
SELECT throws_ok(
    format($$INSERT INTO pgrun.job_events (job_id, event, from_status, to_status, attempt, worker_id, error_code)
        VALUES (%L, 'claimed', 'queued', 'running', 1, 'worker-1', 'boom')$$, :'queued'),
    '23514', NULL, 'the attempt columns (here error_code) stay NULL on an event that ends no attempt'
);
SELECT lives_ok(
    format($$INSERT INTO pgrun.job_events (job_id, event, from_status, to_status, attempt, worker_id, outcome, started_at, lease_token)
        VALUES (%L, 'succeeded', 'running', 'succeeded', 1, 'worker-1', 'succeeded', pgrun.now(), gen_random_uuid())$$, :'queued'),
    'an attempt-ending event with outcome, start and lease token is accepted'
);
SELECT lives_ok(
    format($$INSERT INTO pgrun.job_events (job_id, event, from_status, to_status, attempt, outcome)
        VALUES (%L, 'enqueued', NULL, 'queued', 0, NULL)$$, :'queued'),
    'an enqueued event has no outcome (none is written since 0019; old rows stay valid)'
);
SELECT lives_ok(
    format($$INSERT INTO pgrun.job_events (job_id, event, from_status, to_status, attempt, worker_id)
        VALUES (%L, 'claimed', 'queued', 'running', 1, 'worker-1')$$, :'queued'),
    'a claimed event without attempt columns is accepted (none is written since 0019; old rows stay valid)'
);

-- TEST: claim, continue, claim again, complete through the real functions
SELECT job_id AS job, lease_token AS first_token FROM pgrun_test.running_job() \gset
SELECT pgrun_test.advance_time(interval '5 seconds');
SELECT * FROM pgrun.continue_job(:'job', :'first_token', 'render');
SELECT pgrun_test.advance_time(interval '5 seconds') AS second_start \gset
SELECT pgrun_test.claim_job(:'job') AS second_token \gset
SELECT pgrun_test.advance_time(interval '5 seconds');
SELECT pgrun.complete_job(:'job', :'second_token');

SELECT results_eq(
    format(
        'SELECT status, step, lease_token, started_at, finished_at, worker_id, total_attempts FROM pgrun.jobs WHERE id = %L',
        :'job'
    ),
    format(
        $$VALUES ('succeeded'::text, 'render'::text, %L::uuid, %L::timestamptz, '2030-01-01 00:00:15+00'::timestamptz, 'worker-1'::text, 2)$$,
        :'second_token', :'second_start'
    ),
    'the succeeded job''s row carries the attempt: status, step, the claim''s lease token and start (no event since 0023)'
);
SELECT results_eq(
    format(
        'SELECT outcome, step, lease_token, started_at FROM pgrun.job_events WHERE job_id = %L AND event = %L',
        :'job', 'continued'
    ),
    format(
        $$VALUES ('continued'::text, NULL::text, %L::uuid, '2030-01-01 00:00:00+00'::timestamptz)$$,
        :'first_token'
    ),
    'the continued event carries the first attempt, at the step it ran'
);
SELECT is(
    pgrun_test.events_of(:'job'),
    'continued',
    'the two claims wrote no event, nor the success: the first attempt is on the event that ended it'
);
SELECT results_eq(
    format(
        'SELECT attempt, step, lease_token, started_at, finished_at, outcome FROM pgrun.job_attempts WHERE job_id = %L ORDER BY attempt',
        :'job'
    ),
    format(
        $$VALUES (1, NULL::text, %L::uuid, '2030-01-01 00:00:00+00'::timestamptz, '2030-01-01 00:00:05+00'::timestamptz, 'continued'::text),
                 (2, 'render'::text, %L::uuid, %L::timestamptz, '2030-01-01 00:00:15+00'::timestamptz, 'succeeded'::text)$$,
        :'first_token', :'second_token', :'second_start'
    ),
    'job_attempts reads the first attempt from its event, the second from the succeeded job''s row'
);

-- TEST: fail -> retry -> complete: one event with an outcome per finished attempt
SELECT job_id AS retried, lease_token AS retried_token FROM pgrun_test.running_job() \gset
SELECT * FROM pgrun.fail_job(:'retried', :'retried_token', 'http_500', 'boom', retry_delay => interval '0 seconds');
SELECT pgrun_test.advance_time(interval '1 second');
SELECT pgrun_test.claim_job(:'retried') AS retried_token2 \gset
SELECT pgrun.complete_job(:'retried', :'retried_token2');

SELECT is(
    pgrun_test.events_of(:'retried'), 'retry_scheduled',
    'the sequence ran as intended (claims and the success write no event)'
);
SELECT results_eq(
    format(
        'SELECT attempt, count(*) FILTER (WHERE outcome IS NOT NULL) FROM pgrun.job_attempts WHERE job_id = %L GROUP BY attempt ORDER BY attempt',
        :'retried'
    ),
    $$VALUES (1, 1::bigint), (2, 1::bigint)$$,
    'each finished attempt has exactly one row with an outcome'
);
SELECT results_eq(
    format(
        'SELECT outcome, error_code, error_message, lease_token FROM pgrun.job_attempts WHERE job_id = %L ORDER BY attempt',
        :'retried'
    ),
    format(
        $$VALUES ('failed'::text, 'http_500'::text, 'boom'::text, %L::uuid),
                 ('succeeded'::text, NULL::text, NULL::text, %L::uuid)$$,
        :'retried_token', :'retried_token2'
    ),
    'the failure''s attempt carries its error, the success''s none; each its own lease token'
);
SELECT results_eq(
    format('SELECT attempt, outcome FROM pgrun.job_attempts WHERE job_id = %L ORDER BY attempt', :'retried'),
    $$VALUES (1, 'failed'::text), (2, 'succeeded'::text)$$,
    'job_attempts shows the two attempts, no more'
);

-- TEST: jobs fillfactor
SELECT ok(
    (SELECT 'fillfactor=50' = ANY (reloptions) FROM pg_catalog.pg_class WHERE oid = 'pgrun.jobs'::regclass),
    'pgrun.jobs has fillfactor 50'
);

SELECT * FROM finish();
ROLLBACK;
