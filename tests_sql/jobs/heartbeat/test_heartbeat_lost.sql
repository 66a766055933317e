-- heartbeat_jobs reports lost leases (renewed = false) and never revives or steals them:
-- unknown job, wrong token, another worker, expired, not running. The live lease in the
-- same batch is still renewed.
BEGIN;
SELECT plan(4);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT job_id AS live, lease_token AS live_token FROM pgrun_test.running_job(p_lease_seconds => 60) \gset
SELECT job_id AS wrong, lease_token AS wrong_token FROM pgrun_test.running_job(p_lease_seconds => 60) \gset
SELECT job_id AS theirs, lease_token AS theirs_token FROM pgrun_test.running_job('worker-2', 60) \gset
SELECT job_id AS expired, lease_token AS expired_token FROM pgrun_test.running_job(p_lease_seconds => 10) \gset
SELECT job_id AS done, lease_token AS done_token FROM pgrun_test.running_job(p_lease_seconds => 60) \gset
SELECT pgrun.complete_job(:'done', :'done_token');
SELECT gen_random_uuid() AS unknown \gset
SELECT pgrun_test.freeze_time('2030-01-01 00:00:10+00');
SELECT md5(string_agg(pgrun_test.job_fingerprint(id), ',' ORDER BY id)) AS before
FROM unnest(ARRAY[:'wrong', :'theirs', :'expired', :'done']::uuid[]) AS id \gset

-- TEST: per-row verdicts
SELECT results_eq(
    format(
        'SELECT job_id, renewed, lease_expires_at, cancel_requested FROM pgrun.heartbeat_jobs(''worker-1'', 60, '
        'ARRAY[%L, %L, %L, %L, %L, %L]::uuid[], ARRAY[%L, %L, %L, %L, %L, %L]::uuid[])',
        :'unknown', :'wrong', :'theirs', :'expired', :'done', :'live',
        gen_random_uuid(), gen_random_uuid(), :'theirs_token', :'expired_token', :'done_token', :'live_token'
    ),
    format(
        'VALUES (%L::uuid, false, NULL::timestamptz, false), (%L::uuid, false, NULL, false), '
        '(%L::uuid, false, NULL, false), (%L::uuid, false, NULL, false), (%L::uuid, false, NULL, false), '
        '(%L::uuid, true, ''2030-01-01 00:01:10+00''::timestamptz, false)',
        :'unknown', :'wrong', :'theirs', :'expired', :'done', :'live'
    ),
    'unknown, wrong token, other worker, expired (exactly now) and finished: lost; the live one renewed'
);

-- TEST: nothing lost was touched
SELECT is(
    (SELECT md5(string_agg(pgrun_test.job_fingerprint(id), ',' ORDER BY id))
     FROM unnest(ARRAY[:'wrong', :'theirs', :'expired', :'done']::uuid[]) AS id),
    :'before',
    'lost leases are not renewed, revived or taken over'
);
SELECT is(
    (SELECT lease_expires_at FROM pgrun.jobs WHERE id = :'expired'),
    '2030-01-01 00:00:10+00'::timestamptz,
    'the expired lease stays expired'
);

-- TEST: the expired job's worker cannot write any more
SELECT throws_ok(
    format('SELECT pgrun.complete_job(%L, %L)', :'expired', :'expired_token'),
    'RQ004', 'job.lease_lost', 'after a lost heartbeat the old owner''s write is refused'
);

SELECT * FROM finish();
ROLLBACK;
