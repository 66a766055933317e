-- The hot-path functions (release_jobs, the worker's hand-back, too) carry their planner settings in their SET clauses (pg_proc.proconfig):
-- without seq and bitmap scans (and, but in claim_jobs, without hash and merge joins) their
-- statements keep the ordered / primary-key index plans whatever the statistics say; JIT is
-- off and the plan is generic, built once per session. Why and what it measured:
-- docs/lease-machine.md, "Plan stability"; tests_py/test_plan_stability.py reads the plans
-- themselves. This file pins the settings: a CREATE OR REPLACE that drops or reorders one, or a
-- second overload of one of these names (which would carry its own clause), fails here.
BEGIN;
SELECT plan(1);

-- TEST: the exact SET clauses of the seven functions, one overload each
SELECT results_eq(
    $$SELECT p.proname::text COLLATE "default", p.proconfig COLLATE "default" FROM pg_proc AS p
      WHERE p.pronamespace = 'pgrun'::regnamespace
        AND p.proname IN ('claim_jobs', 'complete_jobs', 'fail_jobs', 'heartbeat_jobs', 'reap_expired_leases',
            'purge_finished_jobs', 'release_jobs')
      ORDER BY p.proname$$,
    $$VALUES
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
    'the seven hot-path functions pin their planner settings (one overload each)'
);

SELECT * FROM finish();
ROLLBACK;
