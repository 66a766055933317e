-- cancel_job on a running job only asks: the job keeps running (and its lease) until the
-- worker's next write; asking twice writes one event.
BEGIN;
SELECT plan(5);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT job_id AS job, lease_token AS token FROM pgrun_test.running_job() \gset
SELECT pgrun_test.advance_time(interval '3 seconds');

-- TEST: a request, not a stop
SELECT is(pgrun.cancel_job(:'job', reason => 'stop it'), 'cancel_requested', 'returns cancel_requested');
SELECT results_eq(
    format('SELECT status, lease_token, cancel_requested_at, cancel_reason, finished_at FROM pgrun.jobs WHERE id = %L', :'job'),
    format('VALUES (''running'', %L::uuid, ''2030-01-01 00:00:03+00''::timestamptz, ''stop it'', NULL::timestamptz)', :'token'),
    'the job still runs under the same lease, with the request recorded'
);
SELECT results_eq(
    format('SELECT event, from_status, to_status, worker_id FROM pgrun.job_events WHERE job_id = %L ORDER BY id', :'job'),
    $$VALUES ('cancel_requested', 'running', 'running', 'worker-1')$$,
    'one cancel_requested event (the claim wrote none)'
);

-- TEST: asking again changes nothing
SELECT is(pgrun.cancel_job(:'job', reason => 'again'), 'cancel_requested', 'a second request returns the same');
SELECT results_eq(
    format('SELECT cancel_requested_at, cancel_reason, (SELECT count(*) FROM pgrun.job_events WHERE job_id = %L) FROM pgrun.jobs WHERE id = %L', :'job', :'job'),
    $$VALUES ('2030-01-01 00:00:03+00'::timestamptz, 'stop it', 1::bigint)$$,
    'the first request stands and no event is added'
);

SELECT * FROM finish();
ROLLBACK;
