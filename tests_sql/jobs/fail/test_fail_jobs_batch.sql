-- fail_jobs: per-job errors, retryability and delays in one statement; a lost lease is
-- reported in its row and the rest of the batch is written.
BEGIN;
SELECT plan(6);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT job_id AS retry, lease_token AS retry_token FROM pgrun_test.running_job() \gset
SELECT job_id AS perm, lease_token AS perm_token FROM pgrun_test.running_job() \gset
SELECT job_id AS stale, lease_token AS stale_token FROM pgrun_test.running_job() \gset
SELECT pgrun_test.job_fingerprint(:'stale') AS stale_before \gset

CREATE TEMP TABLE outcome ON COMMIT DROP AS
SELECT *, row_number() OVER () AS n
FROM pgrun.fail_jobs(
    job_ids => ARRAY[:'retry', :'stale', :'perm']::uuid[],
    lease_tokens => ARRAY[:'retry_token', gen_random_uuid(), :'perm_token']::uuid[],
    error_codes => ARRAY['flaky', 'x', 'invalid'],
    messages => ARRAY['try again', 'x', 'never works'],
    retryable => ARRAY[true, true, false],
    retry_delays => ARRAY['30 seconds', NULL, NULL]::interval[]
);

-- TEST: one row per input, in order
SELECT results_eq(
    'SELECT job_id, outcome, run_at, lost_reason FROM outcome ORDER BY n',
    format(
        'VALUES (%L::uuid, ''retry_scheduled'', ''2030-01-01 00:00:30+00''::timestamptz, NULL::text), '
        '(%L::uuid, ''lease_lost'', NULL, ''token_mismatch''), (%L::uuid, ''dead'', NULL, NULL)',
        :'retry', :'stale', :'perm'
    ),
    'retried, reported as lost, dead: each in its row'
);

-- TEST: each job got its own error
SELECT results_eq(
    format(
        'SELECT id, status, error_code, pgrun.get_job(id) ->> ''error_message'' FROM pgrun.jobs '
        'WHERE id IN (%L, %L) ORDER BY id',
        :'retry', :'perm'
    ),
    format(
        'VALUES (%L::uuid, ''queued'', ''flaky'', ''try again''), (%L::uuid, ''dead'', ''invalid'', ''never works'')',
        :'retry', :'perm'
    ),
    'the error code and message of each job are its own'
);

-- TEST: the lost lease wrote nothing
SELECT is(pgrun_test.job_fingerprint(:'stale'), :'stale_before', 'the stale job is untouched');

-- TEST: one event per handled job, one dead letter for the dead one
SELECT is(pgrun_test.events_of(:'retry'), 'retry_scheduled', 'the retried job has one new event');
SELECT is(pgrun_test.events_of(:'perm'), 'dead', 'the dead job has one new event');
SELECT results_eq(
    'SELECT job_id, reason FROM pgrun.job_dead_letters',
    format('VALUES (%L::uuid, ''non_retryable'')', :'perm'),
    'exactly one dead letter, for the non-retryable failure'
);

SELECT * FROM finish();
ROLLBACK;
