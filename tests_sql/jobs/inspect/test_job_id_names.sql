-- The job's id has one name across the API: job_id. list_jobs rows and get_job's object carry
-- it beside id, the compatibility alias kept for existing clients, with the same value.
BEGIN;
SELECT plan(5);

-- SETUP
SELECT pgrun_test.put_job('mail.send', 'mail', 'queued') AS q1 \gset
SELECT pgrun_test.put_job('mail.send', 'mail', 'dead') AS d1 \gset
SELECT pgrun_test.put_dead_letter(:'d1');
SELECT pgrun.get_job(:'d1') AS doc \gset

-- TEST: list_jobs
SELECT results_eq(
    $$SELECT job_id FROM pgrun.list_jobs() ORDER BY job_id$$,
    format('VALUES (%L::uuid), (%L::uuid)', :'q1', :'d1'),
    'list_jobs rows carry job_id'
);
SELECT is(
    (SELECT count(*) FROM pgrun.list_jobs() WHERE job_id IS DISTINCT FROM id),
    0::bigint,
    'with the value of id, the alias'
);
SELECT is(
    (SELECT array_agg(a.name ORDER BY a.n) FILTER (WHERE a.mode = 't')
     FROM pg_proc AS p, unnest(p.proargnames, p.proargmodes) WITH ORDINALITY AS a (name, mode, n)
     WHERE p.oid = 'pgrun.list_jobs(text, text, text, uuid, uuid, uuid, integer)'::regprocedure),
    ARRAY[
        'id', 'job_type', 'queue', 'priority', 'status', 'run_at', 'attempt', 'total_attempts',
        'max_attempts', 'timeout_seconds', 'worker_id', 'lease_expires_at', 'heartbeat_at',
        'cancel_requested_at', 'cancel_reason', 'step', 'error_code', 'error_message',
        'organization_id', 'idempotency_key', 'workflow_run_id', 'workflow_step_key', 'schedule_id',
        'created_at', 'updated_at', 'started_at', 'finished_at', 'job_id'
    ]::text[],
    'id keeps its place (the first column) and job_id is added last: no existing column moves'
);

-- TEST: get_job
SELECT is((:'doc'::jsonb) ->> 'job_id', :'d1', 'get_job has job_id');
SELECT is((:'doc'::jsonb) ->> 'id', (:'doc'::jsonb) ->> 'job_id', 'and id, the alias, with the same value');

SELECT * FROM finish();
ROLLBACK;
