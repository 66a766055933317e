-- pgrun._queued_pairs: the (job type, queue) pairs holding queued jobs (ready or not yet due),
-- of the given types or of every type, the excluded ones left out; running and finished jobs
-- hold no pair. The claim's step past its walk and set_job_runtime_config's notification read it.
BEGIN;
SELECT plan(5);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT pgrun_test.make_job(p_job_type => 'a.job', p_queue => 'q2') FROM generate_series(1, 3);
SELECT pgrun_test.make_job(p_job_type => 'a.job', p_queue => 'q1', p_run_at => '2030-01-01 01:00:00+00');
SELECT pgrun_test.make_job(p_job_type => 'b.job', p_queue => 'q1');
SELECT pgrun_test.running_job(p_job_type => 'c.job');
SELECT job_id AS done, lease_token AS done_token FROM pgrun_test.running_job(p_job_type => 'd.job') \gset
SELECT pgrun.complete_job(:'done', :'done_token');

-- TEST
SELECT results_eq(
    $$SELECT job_type, queue FROM pgrun._queued_pairs(NULL, '{}') ORDER BY 1, 2$$,
    $$VALUES ('a.job', 'q1'), ('a.job', 'q2'), ('b.job', 'q1')$$,
    'every type: each pair once, a delayed job''s too; running and finished jobs hold none'
);
SELECT results_eq(
    $$SELECT job_type, queue FROM pgrun._queued_pairs(ARRAY['a.job', 'c.job', 'a.job'], '{}') ORDER BY 1, 2$$,
    $$VALUES ('a.job', 'q1'), ('a.job', 'q2')$$,
    'named types only, a name given twice counted once, a type with no queued job none'
);
SELECT results_eq(
    $$SELECT job_type, queue FROM pgrun._queued_pairs(NULL, ARRAY['a.job']) ORDER BY 1, 2$$,
    $$VALUES ('b.job', 'q1')$$,
    'an excluded type is left out'
);
SELECT is_empty($$SELECT 1 FROM pgrun._queued_pairs('{}', '{}')$$, 'no types named: no pairs');
SELECT is_empty(
    $$SELECT 1 FROM pg_proc p WHERE p.oid = 'pgrun._queued_pairs(text[], text[])'::regprocedure
      AND has_function_privilege('public', p.oid, 'EXECUTE')$$,
    'private: PUBLIC may not call it'
);

SELECT * FROM finish();
ROLLBACK;
