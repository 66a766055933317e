-- A non-retryable failure kills the job at once, with a dead letter, whatever attempts remain.
BEGIN;
SELECT plan(6);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT job_id AS job, lease_token AS token FROM pgrun_test.running_job(p_max_attempts => 10) \gset

-- TEST: outcome
SELECT results_eq(
    format(
        'SELECT * FROM pgrun.fail_job(%L, %L, error_code => ''bad_payload'', message => ''no recipient'', retryable => false)',
        :'job', :'token'
    ),
    $$VALUES ('dead', NULL::timestamptz)$$,
    'fail_job returns dead and no retry time'
);

-- TEST: the job is dead and finished, with the error
SELECT results_eq(
    format(
        'SELECT status, finished_at, error_code, pgrun.get_job(id) ->> ''error_message'', lease_token '
        'FROM pgrun.jobs WHERE id = %L',
        :'job'
    ),
    $$VALUES ('dead', '2030-01-01 00:00:00+00'::timestamptz, 'bad_payload', 'no recipient', NULL::uuid)$$,
    'the job is dead at once although nine attempts remain'
);

-- TEST: a dead letter says why
SELECT results_eq(
    format(
        'SELECT job_type, queue, attempt, error_code, '
        '(pgrun.get_job(job_id) -> ''dead_letters'' -> 0) ->> ''error_message'', reason, died_at, requeued_at '
        'FROM pgrun.job_dead_letters WHERE job_id = %L',
        :'job'
    ),
    $$VALUES ('test.job', 'default', 1, 'bad_payload', 'no recipient', 'non_retryable',
              '2030-01-01 00:00:00+00'::timestamptz, NULL::timestamptz)$$,
    'one dead letter with reason non_retryable'
);

-- TEST: the attempt and the event
SELECT results_eq(
    format('SELECT outcome, error_code FROM pgrun.job_attempts WHERE job_id = %L', :'job'),
    $$VALUES ('failed', 'bad_payload')$$,
    'the attempt ends failed with the error code'
);
SELECT is(pgrun_test.events_of(:'job'), 'dead', 'one dead event');
SELECT is(
    (SELECT detail->>'reason' FROM pgrun.job_events WHERE job_id = :'job' AND event = 'dead'),
    'non_retryable',
    'the event carries the reason'
);

SELECT * FROM finish();
ROLLBACK;
