-- report_progress stores progress under the lease; it is not a transition. Without a
-- live lease it raises job.lease_lost and stores nothing; bad progress is rejected.
BEGIN;
SELECT plan(11);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT job_id AS job, lease_token AS token FROM pgrun_test.running_job(p_lease_seconds => 30) \gset

-- TEST: stored, replacing the previous value
SELECT is(pgrun.report_progress(:'job', :'token', '{"done": 1, "total": 10}'), false, 'accepted, no cancel pending');
SELECT is(pgrun.report_progress(:'job', :'token', '{"done": 2, "total": 10}'), false, 'accepted again');
SELECT is(
    (SELECT progress FROM pgrun.jobs WHERE id = :'job'),
    '{"done": 2, "total": 10}'::jsonb,
    'the latest progress replaces the previous one'
);
SELECT is(pgrun_test.events_of(:'job'), '', 'progress writes no event');

-- TEST: a wrong token or an expired lease
SELECT throws_ok(
    format('SELECT pgrun.report_progress(%L, %L, ''{"done": 9}'')', :'job', gen_random_uuid()),
    'RQ004', 'job.lease_lost', 'a wrong token raises job.lease_lost'
);
SELECT pgrun_test.freeze_time('2030-01-01 00:00:30+00');
SELECT throws_ok(
    format('SELECT pgrun.report_progress(%L, %L, ''{"done": 9}'')', :'job', :'token'),
    'RQ004', 'job.lease_lost', 'an expired lease raises job.lease_lost'
);
SELECT is(
    (SELECT progress FROM pgrun.jobs WHERE id = :'job'),
    '{"done": 2, "total": 10}'::jsonb,
    'the refused progress was not stored'
);

-- TEST: bad input
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT throws_ok(
    format('SELECT pgrun.report_progress(%L, %L, ''[1, 2]'')', :'job', :'token'),
    'RQ003', 'job.invalid_progress', 'progress that is not an object'
);
SELECT throws_ok(
    format('SELECT pgrun.report_progress(%L, %L, NULL)', :'job', :'token'),
    'RQ003', 'job.invalid_progress', 'NULL progress'
);
SELECT throws_ok(
    format('SELECT pgrun.report_progress(%L, %L, jsonb_build_object(''blob'', repeat(''x'', 70000)))', :'job', :'token'),
    'RQ003', 'job.invalid_progress', 'progress over 64 KiB'
);
SELECT throws_ok(
    format('SELECT pgrun.report_progress(NULL, %L, ''{}'')', :'token'),
    'RQ003', 'job.invalid_argument', 'a NULL job_id'
);

SELECT * FROM finish();
ROLLBACK;
