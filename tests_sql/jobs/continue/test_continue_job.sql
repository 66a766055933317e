-- continue_job moves the same job to its next step: state persisted, queued again, attempt
-- budget reset, one continued event; the next claim returns the new step and state.
BEGIN;
SELECT plan(9);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT job_id AS job, lease_token AS token FROM pgrun_test.running_job() \gset

-- TEST: outcome
SELECT results_eq(
    format('SELECT * FROM pgrun.continue_job(%L, %L, ''charge'', ''{"order": 7}'')', :'job', :'token'),
    $$VALUES ('continued', '2030-01-01 00:00:00+00'::timestamptz)$$,
    'continue_job returns continued and when the next step runs'
);

-- TEST: the row
SELECT results_eq(
    format(
        'SELECT status, step, state, attempt, total_attempts, lease_token, finished_at FROM pgrun.jobs WHERE id = %L',
        :'job'
    ),
    $$VALUES ('queued', 'charge', '{"order": 7}'::jsonb, 0, 1, NULL::uuid, NULL::timestamptz)$$,
    'queued at the next step with its state, attempt budget reset, total kept'
);

-- TEST: the attempt and the event
SELECT results_eq(
    format('SELECT step, outcome FROM pgrun.job_attempts WHERE job_id = %L', :'job'),
    $$VALUES (NULL::text, 'continued')$$,
    'the attempt that ran the first step ends continued'
);
SELECT results_eq(
    format('SELECT event, from_status, to_status, detail->>''step'' FROM pgrun.job_events WHERE job_id = %L ORDER BY id', :'job'),
    $$VALUES ('continued', 'running', 'queued', 'charge')$$,
    'one continued event naming the next step (the claim wrote none)'
);

-- TEST: the next claim resumes at the new step
SELECT results_eq(
    'SELECT step, state, attempt FROM pgrun.claim_jobs(worker_id => ''w2'')',
    $$VALUES ('charge', '{"order": 7}'::jsonb, 1)$$,
    'the next claim returns the new step and state, attempt 1 of the new budget'
);
SELECT results_eq(
    format('SELECT attempt, step FROM pgrun.job_attempts WHERE job_id = %L ORDER BY attempt', :'job'),
    $$VALUES (1, NULL::text), (2, 'charge')$$,
    'the attempt rows number claims over the job''s life and record their step'
);

-- TEST: state NULL keeps the current state
SELECT * FROM pgrun.continue_job(:'job', pgrun_test.token(:'job'), 'ship');
SELECT results_eq(
    format('SELECT step, state FROM pgrun.jobs WHERE id = %L', :'job'),
    $$VALUES ('ship', '{"order": 7}'::jsonb)$$,
    'a NULL state keeps the state'
);

-- TEST: the last step completes the job
SELECT is(pgrun.complete_job(:'job', pgrun_test.claim_job(:'job')), 'succeeded', 'the final step completes the job');
SELECT is(
    pgrun_test.events_of(:'job'),
    'continued,continued',
    'one event per transition but the claims and the success (the job row records both)'
);

SELECT * FROM finish();
ROLLBACK;
