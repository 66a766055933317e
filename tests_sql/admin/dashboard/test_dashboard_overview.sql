-- dashboard_overview: live counts per queue and type (with retrying and dead), the last hour
-- per minute (finished by status, start latency), the workers seen, tenancy, and the cap on
-- the dead-letter read.
BEGIN;
SELECT plan(12);

-- SETUP: now is 12:00:30; the window starts at 11:01
SELECT pgrun_test.freeze_time('2030-01-01 12:00:30+00');
-- mail.send: two ready (the oldest due 11:50, one of them retrying), one delayed, one running
SELECT pgrun_test.put_job('mail.send', 'mail', 'queued', p_run_at => '2030-01-01 11:50:00+00');
SELECT pgrun_test.put_job('mail.send', 'mail', 'queued', p_run_at => '2030-01-01 11:59:00+00') AS retrying \gset
UPDATE pgrun.jobs SET attempt = 1, total_attempts = 1 WHERE id = :'retrying';
SELECT pgrun_test.put_job('mail.send', 'mail', 'queued', p_run_at => '2030-01-01 12:30:00+00');
SELECT pgrun_test.put_job(
    'mail.send', 'mail', 'running',
    p_run_at => '2030-01-01 11:59:30+00', p_started_at => '2030-01-01 11:59:40+00'
);
-- two successes at 11:58 (waits 2 s and 4 s) by worker w-2, one long ago
SELECT pgrun_test.put_job(
    'mail.send', 'mail', 'succeeded',
    p_run_at => '2030-01-01 11:58:00+00'::timestamptz - n * interval '2 seconds',
    p_started_at => '2030-01-01 11:58:00+00', p_finished_at => '2030-01-01 11:58:10+00'
)
FROM generate_series(1, 2) AS n;
UPDATE pgrun.jobs SET worker_id = 'w-2' WHERE status = 'succeeded';
SELECT pgrun_test.put_job(
    'mail.send', 'mail', 'succeeded',
    p_run_at => '2030-01-01 10:00:00+00', p_started_at => '2030-01-01 10:00:00+00',
    p_finished_at => '2030-01-01 10:00:01+00'
);
-- dead: one at 11:59:05 and one two hours ago (both still dead), one requeued since
SELECT pgrun_test.put_job(
    'mail.send', 'mail', 'dead', p_started_at => '2030-01-01 11:59:00+00', p_finished_at => '2030-01-01 11:59:05+00'
) AS dead_now \gset
SELECT pgrun_test.put_dead_letter(:'dead_now');
SELECT pgrun_test.put_job('mail.send', 'mail', 'dead', p_finished_at => '2030-01-01 10:00:00+00') AS dead_old \gset
SELECT pgrun_test.put_dead_letter(:'dead_old');
SELECT pgrun_test.put_job('mail.send', 'mail', 'queued', p_run_at => '2030-01-01 13:00:00+00') AS requeued \gset
SELECT pgrun_test.put_dead_letter(:'requeued');
UPDATE pgrun.job_dead_letters SET requeued_at = '2030-01-01 11:00:00+00' WHERE job_id = :'requeued';
-- report.build: dead only, and paused
SELECT pgrun_test.put_job('report.build', 'reports', 'dead', p_finished_at => '2030-01-01 09:00:00+00') AS dead_report \gset
SELECT pgrun_test.put_dead_letter(:'dead_report');
SELECT pgrun.set_job_runtime_config('report.build', paused => true);
SELECT pgrun.set_job_runtime_config('mail.send', max_concurrency => 4);
-- another organization's job
SELECT pgrun_test.put_job(
    'mail.send', 'mail', 'queued', p_run_at => '2030-01-01 11:00:00+00',
    p_organization_id => 'a0000000-0000-0000-0000-00000000000a'
);

-- TEST: the live counts, per queue and type, as an admin (every organization)
SELECT results_eq(
    $$SELECT d.queue, d.job_type, d.ready, d.delayed, d.running, d.retrying, d.dead, d.oldest_ready_seconds, d.paused,
             d.max_concurrency
      FROM jsonb_to_recordset(pgrun.dashboard_overview() -> 'depth') AS d (
          queue text, job_type text, ready bigint, delayed bigint, running bigint, retrying bigint, dead bigint,
          oldest_ready_seconds double precision, paused boolean, max_concurrency integer)$$,
    $$VALUES ('mail'::text, 'mail.send'::text, 3::bigint, 2::bigint, 1::bigint, 1::bigint, 2::bigint, 3630::double precision, false, 4),
             ('reports', 'report.build', 0, 0, 0, 0, 1, NULL, true, NULL)$$,
    'ready, delayed, running, retrying (attempt > 0) and still-dead jobs per queue and type, the type''s '
    'pause and cap; a dead-only type is listed'
);
SELECT is(
    (pgrun.dashboard_overview() ->> 'oldest_ready_seconds')::double precision, 3630::double precision,
    'the oldest ready job has waited since 11:00'
);

-- TEST: the hour, per minute
SELECT is(jsonb_array_length(pgrun.dashboard_overview() -> 'minutes'), 60, 'sixty minutes');
SELECT is(
    (SELECT array_agg(m ->> 'minute' ORDER BY n)
     FROM jsonb_array_elements(pgrun.dashboard_overview() -> 'minutes') WITH ORDINALITY AS e (m, n)
     WHERE n IN (1, 60))::timestamptz[],
    ARRAY['2030-01-01 11:01:00+00', '2030-01-01 12:00:00+00']::timestamptz[],
    'from 11:01 to the current minute, oldest first'
);
SELECT results_eq(
    $$SELECT m.minute, m.succeeded, m.dead, m.cancelled, m.started, m.latency_p50_seconds, m.latency_p95_seconds
      FROM jsonb_to_recordset(pgrun.dashboard_overview() -> 'minutes') AS m (
          minute timestamptz, succeeded bigint, dead bigint, cancelled bigint, started bigint,
          latency_p50_seconds double precision, latency_p95_seconds double precision)
      WHERE m.succeeded + m.dead + m.cancelled + m.started > 0$$,
    $$VALUES ('2030-01-01 11:58:00+00'::timestamptz, 2::bigint, 0::bigint, 0::bigint, 2::bigint, 3::double precision, 3.9::double precision),
             ('2030-01-01 11:59:00+00', 0, 1, 0, 2, 5, 9.5)$$,
    'finished by status in the minute they finished; start waits (started_at - run_at) of finished and running jobs by start minute'
);

-- TEST: workers
SELECT results_eq(
    $$SELECT w.worker_id, w.running, w.last_seen_at
      FROM jsonb_to_recordset(pgrun.dashboard_overview() -> 'workers') AS w (
          worker_id text, running bigint, last_seen_at timestamptz)$$,
    $$VALUES ('worker-1'::text, 1::bigint, '2030-01-01 11:59:40+00'::timestamptz),
             ('w-2', 0, '2030-01-01 11:58:10+00')$$,
    'the running job''s worker, then the one that finished jobs in the hour, most recent first'
);

-- TEST: limits not reached
SELECT is(
    (SELECT (o ->> 'dead_capped', o ->> 'activity_capped') FROM pgrun.dashboard_overview() AS o),
    ('false'::text, 'false'::text),
    'neither bounded read reached its limit'
);

-- TEST: tenancy
SELECT is(
    (pgrun.dashboard_overview('a0000000-0000-0000-0000-00000000000a') -> 'depth'),
    '[{"queue": "mail", "job_type": "mail.send", "ready": 1, "delayed": 0, "running": 0, "retrying": 0, "dead": 0,
       "oldest_ready_seconds": 3630, "paused": false, "max_concurrency": 4}]'::jsonb,
    'an admin naming an organization sees its jobs only'
);
SELECT is(
    pgrun_test.as_role(
        'pgrun_tap_reader',
        $$SELECT string_agg(format('%s:%s', d ->> 'job_type', d ->> 'ready'), ',')
          FROM jsonb_array_elements(pgrun.dashboard_overview() -> 'depth') AS d$$
    ),
    'mail.send:2,report.build:0',
    'a reader without a tenancy row sees the work without an organization only'
);
SELECT is(
    pgrun_test.as_role(
        'pgrun_tap_worker', $$SELECT pgrun.dashboard_overview()::text$$
    ),
    '42501 permission denied for function dashboard_overview',
    'a worker may not call it'
);

-- TEST: the dead-letter read is bounded
INSERT INTO pgrun.job_dead_letters (job_id, job_type, queue, attempt, reason)
SELECT pgrun_test.put_job('bulk.job', 'bulk', 'dead', p_finished_at => '2030-01-01 08:00:00+00'), 'bulk.job', 'bulk', 1, 'non_retryable'
FROM generate_series(1, 10000);
SELECT is(
    (SELECT (o ->> 'dead_capped')::boolean FROM pgrun.dashboard_overview() AS o), true,
    'ten thousand and more open dead letters: dead_capped'
);
SELECT is(
    (SELECT sum((d ->> 'dead')::bigint) FROM jsonb_array_elements(pgrun.dashboard_overview() -> 'depth') AS d),
    10000::numeric,
    'only the newest 10,000 open dead letters are read'
);

SELECT * FROM finish();
ROLLBACK;
