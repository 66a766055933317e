-- A claim that may take a capped type refuses REPEATABLE READ and SERIALIZABLE
-- (job.claim_unsupported_isolation, RQ006) and claims nothing: the type's running jobs are
-- counted in a snapshot of their own, which only READ COMMITTED gives a statement. A claim
-- that names only uncapped types is not concerned.
BEGIN;
SET TRANSACTION ISOLATION LEVEL REPEATABLE READ;
SELECT plan(5);

-- SETUP: a job of a capped type and one of an uncapped type
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
INSERT INTO pgrun.job_runtime_configs (job_type, max_concurrency) VALUES ('capped.job', 5);
SELECT pgrun_test.make_job(p_job_type => 'capped.job');
SELECT pgrun_test.make_job(p_job_type => 'free.job');

-- TEST: a claim of every type, of the capped one
SELECT throws_ok(
    'SELECT * FROM pgrun.claim_jobs(worker_id => ''w'', max_jobs => 5)',
    'RQ006', 'job.claim_unsupported_isolation', 'a claim of every type includes the capped one'
);
SELECT throws_ok(
    'SELECT * FROM pgrun.claim_jobs(worker_id => ''w'', job_types => ARRAY[''capped.job''])',
    'RQ006', 'job.claim_unsupported_isolation', 'a claim of the capped type'
);
SELECT is(
    (SELECT count(*) FROM pgrun.jobs WHERE status = 'queued'),
    2::bigint,
    'nothing was claimed'
);

-- TEST: a claim of the uncapped type only is not concerned
SELECT results_eq(
    'SELECT job_type FROM pgrun.claim_jobs(worker_id => ''w'', job_types => ARRAY[''free.job''])',
    $$VALUES ('free.job')$$,
    'a claim of uncapped types only works under REPEATABLE READ'
);

-- TEST: a paused capped type is not capped in play
UPDATE pgrun.job_runtime_configs SET paused = true WHERE job_type = 'capped.job';
SELECT is_empty(
    'SELECT job_id FROM pgrun.claim_jobs(worker_id => ''w'', max_jobs => 5)',
    'with the capped type paused, a claim of every type has nothing to count and takes nothing'
);

SELECT * FROM finish();
ROLLBACK;
