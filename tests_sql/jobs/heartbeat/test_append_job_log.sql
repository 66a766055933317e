-- append_job_log adds a line to the current attempt under the lease; it is not a
-- transition. Huge messages are truncated; bad levels and fields are rejected; without a
-- live lease nothing is written.
BEGIN;
SELECT plan(12);

-- SETUP: a job on its second attempt
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT pgrun_test.make_job() AS job \gset
SELECT * FROM pgrun.fail_job(:'job', pgrun_test.claim_job(:'job'), retry_delay => '0');
SELECT pgrun_test.claim_job(:'job', p_lease_seconds => 30) AS token \gset

-- TEST: a line with fields, and one with the default level
SELECT ok(
    pgrun.append_job_log(:'job', :'token', 'sending', 'debug', '{"to": "a@b"}') IS NOT NULL,
    'returns the id of the new line'
);
SELECT ok(pgrun.append_job_log(:'job', :'token', 'sent') IS NOT NULL, 'level and fields are optional');
SELECT ok(pgrun.append_job_log(:'job', :'token', 'again', NULL) IS NOT NULL, 'a NULL level means info');
SELECT results_eq(
    format('SELECT attempt, level, message, fields FROM pgrun.job_logs WHERE job_id = %L ORDER BY id', :'job'),
    $$VALUES (2, 'debug', 'sending', '{"to": "a@b"}'::jsonb), (2, 'info', 'sent', NULL), (2, 'info', 'again', NULL)$$,
    'the lines belong to the current attempt (2), levels default to info'
);
SELECT is(pgrun_test.events_of(:'job'), 'retry_scheduled', 'logging writes no event');

-- TEST: a huge message is truncated
SELECT pgrun.append_job_log(:'job', :'token', repeat('z', 50000), 'error');
SELECT results_eq(
    format('SELECT length(message), right(message, 12) FROM pgrun.job_logs WHERE job_id = %L AND level = ''error''', :'job'),
    $$VALUES (8192, ' [truncated]')$$,
    'a 50 000-character message is kept as 8192 characters ending in " [truncated]"'
);

-- TEST: bad input
SELECT throws_ok(
    format('SELECT pgrun.append_job_log(%L, %L, ''x'', ''fatal'')', :'job', :'token'),
    'RQ003', 'job.invalid_log_entry', 'an unknown level'
);
SELECT throws_ok(
    format('SELECT pgrun.append_job_log(%L, %L, ''x'', ''info'', ''"text"'')', :'job', :'token'),
    'RQ003', 'job.invalid_log_entry', 'fields that are not an object'
);
SELECT throws_ok(
    format('SELECT pgrun.append_job_log(%L, %L, NULL)', :'job', :'token'),
    'RQ003', 'job.invalid_argument', 'a NULL message'
);

-- TEST: a wrong token or an expired lease writes nothing
SELECT throws_ok(
    format('SELECT pgrun.append_job_log(%L, %L, ''late'')', :'job', gen_random_uuid()),
    'RQ004', 'job.lease_lost', 'a wrong token raises job.lease_lost'
);
SELECT pgrun_test.freeze_time('2030-01-01 00:00:30+00');
SELECT throws_ok(
    format('SELECT pgrun.append_job_log(%L, %L, ''late'')', :'job', :'token'),
    'RQ004', 'job.lease_lost', 'an expired lease raises job.lease_lost'
);
SELECT is(
    (SELECT count(*) FROM pgrun.job_logs WHERE job_id = :'job' AND message = 'late'),
    0::bigint,
    'no line was written without a live lease'
);

SELECT * FROM finish();
ROLLBACK;
