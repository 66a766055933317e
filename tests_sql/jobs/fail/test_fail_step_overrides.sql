-- fail_jobs decides with the step's overrides (continue_job's max_attempts and
-- retry_delay) where the job has them: retry_delays given by the caller > the step's
-- retry_delay > the type's backoff; the step's max_attempts replaces the job's.
BEGIN;
SELECT plan(5);

-- SETUP: three jobs of five attempts, backoff 10 s without jitter, each now at a step that
-- has overrides or not
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT pgrun_test.make_job(p_max_attempts => 5) AS a \gset
SELECT pgrun_test.make_job(p_max_attempts => 5) AS b \gset
SELECT pgrun_test.make_job(p_max_attempts => 5) AS c \gset
SELECT * FROM pgrun.continue_job(:'a', pgrun_test.claim_job(:'a'), 's', max_attempts => 1);
SELECT * FROM pgrun.continue_job(:'b', pgrun_test.claim_job(:'b'), 's', retry_delay => interval '1 hour');
SELECT * FROM pgrun.continue_job(:'c', pgrun_test.claim_job(:'c'), 's', retry_delay => interval '1 hour');
SELECT pgrun_test.claim_job(:'a') AS ta, pgrun_test.claim_job(:'b') AS tb, pgrun_test.claim_job(:'c') AS tc \gset

-- TEST: one batch, three rules
SELECT results_eq(
    format(
        'SELECT job_id, outcome, run_at FROM pgrun.fail_jobs(ARRAY[%L, %L, %L]::uuid[], ARRAY[%L, %L, %L]::uuid[], '
        'retry_delays => ARRAY[NULL, NULL, interval ''30 seconds''])',
        :'a', :'b', :'c', :'ta', :'tb', :'tc'
    ),
    format(
        'VALUES (%L::uuid, ''dead'', NULL::timestamptz), (%L, ''retry_scheduled'', ''2030-01-01 01:00:00+00''), '
        '(%L, ''retry_scheduled'', ''2030-01-01 00:00:30+00'')',
        :'a', :'b', :'c'
    ),
    'the step''s max_attempts 1 kills a; b waits the step''s hour; c''s explicit delay wins'
);
SELECT results_eq(
    format('SELECT reason FROM pgrun.job_dead_letters WHERE job_id = %L', :'a'),
    $$VALUES ('attempts_exhausted')$$,
    'a died of exhausted attempts'
);
SELECT results_eq(
    format('SELECT detail ->> ''run_at'' FROM pgrun.job_events WHERE job_id = %L ORDER BY id DESC LIMIT 1', :'b'),
    $$VALUES ('2030-01-01T01:00:00+00:00')$$,
    'b''s retry_scheduled event carries the step''s run_at'
);

-- TEST: the step's budget is the step's: b fails four more times before it dies
SELECT pgrun_test.freeze_time('2030-01-01 01:00:00+00');
CREATE TEMP TABLE outcomes (n serial, outcome text);
INSERT INTO outcomes (outcome)
SELECT outcome FROM pgrun.fail_job(:'b', pgrun_test.claim_job(:'b'), retry_delay => interval '0');
INSERT INTO outcomes (outcome)
SELECT outcome FROM pgrun.fail_job(:'b', pgrun_test.claim_job(:'b'), retry_delay => interval '0');
INSERT INTO outcomes (outcome)
SELECT outcome FROM pgrun.fail_job(:'b', pgrun_test.claim_job(:'b'), retry_delay => interval '0');
INSERT INTO outcomes (outcome)
SELECT outcome FROM pgrun.fail_job(:'b', pgrun_test.claim_job(:'b'), retry_delay => interval '0');
SELECT is(
    (SELECT string_agg(outcome, ',' ORDER BY n) FROM outcomes),
    'retry_scheduled,retry_scheduled,retry_scheduled,dead',
    'without a max_attempts override the job''s five attempts apply'
);
SELECT results_eq(
    format('SELECT attempt, max_attempts, step_retry_delay FROM pgrun.jobs WHERE id = %L', :'b'),
    $$VALUES (5, 5, interval '1 hour')$$,
    'five attempts of that step; the job''s settings are untouched'
);

SELECT * FROM finish();
ROLLBACK;
