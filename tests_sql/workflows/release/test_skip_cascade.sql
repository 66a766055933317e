-- A skip cascades through on_success chains, stops at on_terminal edges (which count
-- down instead), and a step that was skipped never gets a job.
BEGIN;
SELECT plan(6);

-- SETUP: a -> b -> c -> d (on_success), d -> e (on_terminal), c -> f (on_success), and
-- g depends on f (on_success) and on x (on_success, still running)
SELECT pgrun_test.wf_enqueue('{"steps": [
    {"key": "a", "job_type": "t"},
    {"key": "x", "job_type": "t"},
    {"key": "b", "job_type": "t", "depends_on": ["a"]},
    {"key": "c", "job_type": "t", "depends_on": ["b"]},
    {"key": "d", "job_type": "t", "depends_on": ["c"]},
    {"key": "e", "job_type": "t", "depends_on": [{"step": "d", "release_mode": "on_terminal"}]},
    {"key": "f", "job_type": "t", "depends_on": ["c"]},
    {"key": "g", "job_type": "t", "depends_on": ["f", "x"]}
]}') AS run \gset

-- TEST: failing the head skips the whole chain
SELECT is(pgrun_test.wf_fail(:'run', 'a'), 'dead', 'a dies');
SELECT is(pgrun_test.wf_statuses(:'run'),
    'a:failed,b:skipped,c:skipped,d:skipped,e:released,f:skipped,g:skipped,x:released',
    'b, c, d, f and g are skipped; e (on_terminal behind d) is released');
SELECT is(
    (SELECT dependency_count_pending FROM pgrun.workflow_steps WHERE run_id = :'run' AND step_key = 'g'),
    1,
    'g still counts its edge to x, which has not finished'
);
SELECT is(
    (SELECT count(*) FROM pgrun.jobs WHERE workflow_run_id = :'run'),
    3::bigint,
    'jobs exist for a, x and e only'
);

-- TEST: the late prerequisite of a skipped step changes nothing
SELECT is(pgrun_test.wf_succeed(:'run', 'x'), 'succeeded', 'x succeeds');
SELECT is(
    (SELECT status || ':' || dependency_count_pending FROM pgrun.workflow_steps WHERE run_id = :'run' AND step_key = 'g'),
    'skipped:0',
    'g stays skipped; its edge is resolved'
);

SELECT * FROM finish();
ROLLBACK;
