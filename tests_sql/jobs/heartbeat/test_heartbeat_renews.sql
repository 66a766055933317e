-- heartbeat_jobs renews every owned, live lease in the batch to now + lease_seconds, and
-- writes no event.
BEGIN;
SELECT plan(5);

-- SETUP: two jobs under 30 s leases; 20 s later the worker renews for 60 s
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT job_id AS a, lease_token AS a_token FROM pgrun_test.running_job(p_lease_seconds => 30) \gset
SELECT job_id AS b, lease_token AS b_token FROM pgrun_test.running_job(p_lease_seconds => 30) \gset
SELECT pgrun_test.freeze_time('2030-01-01 00:00:20+00');

-- TEST: one row per input job, in input order, renewed
SELECT results_eq(
    format(
        'SELECT * FROM pgrun.heartbeat_jobs(''worker-1'', 60, ARRAY[%L, %L]::uuid[], ARRAY[%L, %L]::uuid[])',
        :'b', :'a', :'b_token', :'a_token'
    ),
    format(
        'VALUES (%L::uuid, true, ''2030-01-01 00:01:20+00''::timestamptz, false), '
        '(%L::uuid, true, ''2030-01-01 00:01:20+00''::timestamptz, false)',
        :'b', :'a'
    ),
    'both leases now end lease_seconds from now; rows in input order'
);

-- TEST: the rows hold the new lease and the heartbeat time
SELECT results_eq(
    format('SELECT lease_expires_at, heartbeat_at, lease_token FROM pgrun.jobs WHERE id = %L', :'a'),
    format('VALUES (''2030-01-01 00:01:20+00''::timestamptz, ''2030-01-01 00:00:20+00''::timestamptz, %L::uuid)', :'a_token'),
    'the lease is extended in place, same token'
);

-- TEST: the renewed lease is honoured past the old expiry
SELECT pgrun_test.freeze_time('2030-01-01 00:00:45+00');
SELECT is(pgrun.complete_job(:'a', :'a_token'), 'succeeded', 'a write after the old expiry succeeds');

-- TEST: no events for heartbeats
SELECT is(pgrun_test.events_of(:'b'), '', 'a heartbeat is not a transition: no event');

-- TEST: an empty batch
SELECT is_empty(
    'SELECT * FROM pgrun.heartbeat_jobs(''worker-1'', 60, ''{}''::uuid[], ''{}''::uuid[])',
    'an empty batch returns no rows'
);

SELECT * FROM finish();
ROLLBACK;
