-- The hot-path functions (release_jobs, the worker's hand-back, and the scheduler's claim,
-- too) carry their planner settings in their SET clauses (pg_proc.proconfig): without seq and
-- bitmap scans (and, but in claim_jobs, without hash and merge joins) their statements keep the
-- ordered / primary-key index plans whatever the statistics say; JIT is off and the plan is
-- generic, built once per session. Why and what it measured: docs/lease-machine.md, "Plan
-- stability"; tests_py/test_plan_stability.py and test_plan_stability_schedules.py read the
-- plans themselves. This file pins the settings: a CREATE OR REPLACE that drops or reorders
-- one, or a second overload of one of these names (which would carry its own clause), fails
-- here.
BEGIN;
SELECT plan(2);

-- TEST: the exact SET clauses of the eight functions, one overload each
SELECT results_eq(
    $$SELECT p.proname::text COLLATE "default", p.proconfig COLLATE "default" FROM pg_proc AS p
      WHERE p.pronamespace = 'pgrun'::regnamespace
        AND p.proname IN ('claim_jobs', 'complete_jobs', 'fail_jobs', 'heartbeat_jobs', 'reap_expired_leases',
            'purge_finished_jobs', 'release_jobs', 'claim_due_schedules')
      ORDER BY p.proname$$,
    $$VALUES
        ('claim_due_schedules', ARRAY['search_path=pg_catalog, pg_temp', 'enable_seqscan=off',
            'enable_bitmapscan=off', 'enable_hashjoin=off', 'enable_mergejoin=off', 'jit=off',
            'plan_cache_mode=force_generic_plan']),
        ('claim_jobs', ARRAY['search_path=pg_catalog, pg_temp', 'enable_seqscan=off', 'enable_bitmapscan=off',
            'jit=off', 'plan_cache_mode=force_generic_plan']),
        ('complete_jobs', ARRAY['search_path=pg_catalog, pg_temp', 'enable_seqscan=off', 'enable_bitmapscan=off',
            'enable_hashjoin=off', 'enable_mergejoin=off', 'jit=off', 'plan_cache_mode=force_generic_plan']),
        ('fail_jobs', ARRAY['search_path=pg_catalog, pg_temp', 'enable_seqscan=off', 'enable_bitmapscan=off',
            'enable_hashjoin=off', 'enable_mergejoin=off', 'jit=off', 'plan_cache_mode=force_generic_plan']),
        ('heartbeat_jobs', ARRAY['search_path=pg_catalog, pg_temp', 'enable_seqscan=off', 'enable_bitmapscan=off',
            'enable_hashjoin=off', 'enable_mergejoin=off', 'jit=off', 'plan_cache_mode=force_generic_plan']),
        ('purge_finished_jobs', ARRAY['search_path=pg_catalog, pg_temp', 'enable_seqscan=off',
            'enable_bitmapscan=off', 'enable_hashjoin=off', 'enable_mergejoin=off', 'jit=off',
            'plan_cache_mode=force_generic_plan']),
        ('reap_expired_leases', ARRAY['search_path=pg_catalog, pg_temp', 'enable_seqscan=off',
            'enable_bitmapscan=off', 'enable_hashjoin=off', 'enable_mergejoin=off', 'jit=off',
            'plan_cache_mode=force_generic_plan']),
        ('release_jobs', ARRAY['search_path=pg_catalog, pg_temp', 'enable_seqscan=off', 'enable_bitmapscan=off',
            'enable_hashjoin=off', 'enable_mergejoin=off', 'jit=off', 'plan_cache_mode=force_generic_plan'])$$,
    'the eight hot-path functions (the scheduler''s claim too) pin their planner settings (one overload each)'
);

-- TEST: the calls off the worker's path that write workflows or cancel, and the helpers with
-- planner settings that they and the job functions share, plan once per session: re-planned on
-- every call (plpgsql keeps choosing custom plans for them), enqueue_workflow of one step cost
-- 1.3x its generic plan's time and complete_external_step 2x (docs/performance.md, "Generic
-- plans off the worker's path")
SELECT results_eq(
    $$SELECT p.proname::text COLLATE "default", 'plan_cache_mode=force_generic_plan' = ANY (p.proconfig)
      FROM pg_proc AS p
      WHERE p.pronamespace = 'pgrun'::regnamespace
        AND p.proname IN ('enqueue_workflow', 'append_workflow_steps', 'complete_external_step',
            'cancel_workflow_run', 'cancel_job', '_job_cancel', '_workflow_release_steps', '_workflow_resolve',
            '_workflow_settle_runs')
      ORDER BY p.proname$$,
    $$VALUES ('_job_cancel', true), ('_workflow_release_steps', true), ('_workflow_resolve', true),
        ('_workflow_settle_runs', true), ('append_workflow_steps', true), ('cancel_job', true),
        ('cancel_workflow_run', true), ('complete_external_step', true), ('enqueue_workflow', true)$$,
    'the workflow calls, cancel_job and the shared helpers with planner settings plan generically'
);

SELECT * FROM finish();
ROLLBACK;
