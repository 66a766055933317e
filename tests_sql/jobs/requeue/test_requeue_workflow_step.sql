-- requeue_job refuses the job of a workflow step with job.in_workflow_run (RQ001), and
-- writes nothing: the step's outcome was already acted on (its dependents released or
-- skipped, the run maybe finished), so rerunning the job alone would leave the run and the
-- job disagreeing. Dead steps of a failed run, cancelled steps of a cancelled run, and a dead
-- step whose on_terminal dependent already ran on.
BEGIN;
SELECT plan(19);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');

-- a chain a <- b (on_success); a dies, b is skipped, the run fails
SELECT pgrun_test.wf_enqueue('{"steps": [
    {"key": "a", "job_type": "t"},
    {"key": "b", "job_type": "t", "depends_on": ["a"]}
]}') AS failed_run \gset
SELECT pgrun_test.wf_fail(:'failed_run', 'a');
SELECT pgrun_test.wf_job(:'failed_run', 'a') AS dead_job \gset

-- two queued roots; the run is cancelled, so are both jobs
SELECT pgrun_test.wf_enqueue('{"steps": [
    {"key": "x", "job_type": "t"},
    {"key": "y", "job_type": "t"}
]}') AS cancelled_run \gset
SELECT status FROM pgrun.cancel_workflow_run(:'cancelled_run', 'user asked');
SELECT pgrun_test.wf_job(:'cancelled_run', 'x') AS cancelled_job \gset

-- a dies; its on_terminal cleanup is released and the run keeps running; its on_success
-- dependent is skipped
SELECT pgrun_test.wf_enqueue('{"steps": [
    {"key": "a", "job_type": "t"},
    {"key": "needs_success", "job_type": "t", "depends_on": ["a"]},
    {"key": "cleanup", "job_type": "t", "depends_on": [{"step": "a", "release_mode": "on_terminal"}]}
]}') AS continued_run \gset
SELECT pgrun_test.wf_fail(:'continued_run', 'a');
SELECT pgrun_test.wf_job(:'continued_run', 'a') AS continued_job \gset
SELECT pgrun_test.wf_job(:'continued_run', 'cleanup') AS cleanup_job \gset

-- the setup is what the tests assume
SELECT results_eq(
    format(
        $$SELECT r.id, r.status, pgrun_test.wf_statuses(r.id), j.status
          FROM pgrun.workflow_runs AS r JOIN pgrun.jobs AS j ON j.id = ANY (ARRAY[%L, %L, %L]::uuid[])
              AND j.workflow_run_id = r.id
          ORDER BY r.id$$,
        :'dead_job', :'cancelled_job', :'continued_job'
    ),
    format(
        $$VALUES (%L::uuid, 'failed', 'a:failed,b:skipped', 'dead'),
                 (%L::uuid, 'cancelled', 'x:cancelled,y:cancelled', 'cancelled'),
                 (%L::uuid, 'running', 'a:failed,cleanup:released,needs_success:skipped', 'dead')$$,
        :'failed_run', :'cancelled_run', :'continued_run'
    ),
    'a failed run with a dead step, a cancelled run with a cancelled step, a running run past a dead step'
);
SELECT is(
    (SELECT count(*) FROM pgrun.job_dead_letters WHERE job_id IN (:'dead_job', :'continued_job') AND requeued_at IS NULL),
    2::bigint,
    'both dead step jobs have an open dead letter'
);
SELECT pgrun_test.fingerprint() AS before \gset

-- TEST: a dead step of a failed run
SELECT throws_ok(
    format('SELECT pgrun.requeue_job(%L)', :'dead_job'),
    'RQ001', 'job.in_workflow_run', 'a dead step job of a failed run is refused'
);
SELECT is(
    pgrun_test.error_detail(format('SELECT pgrun.requeue_job(%L)', :'dead_job')),
    format('job %s (dead) is the job of step ''a'' of workflow run %s (failed); '
        'a workflow step''s job is not requeued', :'dead_job', :'failed_run'),
    'DETAIL names the job, its status, the step key (quoted), the run and its status'
);
SELECT is(pgrun_test.fingerprint(), :'before', 'nothing written anywhere');
SELECT results_eq(
    format('SELECT status, finished_at IS NOT NULL FROM pgrun.jobs WHERE id = %L', :'dead_job'),
    $$VALUES ('dead', true)$$,
    'the job stays dead'
);
SELECT is(pgrun_test.wf_statuses(:'failed_run'), 'a:failed,b:skipped', 'the step stays failed, its dependent skipped');
SELECT is(pgrun_test.wf_run_status(:'failed_run'), 'failed', 'the run stays failed');

-- TEST: a cancelled step of a cancelled run
SELECT throws_ok(
    format('SELECT pgrun.requeue_job(%L)', :'cancelled_job'),
    'RQ001', 'job.in_workflow_run', 'a cancelled step job of a cancelled run is refused'
);
SELECT is(pgrun_test.fingerprint(), :'before', 'nothing written anywhere');
SELECT is(
    (SELECT status FROM pgrun.jobs WHERE id = :'cancelled_job'), 'cancelled', 'the job stays cancelled'
);
SELECT is(pgrun_test.wf_run_status(:'cancelled_run'), 'cancelled', 'the run stays cancelled');

-- TEST: a dead step the run went on past (its on_terminal dependent released)
SELECT throws_ok(
    format('SELECT pgrun.requeue_job(%L, run_at => %L)', :'continued_job', '2030-01-02 00:00:00+00'),
    'RQ001', 'job.in_workflow_run', 'a dead step job of a running run is refused'
);
SELECT is(pgrun_test.fingerprint(), :'before', 'nothing written anywhere');
SELECT is(
    pgrun_test.wf_statuses(:'continued_run'), 'a:failed,cleanup:released,needs_success:skipped',
    'the step stays failed; its dependents stay released and skipped'
);
SELECT is((SELECT status FROM pgrun.jobs WHERE id = :'cleanup_job'), 'queued', 'the cleanup job stays queued');

-- TEST: the same once the run has finished (the cleanup succeeded)
SELECT pgrun_test.wf_succeed(:'continued_run', 'cleanup');
SELECT is(pgrun_test.wf_run_status(:'continued_run'), 'failed', 'the run finished (failed: a step died)');
SELECT pgrun_test.fingerprint() AS before \gset
SELECT throws_ok(
    format('SELECT pgrun.requeue_job(%L)', :'continued_job'),
    'RQ001', 'job.in_workflow_run', 'the dead step job of the finished run is refused'
);
SELECT is(pgrun_test.fingerprint(), :'before', 'nothing written anywhere');

SELECT * FROM finish();
ROLLBACK;
