-- 1 -> 1000 -> 1: the root releases 1000 steps in one statement, and the join is released
-- exactly once, by the last of them, with every output in its payload.
BEGIN;
SELECT plan(8);

-- SETUP
SELECT pgrun_test.wf_enqueue(jsonb_build_object('steps',
    jsonb_build_array(jsonb_build_object('key', 'root', 'job_type', 'fan.root'))
    || (SELECT jsonb_agg(jsonb_build_object('key', 'w' || lpad(g::text, 4, '0'), 'job_type', 'fan.work', 'depends_on', '["root"]'::jsonb))
        FROM generate_series(1, 1000) AS g)
    || jsonb_build_array(jsonb_build_object('key', 'join', 'job_type', 'fan.join',
        'depends_on', (SELECT jsonb_agg('w' || lpad(g::text, 4, '0')) FROM generate_series(1, 1000) AS g)))
)) AS run \gset

-- TEST: fan out
SELECT is(pgrun_test.wf_succeed(:'run', 'root', '{"n": 1000}'), 'succeeded', 'the root succeeds');
SELECT is(
    (SELECT count(*) FROM pgrun.jobs WHERE workflow_run_id = :'run' AND status = 'queued' AND job_type = 'fan.work'),
    1000::bigint,
    '1000 jobs are queued at once'
);
SELECT is(
    (SELECT (count(*), count(*) FILTER (WHERE j.workflow_step_key IS NOT NULL),
             count(*) FILTER (WHERE EXISTS (
                 SELECT FROM pgrun.job_events AS e WHERE e.job_id = j.id AND e.event <> 'succeeded'
             )))::text
     FROM pgrun.jobs AS j WHERE j.workflow_run_id = :'run'),
    ROW(1001::bigint, 1001::bigint, 0::bigint)::text,
    'every job names its step; the release wrote no event (the root has only its succeeded one)'
);

-- TEST: fan in: complete 999 of them in one batch
SELECT results_eq(
    format($$SELECT count(*), count(*) FILTER (WHERE c.outcome = 'succeeded') FROM pgrun.complete_jobs(
        ARRAY(SELECT j.id FROM pgrun.jobs AS j WHERE j.workflow_run_id = %1$L AND j.job_type = 'fan.work'
              AND j.workflow_step_key <> 'w1000' ORDER BY j.id),
        ARRAY(SELECT pgrun_test.claim_job(j.id) FROM pgrun.jobs AS j WHERE j.workflow_run_id = %1$L
              AND j.job_type = 'fan.work' AND j.workflow_step_key <> 'w1000' ORDER BY j.id),
        ARRAY(SELECT jsonb_build_object('k', j.workflow_step_key) FROM pgrun.jobs AS j WHERE j.workflow_run_id = %1$L
              AND j.job_type = 'fan.work' AND j.workflow_step_key <> 'w1000' ORDER BY j.id)
    ) AS c$$, :'run'),
    $$VALUES (999::bigint, 999::bigint)$$,
    '999 workers finish in one batch'
);
SELECT is(
    (SELECT status || ':' || dependency_count_pending FROM pgrun.workflow_steps WHERE run_id = :'run' AND step_key = 'join'),
    'blocked:1',
    'the join waits for the last one'
);

-- TEST: the last one releases the join, once
SELECT is(pgrun_test.wf_succeed(:'run', 'w1000', '{"k": "w1000"}'), 'succeeded', 'the last worker finishes');
SELECT is(
    (SELECT count(*) FROM pgrun.jobs WHERE workflow_run_id = :'run' AND job_type = 'fan.join'),
    1::bigint,
    'exactly one join job'
);
SELECT is(
    (SELECT count(*) FROM pgrun.jobs AS j, jsonb_each(j.payload -> 'dependencies') AS d
     WHERE j.workflow_run_id = :'run' AND j.job_type = 'fan.join' AND d.value -> 'output' ->> 'k' = d.key),
    1000::bigint,
    'the join''s payload carries all 1000 outputs, keyed by step'
);

SELECT * FROM finish();
ROLLBACK;
