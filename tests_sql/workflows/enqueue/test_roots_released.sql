-- enqueue_workflow stores steps and edges with their counters and releases the roots at
-- once: a root job step becomes a queued job (workflow columns, template and definition
-- defaults, an enqueued event), a root external step waits; the rest stay blocked.
BEGIN;
SELECT plan(12);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT pgrun.upsert_job_definition('report.fetch', queue => 'reports', priority => 7, max_attempts => 4);
SELECT run_id AS run, created, status FROM pgrun.enqueue_workflow('{
    "name": "nightly",
    "organization_id": "11111111-1111-1111-1111-111111111111",
    "metadata": {"team": "data"},
    "steps": [
        {"key": "fetch", "job_type": "report.fetch", "payload": {"day": 1}},
        {"key": "other", "job_type": "misc.job", "priority": 3, "timeout_seconds": 60},
        {"key": "approve", "kind": "external"},
        {"key": "render", "job_type": "report.render", "depends_on": ["fetch", {"step": "approve", "release_mode": "on_terminal"}]}
    ]}') \gset

-- TEST: the run
SELECT is(:'created'::boolean, true, 'created');
SELECT results_eq(
    format('SELECT name, status, organization_id, metadata, finished_at FROM pgrun.workflow_runs WHERE id = %L', :'run'),
    $$VALUES ('nightly', 'running', '11111111-1111-1111-1111-111111111111'::uuid, '{"team": "data"}'::jsonb, NULL::timestamptz)$$,
    'the run is running with its name, tenant and metadata'
);

-- TEST: steps and counters
SELECT results_eq(
    format($$SELECT step_key, kind, status, dependency_count_total, dependency_count_pending, job_id IS NOT NULL
             FROM pgrun.workflow_steps WHERE run_id = %L ORDER BY step_key$$, :'run'),
    $$VALUES ('approve', 'external', 'waiting_for_external', 0, 0, false),
             ('fetch', 'job', 'released', 0, 0, true),
             ('other', 'job', 'released', 0, 0, true),
             ('render', 'job', 'blocked', 2, 2, false)$$,
    'roots are released, the dependent is blocked on two edges'
);
SELECT results_eq(
    format($$SELECT step_key, depends_on_key, release_mode, resolved FROM pgrun.workflow_step_dependencies
             WHERE run_id = %L ORDER BY step_key, depends_on_key$$, :'run'),
    $$VALUES ('render', 'approve', 'on_terminal', false), ('render', 'fetch', 'on_success', false)$$,
    'edges are stored with their release modes'
);

-- TEST: the root jobs
SELECT results_eq(
    format($$SELECT job_type, queue, priority, max_attempts, timeout_seconds, status, payload, organization_id,
                    workflow_run_id, workflow_step_key, run_at
             FROM pgrun.jobs WHERE id = %L$$, pgrun_test.wf_job(:'run', 'fetch')),
    format($$VALUES ('report.fetch', 'reports', 7, 4, NULL::integer, 'queued', '{"day": 1, "dependencies": {}}'::jsonb,
                     '11111111-1111-1111-1111-111111111111'::uuid, %L::uuid, 'fetch', '2030-01-01 00:00:00+00'::timestamptz)$$, :'run'),
    'a root job takes its definition''s defaults and links to its step'
);
SELECT results_eq(
    format($$SELECT queue, priority, max_attempts, timeout_seconds, backoff_base_seconds, payload
             FROM pgrun.jobs WHERE id = %L$$, pgrun_test.wf_job(:'run', 'other')),
    $$VALUES ('default', 3, 20, 60, 2::double precision, '{"dependencies": {}}'::jsonb)$$,
    'template fields win over the built-in defaults'
);
SELECT is(
    (SELECT count(*) FROM pgrun.jobs WHERE workflow_run_id = :'run'),
    2::bigint,
    'one job per released job step, none for the others'
);
SELECT is(
    (SELECT count(*) FROM pgrun.job_events AS e JOIN pgrun.jobs AS j ON j.id = e.job_id WHERE j.workflow_run_id = :'run'),
    0::bigint,
    'the release writes no event'
);
SELECT results_eq(
    format($$SELECT e ->> 'event', e ->> 'to_status', (e ->> 'attempt')::integer, e -> 'detail', (e ->> 'derived')::boolean
             FROM jsonb_array_elements(pgrun.get_job_history(%L) -> 'events') AS e$$,
        pgrun_test.wf_job(:'run', 'fetch')),
    format($$VALUES ('enqueued', 'queued', 0, '{"workflow_run_id": "%s", "workflow_step_key": "fetch"}'::jsonb, true)$$, :'run'),
    'the history derives its enqueued event, naming run and step'
);
SELECT is(
    (SELECT released_at FROM pgrun.workflow_steps WHERE run_id = :'run' AND step_key = 'fetch'),
    '2030-01-01 00:00:00+00'::timestamptz,
    'released_at is stamped'
);

-- TEST: the jobs are claimable
SELECT is(
    (SELECT count(*) FROM pgrun.claim_jobs('w', 30, 10, NULL, ARRAY['report.fetch', 'misc.job'])),
    2::bigint,
    'the root jobs can be claimed'
);
SELECT is(
    (SELECT count(*) FROM pgrun.claim_jobs('w', 30, 10, NULL, ARRAY['report.render'])),
    0::bigint,
    'the blocked step has no job to claim'
);

SELECT * FROM finish();
ROLLBACK;
