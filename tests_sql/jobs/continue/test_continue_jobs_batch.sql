-- continue_jobs: one statement for a batch of continuations. Each row answers its job in
-- input order: continued (run_at), cancelled (a pending cancel wins), lease_lost (with the
-- reason), state_too_large or state_invalid (the job still runs under its lease); nothing is
-- written for the last three and the rest of the batch is. The queues are notified as an
-- enqueue notifies them.
BEGIN;
SELECT plan(15);

-- SETUP: a, b, c continue; d has a cancel pending; e's token is stale; f is unknown; g's state
-- is over its type's cap; h's state is nested too deep
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT pgrun.upsert_job_definition('test.small', max_result_bytes => 2048);
SELECT job_id AS a, lease_token AS a_token FROM pgrun_test.running_job(p_job_type => 'test.mail') \gset
SELECT job_id AS b, lease_token AS b_token FROM pgrun_test.running_job(p_job_type => 'test.mail') \gset
SELECT job_id AS c, lease_token AS c_token FROM pgrun_test.running_job() \gset
SELECT job_id AS d, lease_token AS d_token FROM pgrun_test.running_job() \gset
SELECT job_id AS e FROM pgrun_test.running_job() \gset
SELECT gen_random_uuid() AS f \gset
SELECT job_id AS g, lease_token AS g_token FROM pgrun_test.running_job(p_job_type => 'test.small') \gset
SELECT job_id AS h, lease_token AS h_token FROM pgrun_test.running_job() \gset
UPDATE pgrun.jobs SET queue = 'mail' WHERE id IN (:'a', :'b');
UPDATE pgrun.jobs SET state = '{"kept": true}' WHERE id = :'c';
SELECT pgrun.cancel_job(:'d', 'stop');
SELECT pgrun_test.job_fingerprint(:'e') AS e_before \gset
SELECT pgrun_test.job_fingerprint(:'g') AS g_before \gset
SELECT pgrun_test.job_fingerprint(:'h') AS h_before \gset
SELECT pgrun_test.record_notifications();

CREATE TEMP TABLE outcome ON COMMIT DROP AS
SELECT *, row_number() OVER () AS n
FROM pgrun.continue_jobs(
    job_ids => ARRAY[:'b', :'e', :'a', :'f', :'g', :'c', :'d', :'h']::uuid[],
    lease_tokens => ARRAY[:'b_token', gen_random_uuid(), :'a_token', gen_random_uuid(), :'g_token', :'c_token',
        :'d_token', :'h_token']::uuid[],
    next_steps => ARRAY['two', 'x', 'two', 'x', 'x', 'three', 'next', 'x'],
    states => ARRAY[
        '{"n": 2}', NULL, '{"n": 1}', NULL, jsonb_build_object('s', repeat('y', 3000)), NULL, '{"d": 1}',
        ('{"s": ' || repeat('[', 100) || repeat(']', 100) || '}')::jsonb
    ]::jsonb[],
    delays => ARRAY['7 s', NULL, NULL, NULL, NULL, '1 min', NULL, NULL]::interval[],
    max_attempts => ARRAY[NULL, NULL, 5, NULL, NULL, NULL, NULL, NULL]::integer[],
    retry_delays => ARRAY[NULL, NULL, '30 s', NULL, NULL, NULL, NULL, NULL]::interval[]
);

-- TEST: one row per input, in input order, each with its outcome
SELECT results_eq(
    'SELECT job_id, outcome, run_at, lost_reason FROM outcome ORDER BY n',
    format(
        'VALUES (%L::uuid, ''continued'', ''2030-01-01 00:00:07+00''::timestamptz, NULL::text), '
        '(%L::uuid, ''lease_lost'', NULL, ''token_mismatch''), '
        '(%L::uuid, ''continued'', ''2030-01-01 00:00:00+00'', NULL), '
        '(%L::uuid, ''lease_lost'', NULL, ''unknown_job''), '
        '(%L::uuid, ''state_too_large'', NULL, NULL), '
        '(%L::uuid, ''continued'', ''2030-01-01 00:01:00+00'', NULL), '
        '(%L::uuid, ''cancelled'', NULL, NULL), '
        '(%L::uuid, ''state_invalid'', NULL, NULL)',
        :'b', :'e', :'a', :'f', :'g', :'c', :'d', :'h'
    ),
    'continued, lost, refused and cancelled jobs each answered in their place'
);

-- TEST: each continued job is queued at its own step, state, due time and step overrides
SELECT results_eq(
    format(
        'SELECT id, status, step, state, run_at, attempt, step_max_attempts, step_retry_delay, lease_token '
        'FROM pgrun.jobs WHERE id IN (%L, %L, %L) ORDER BY step, run_at',
        :'a', :'b', :'c'
    ),
    format(
        'VALUES (%L::uuid, ''queued'', ''three'', ''{"kept": true}''::jsonb, ''2030-01-01 00:01:00+00''::timestamptz, '
        '0, NULL::integer, NULL::interval, NULL::uuid), '
        '(%L::uuid, ''queued'', ''two'', ''{"n": 1}''::jsonb, ''2030-01-01 00:00:00+00'', 0, 5, ''30 s'', NULL), '
        '(%L::uuid, ''queued'', ''two'', ''{"n": 2}''::jsonb, ''2030-01-01 00:00:07+00'', 0, NULL, NULL, NULL)',
        :'c', :'a', :'b'
    ),
    'a NULL state keeps the job''s state; delays and overrides are per job'
);

-- TEST: the cancel request wins, with the step and state still stored
SELECT results_eq(
    format('SELECT status, step, state, finished_at FROM pgrun.jobs WHERE id = %L', :'d'),
    $$VALUES ('cancelled', 'next', '{"d": 1}'::jsonb, '2030-01-01 00:00:00+00'::timestamptz)$$,
    'the pending cancel ends the job'
);

-- TEST: nothing written for the lost and the refused
SELECT is(pgrun_test.job_fingerprint(:'e'), :'e_before', 'the stale lease: nothing written');
SELECT is(pgrun_test.job_fingerprint(:'g'), :'g_before', 'the state over the cap: nothing written');
SELECT is(pgrun_test.job_fingerprint(:'h'), :'h_before', 'the state too deep: nothing written');
SELECT results_eq(
    format('SELECT status FROM pgrun.jobs WHERE id IN (%L, %L)', :'g', :'h'),
    $$VALUES ('running'), ('running')$$,
    'the refused jobs still run under their leases'
);

-- TEST: one event each, recording the attempt that ran the step
SELECT results_eq(
    format(
        'SELECT job_id, event, outcome, detail ->> ''step'' FROM pgrun.job_events '
        'WHERE job_id IN (%L, %L, %L, %L) AND event IN (''continued'', ''cancelled'') ORDER BY detail ->> ''step'', event',
        :'a', :'b', :'c', :'d'
    ),
    format(
        'VALUES (%L::uuid, ''cancelled'', ''cancelled'', ''next''), (%L::uuid, ''continued'', ''continued'', ''three''), '
        '(%L::uuid, ''continued'', ''continued'', ''two''), (%L::uuid, ''continued'', ''continued'', ''two'')',
        :'d', :'c', least(:'a'::uuid, :'b'::uuid), greatest(:'a'::uuid, :'b'::uuid)
    ),
    'a continued event per continued job, a cancelled one for the cancelled job'
);

-- TEST: the continued jobs' queues told as an enqueue tells them (mail: one now, one in 7 s)
SELECT results_eq(
    'SELECT unnest(queues) AS q FROM notify_calls ORDER BY q',
    $$VALUES ('default 1893456060000'), ('mail'), ('mail 1893456007000')$$,
    'each queue once for its steps due now, once with the earliest due time of its later ones'
);

-- TEST: refusals of the whole batch, before anything is read: its arrays, an element's step,
-- delay, max_attempts
SELECT throws_ok(
    format('SELECT * FROM pgrun.continue_jobs(ARRAY[%L]::uuid[], ARRAY[%L]::uuid[], ARRAY[''x'', ''y''])', :'g', :'g_token'),
    'RQ003', 'job.invalid_batch', 'a next_steps array of another length'
);
SELECT throws_ok(
    format('SELECT * FROM pgrun.continue_jobs(ARRAY[%L]::uuid[], ARRAY[%L]::uuid[], NULL)', :'g', :'g_token'),
    'RQ003', 'job.invalid_step', 'no next_steps'
);
SELECT is(
    pgrun_test.error_detail(format(
        'SELECT * FROM pgrun.continue_jobs(ARRAY[%L, %L]::uuid[], ARRAY[%L, %L]::uuid[], ARRAY[''x'', ''  ''])',
        :'g', :'h', :'g_token', :'h_token'
    )),
    'next_step (element 2) ''  '' is NULL, blank or longer than 256 characters',
    'a blank step refuses the batch, naming its element'
);
SELECT throws_ok(
    format(
        'SELECT * FROM pgrun.continue_jobs(ARRAY[%L, %L]::uuid[], ARRAY[%L, %L]::uuid[], ARRAY[''x'', ''y''], '
        'delays => ARRAY[NULL, ''-1 s'']::interval[])',
        :'g', :'h', :'g_token', :'h_token'
    ),
    'RQ003', 'job.invalid_delay', 'a delay outside its range refuses the batch'
);
SELECT throws_ok(
    format(
        'SELECT * FROM pgrun.continue_jobs(ARRAY[%L, %L]::uuid[], ARRAY[%L, %L]::uuid[], ARRAY[''x'', ''y''], '
        'max_attempts => ARRAY[0, NULL])',
        :'g', :'h', :'g_token', :'h_token'
    ),
    'RQ003', 'job.invalid_max_attempts', 'a max_attempts outside its range refuses the batch'
);
SELECT is(pgrun_test.job_fingerprint(:'g'), :'g_before', 'the refused batches wrote nothing');

SELECT * FROM finish();
ROLLBACK;
