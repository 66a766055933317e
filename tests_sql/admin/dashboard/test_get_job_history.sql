-- get_job_history: a job's events and log lines, newest max_rows in order, without the lease
-- token; the job's enqueued event derived from the job row (none is stored since issue 15),
-- or the stored one of an older job; the succeeded event derived from the job row (none is
-- stored since 0023), or the stored one of an older job; tenancy; bad arguments.
BEGIN;
SELECT plan(20);

-- SETUP: a job that failed once (with two log lines) and then succeeded
SELECT pgrun_test.freeze_time('2030-01-01 12:00:00+00');
SELECT j.job_id AS job, j.lease_token AS token FROM pgrun_test.running_job('w-1') AS j \gset
SELECT pgrun.append_job_log(:'job', :'token', 'connecting', 'info', '{"host": "smtp"}');
SELECT pgrun.append_job_log(:'job', :'token', 'refused', 'error');
SELECT pgrun.fail_job(:'job', :'token', 'smtp_421', 'try later', retry_delay => interval '0');
SELECT pgrun_test.claim_job(:'job', 'w-2') AS token2 \gset
SELECT pgrun.complete_job(:'job', :'token2', '{"ok": true}');
SELECT pgrun_test.make_job(p_organization_id => 'a0000000-0000-0000-0000-00000000000a') AS org_job \gset

-- TEST: events, oldest first, with the attempt's outcome and error, never the lease token
SELECT is(
    (SELECT string_agg(e ->> 'event', ',' ORDER BY n)
     FROM jsonb_array_elements(pgrun.get_job_history(:'job') -> 'events') WITH ORDINALITY AS x (e, n)),
    'enqueued,retry_scheduled,succeeded',
    'every transition, oldest first: the creation, then each attempt''s end'
);
SELECT is(
    pgrun.get_job_history(:'job') -> 'events' -> 0,
    to_jsonb(jsonb_populate_record(NULL::pgrun.job_events, jsonb_build_object(
        'event', 'enqueued', 'to_status', 'queued', 'attempt', 0,
        'created_at', (SELECT created_at FROM pgrun.jobs WHERE id = :'job')
    ))) - 'job_id' - 'lease_token' || '{"derived": true}',
    'the enqueued event is derived from the job row: NULL -> queued, attempt 0, its created_at, id NULL, derived'
);
SELECT is(
    pgrun.get_job_history(:'job') -> 'events' -> 2,
    to_jsonb(jsonb_populate_record(NULL::pgrun.job_events, jsonb_build_object(
        'event', 'succeeded', 'from_status', 'running', 'to_status', 'succeeded', 'attempt', 2,
        'worker_id', 'w-2', 'outcome', 'succeeded',
        'started_at', (SELECT started_at FROM pgrun.jobs WHERE id = :'job'),
        'created_at', (SELECT finished_at FROM pgrun.jobs WHERE id = :'job')
    ))) - 'job_id' - 'lease_token' || '{"derived": true}',
    'the succeeded event is derived from the job row: running -> succeeded, its attempt, worker, start and end, id NULL, derived'
);
SELECT is(
    (SELECT string_agg((n - 1)::text, ',' ORDER BY n)
     FROM jsonb_array_elements(pgrun.get_job_history(:'job') -> 'events') WITH ORDINALITY AS x (e, n)
     WHERE e ? 'derived'),
    '0,2',
    'only the derived events say so: the first and the last'
);
SELECT is(
    (SELECT ((e ->> 'started_at')::timestamptz, e ->> 'worker_id')
     FROM jsonb_array_elements(pgrun.get_job_history(:'job') -> 'events') AS e
     WHERE e ->> 'event' = 'succeeded'),
    ((SELECT started_at FROM pgrun.jobs WHERE id = :'job'), 'w-2'::text),
    'the claim that ran is on the event that ended it: its start and worker'
);
SELECT is(
    (SELECT (e ->> 'outcome', e ->> 'error_code', e ->> 'error_message', e ->> 'worker_id')
     FROM jsonb_array_elements(pgrun.get_job_history(:'job') -> 'events') AS e
     WHERE e ->> 'event' = 'retry_scheduled'),
    ('failed'::text, 'smtp_421'::text, 'try later'::text, 'w-1'::text),
    'the event that ended an attempt carries its outcome, error and worker'
);
SELECT ok(
    NOT EXISTS (
        SELECT FROM jsonb_array_elements(pgrun.get_job_history(:'job') -> 'events') AS e
        WHERE e ? 'lease_token' OR e ? 'job_id'
    ),
    'no event hands out a lease token'
);

-- TEST: log lines
SELECT results_eq(
    $$SELECT (l ->> 'attempt')::integer, l ->> 'level', l ->> 'message', l -> 'fields'
      FROM jsonb_array_elements(pgrun.get_job_history('$$ || :'job' || $$') -> 'log_lines') AS l$$,
    $$VALUES (1, 'info'::text, 'connecting'::text, '{"host": "smtp"}'::jsonb), (1, 'error', 'refused', 'null')$$,
    'log lines in order, with attempt, level and fields'
);
SELECT is(
    (SELECT (h ->> 'events_more', h ->> 'log_lines_more') FROM pgrun.get_job_history(:'job') AS h),
    ('false'::text, 'false'::text),
    'nothing older left out'
);

-- TEST: max_rows keeps the newest
SELECT is(
    (SELECT (string_agg(e ->> 'event', ',' ORDER BY n), min(h ->> 'events_more'), min(h ->> 'log_lines_more'))
     FROM pgrun.get_job_history(:'job', max_rows => 2) AS h
     CROSS JOIN LATERAL jsonb_array_elements(h -> 'events') WITH ORDINALITY AS x (e, n)),
    ('retry_scheduled,succeeded'::text, 'true'::text, 'false'::text),
    'max_rows 2: the two newest events in order, events_more set (the derived one is older); both log lines'
);
SELECT is(
    (SELECT (jsonb_array_length(h -> 'events'), h ->> 'events_more') FROM pgrun.get_job_history(:'job', max_rows => 3) AS h),
    (3, 'false'::text),
    'max_rows 3: the derived event fits, nothing more'
);
SELECT is(
    (SELECT (h -> 'events' -> 0 ->> 'event', jsonb_array_length(h -> 'events'), h ->> 'events_more')
     FROM pgrun.get_job_history(:'job', max_rows => 1) AS h),
    ('succeeded'::text, 1, 'true'::text),
    'max_rows 1: the derived succeeded event alone, the newest, events_more set'
);
SELECT is(
    (SELECT h -> 'log_lines' -> 0 ->> 'message' FROM pgrun.get_job_history(:'job', max_rows => 1) AS h),
    'refused',
    'and the newest log line'
);

-- TEST: bad input and tenancy
SELECT throws_ok(
    format('SELECT pgrun.get_job_history(%L, max_rows => 0)', :'job'),
    'RQ003', 'job.invalid_max_rows', 'max_rows 0 is refused'
);
SELECT throws_ok(
    'SELECT pgrun.get_job_history(''6b1f4ac2-58a1-4c8e-9a55-3d0f2a7c9e11'')',
    'RQ002', 'job.not_found', 'an unknown job is not found'
);
SELECT is(
    pgrun_test.as_role('pgrun_tap_reader', format('SELECT pgrun.get_job_history(%L)::text', :'org_job')),
    'RQ002 job.not_found',
    'another organization''s job is not found for a reader without a tenancy row'
);
SELECT is(
    pgrun_test.as_role(
        'pgrun_tap_reader', format('SELECT jsonb_array_length(pgrun.get_job_history(%L) -> ''events'')', :'job')
    ),
    '3',
    'a reader reads the history of a job it may see'
);

-- TEST: a job created before issue 15 has its enqueued row stored: shown as it is, not twice
SELECT pgrun_test.make_job() AS old_job \gset
INSERT INTO pgrun.job_events (job_id, event, from_status, to_status, attempt, created_at)
VALUES (:'old_job', 'enqueued', NULL, 'queued', 0, '2030-01-01 11:00:00+00');
INSERT INTO pgrun.job_events (job_id, event, from_status, to_status, attempt, worker_id, created_at)
VALUES (:'old_job', 'claimed', 'queued', 'running', 1, 'w-old', '2030-01-01 11:00:01+00');
SELECT is(
    (SELECT (string_agg(e ->> 'event', ',' ORDER BY n), count(*) FILTER (WHERE e ? 'derived' OR e -> 'id' = 'null'))
     FROM jsonb_array_elements(pgrun.get_job_history(:'old_job') -> 'events') WITH ORDINALITY AS x (e, n)),
    ('enqueued,claimed'::text, 0::bigint),
    'the stored enqueued and claimed rows, nothing derived'
);

-- TEST: a job that succeeded before 0023 has its succeeded row stored and no token on the job
-- row: the stored row is its record, shown once, in the history and the attempts
SELECT job_id AS older, lease_token AS older_token FROM pgrun_test.running_job('w-old') \gset
UPDATE pgrun.jobs SET status = 'succeeded', finished_at = pgrun.now(), lease_token = NULL, lease_expires_at = NULL
WHERE id = :'older';
INSERT INTO pgrun.job_events (
    job_id, event, from_status, to_status, attempt, worker_id, outcome, lease_token, started_at, created_at
)
SELECT id, 'succeeded', 'running', 'succeeded', 1, 'w-old', 'succeeded', :'older_token', started_at, finished_at
FROM pgrun.jobs WHERE id = :'older';
SELECT is(
    (SELECT (string_agg(e ->> 'event', ',' ORDER BY n), count(*) FILTER (WHERE e ? 'derived'))
     FROM jsonb_array_elements(pgrun.get_job_history(:'older') -> 'events') WITH ORDINALITY AS x (e, n)),
    ('enqueued,succeeded'::text, 1::bigint),
    'the stored succeeded row, the creation derived'
);
SELECT results_eq(
    format('SELECT attempt, outcome, lease_token FROM pgrun.job_attempts WHERE job_id = %L', :'older'),
    format('VALUES (1, ''succeeded''::text, %L::uuid)', :'older_token'),
    'job_attempts shows its attempt once, from the stored row'
);

SELECT * FROM finish();
ROLLBACK;
