-- READ UNCOMMITTED is READ COMMITTED in PostgreSQL, so keyed enqueue (jobs and workflows)
-- works there as under READ COMMITTED: the key names the first job or run, a retry gets it back.
BEGIN;
SET TRANSACTION ISOLATION LEVEL READ UNCOMMITTED;
SELECT plan(5);

-- TEST: keyed enqueue_job, twice
SELECT job_id AS first FROM pgrun.enqueue_job('mail.send', idempotency_key => 'ru-k') \gset
SELECT is(
    (SELECT created FROM pgrun.enqueue_job('mail.send', idempotency_key => 'ru-k')),
    false,
    'a keyed enqueue_job under READ UNCOMMITTED finds the job its key names'
);
SELECT is(
    (SELECT job_id FROM pgrun.enqueue_job('mail.send', idempotency_key => 'ru-k')),
    :'first'::uuid,
    'and returns that job'
);

-- TEST: keyed enqueue_jobs
SELECT is(
    (SELECT array_agg(created ORDER BY ordinality) FROM pgrun.enqueue_jobs(
        '[{"job_type": "mail.send", "idempotency_key": "ru-k"}, {"job_type": "mail.send", "idempotency_key": "ru-k2"}]'
    )),
    ARRAY[false, true],
    'a keyed batch under READ UNCOMMITTED'
);

-- TEST: keyed enqueue_workflow, twice
SELECT is(
    (SELECT created FROM pgrun.enqueue_workflow(
        '{"idempotency_key": "ru-run", "steps": [{"key": "a", "job_type": "t"}]}'
    )),
    true,
    'a keyed enqueue_workflow under READ UNCOMMITTED'
);
SELECT is(
    (SELECT created FROM pgrun.enqueue_workflow(
        '{"idempotency_key": "ru-run", "steps": [{"key": "a", "job_type": "t"}]}'
    )),
    false,
    'its retry finds the run'
);

SELECT * FROM finish();
ROLLBACK;
