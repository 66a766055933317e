-- pgrun._workflow_settle_runs: each run's deltas add up to one change of its open_step_count,
-- whether the call names one run (summed without a statement) or several (one UPDATE per
-- distinct total); a running run reaching 0 becomes succeeded, or failed when a step failed,
-- skipped or was cancelled; a finished run is left as it is.
BEGIN;
SELECT plan(6);

-- SETUP: four running runs of five blocked-behind-a-root steps each, one run finished
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT pgrun_test.wf_enqueue(pgrun_test.wf_chain_spec(5)) AS a \gset
SELECT pgrun_test.wf_enqueue(pgrun_test.wf_chain_spec(5)) AS b \gset
SELECT pgrun_test.wf_enqueue(pgrun_test.wf_chain_spec(5)) AS c \gset
SELECT pgrun_test.wf_enqueue(pgrun_test.wf_chain_spec(5)) AS d \gset
SELECT pgrun_test.wf_enqueue(pgrun_test.wf_chain_spec(1)) AS done \gset
SELECT pgrun_test.wf_succeed(:'done', (SELECT min(step_key) FROM pgrun.workflow_steps WHERE run_id = :'done'));
SELECT is(pgrun_test.wf_run_status(:'done'), 'succeeded', 'setup: one run is finished');
UPDATE pgrun.workflow_steps SET status = 'failed', finished_at = pgrun.now(), error_code = 'x',
    released_at = pgrun.now(), dependency_count_pending = 0
WHERE run_id = :'d' AND step_key = (SELECT max(step_key) FROM pgrun.workflow_steps WHERE run_id = :'d');

-- TEST: one run named three times: its deltas summed
SELECT pgrun._workflow_settle_runs(ARRAY[:'a', :'a', :'a']::uuid[], ARRAY[-1, -2, 1]);
SELECT results_eq(
    format('SELECT open_step_count, status FROM pgrun.workflow_runs WHERE id = %L', :'a'),
    $$VALUES (3, 'running')$$,
    'one run: -1 -2 +1 is two steps closed'
);

-- TEST: several runs, distinct totals in one call; d closes all it has, and a step of it failed
SELECT pgrun._workflow_settle_runs(
    ARRAY[:'b', :'c', :'b', :'d', :'done']::uuid[], ARRAY[-1, -3, -1, -5, -1]
);
SELECT results_eq(
    format(
        'SELECT id, open_step_count, status FROM pgrun.workflow_runs WHERE id IN (%L, %L) ORDER BY open_step_count',
        :'b', :'c'
    ),
    format('VALUES (%L::uuid, 2, ''running''), (%L::uuid, 3, ''running'')', :'c', :'b'),
    'each run its own total: b two closed, c three'
);
SELECT results_eq(
    format('SELECT open_step_count, status, finished_at FROM pgrun.workflow_runs WHERE id = %L', :'d'),
    $$VALUES (0, 'failed', '2030-01-01 00:00:00+00'::timestamptz)$$,
    'a run reaching 0 with a failed step fails'
);
SELECT results_eq(
    format('SELECT open_step_count, status FROM pgrun.workflow_runs WHERE id = %L', :'done'),
    $$VALUES (0, 'succeeded')$$,
    'a finished run is left as it is'
);

-- TEST: the last steps of a run closed at once succeed it
SELECT pgrun._workflow_settle_runs(ARRAY[:'c']::uuid[], ARRAY[-2]);
SELECT is(pgrun_test.wf_run_status(:'c'), 'succeeded', 'c reaches 0 with no step failed: succeeded');

SELECT * FROM finish();
ROLLBACK;
