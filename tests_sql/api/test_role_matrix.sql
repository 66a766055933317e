-- The role x function matrix (docs/security.md), pinned by calling every public function as a
-- member of each pgrun role and as a role with none: allowed, or 42501 "permission denied".
-- Calls pass NULL for every argument, so an allowed call mostly stops at input validation;
-- what matters here is whether PostgreSQL let the role in. The expected matrix is written out
-- below, independently of plpgsql/admin/security.sql, and must name every public function.
BEGIN;
SELECT plan(7);

-- SETUP
CREATE TEMP TABLE expected (function_name text PRIMARY KEY, roles text[]) ON COMMIT DROP;
INSERT INTO expected VALUES
    ('now', '{admin,producer,worker,reader}'),
    ('uuidv7', '{admin,producer,worker,reader}'),
    ('schema_version', '{admin,producer,worker,reader}'),
    ('enqueue_job', '{admin,producer}'),
    ('enqueue_jobs', '{admin,producer}'),
    ('cancel_job', '{admin,producer}'),
    ('requeue_job', '{admin,producer}'),
    ('enqueue_workflow', '{admin,producer}'),
    ('append_workflow_steps', '{admin,producer}'),
    ('cancel_workflow_run', '{admin,producer}'),
    ('complete_external_step', '{admin,producer}'),
    ('pause_schedule', '{admin,producer}'),
    ('resume_schedule', '{admin,producer}'),
    ('delete_schedule', '{admin,producer}'),
    ('upsert_schedule', '{admin,producer,worker}'),
    ('upsert_job_definition', '{admin,worker}'),
    ('get_job', '{admin,producer,reader}'),
    ('list_jobs', '{admin,producer,reader}'),
    ('get_workflow_run', '{admin,producer,reader}'),
    ('list_workflow_runs', '{admin,producer,reader}'),
    ('list_schedules', '{admin,producer,reader}'),
    ('queue_depth', '{admin,producer,reader}'),
    ('job_metrics', '{admin,producer,reader}'),
    ('dashboard_overview', '{admin,producer,reader}'),
    ('get_job_history', '{admin,producer,reader}'),
    ('count_jobs', '{admin,producer,reader}'),
    ('claim_jobs', '{admin,worker}'),
    ('next_run_at', '{admin,worker}'),
    ('heartbeat_jobs', '{admin,worker}'),
    ('report_progress', '{admin,worker}'),
    ('append_job_log', '{admin,worker}'),
    ('append_job_logs', '{admin,worker}'),
    ('complete_job', '{admin,worker}'),
    ('complete_jobs', '{admin,worker}'),
    ('fail_job', '{admin,worker}'),
    ('fail_jobs', '{admin,worker}'),
    ('continue_job', '{admin,worker}'),
    ('continue_jobs', '{admin,worker}'),
    ('release_jobs', '{admin,worker}'),
    ('reap_expired_leases', '{admin,worker}'),
    ('claim_due_schedules', '{admin,worker}'),
    ('fire_schedule', '{admin,worker}'),
    ('pause_unplannable_schedule', '{admin,worker}'),
    ('purge_finished_jobs', '{admin}'),
    ('set_job_runtime_config', '{admin}'),
    ('run_schedule_now', '{admin}'),
    ('set_role_access', '{admin}'),
    ('remove_role_access', '{admin}'),
    ('list_role_access', '{admin}'),
    ('list_audit_log', '{admin}');

-- Every function of schema pgrun, called with NULL arguments.
CREATE TEMP TABLE calls ON COMMIT DROP AS
SELECT
    p.proname::text AS function_name,
    p.proname ~ '^_' AS private,
    format(
        'SELECT pgrun.%I(%s)', p.proname,
        (SELECT string_agg(format('NULL::%s', t.oid::regtype), ', ' ORDER BY a.n)
         FROM unnest(p.proargtypes::oid[]) WITH ORDINALITY AS a (type_oid, n)
         JOIN pg_type AS t ON t.oid = a.type_oid)
    ) AS call
FROM pg_proc AS p
WHERE p.pronamespace = 'pgrun'::regnamespace;

CREATE TEMP TABLE outcomes ON COMMIT DROP AS
SELECT c.function_name, c.private, k.kind, pgrun_test.may_call('pgrun_tap_' || k.kind, c.call) AS outcome
FROM calls AS c
CROSS JOIN unnest(ARRAY['admin', 'producer', 'worker', 'reader', 'nobody']) AS k (kind);

-- TEST: the expected matrix covers the API exactly
SELECT set_eq(
    $$SELECT function_name FROM calls WHERE NOT private$$,
    $$SELECT function_name FROM expected$$,
    'the expected matrix names every public function of schema pgrun, and nothing else'
);

-- TEST: each role is let in exactly where the matrix says
SELECT is_empty(
    $$SELECT o.function_name, o.kind, o.outcome
      FROM outcomes AS o JOIN expected AS e USING (function_name)
      WHERE o.outcome <> CASE WHEN o.kind = ANY (e.roles) THEN 'allowed' ELSE 'denied' END
      ORDER BY 1, 2$$,
    'every public function is allowed to exactly its roles and denied (42501) to the others'
);
SELECT is(
    (SELECT count(*) FROM outcomes WHERE NOT private AND outcome = 'allowed' AND kind = 'admin'),
    (SELECT count(*) FROM expected),
    'admin may call every public function'
);
SELECT is_empty(
    $$SELECT function_name FROM outcomes WHERE kind = 'nobody' AND outcome = 'allowed'$$,
    'a role outside pgrun''s roles may call nothing (EXECUTE is revoked from PUBLIC everywhere)'
);
SELECT is_empty(
    $$SELECT function_name, kind FROM outcomes WHERE private AND outcome = 'allowed'$$,
    'no client role may call a private helper'
);

-- TEST: the catalog says the same: PUBLIC holds EXECUTE on nothing
SELECT is_empty(
    $$SELECT p.oid::regprocedure FROM pg_proc AS p
      WHERE p.pronamespace = 'pgrun'::regnamespace AND has_function_privilege('public', p.oid, 'EXECUTE')$$,
    'no pgrun function is executable by PUBLIC'
);
SELECT is(
    (SELECT count(*) FROM outcomes),
    (SELECT count(*) * 5 FROM calls),
    'every function was tried as each of the five roles'
);

SELECT * FROM finish();
ROLLBACK;
