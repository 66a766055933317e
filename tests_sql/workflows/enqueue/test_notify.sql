-- Releasing root job steps wakes each queue once, through the same channel as enqueue_job.
BEGIN;
SELECT plan(1);

-- TEST: one notification per queue (PostgreSQL folds identical ones; this checks the call works)
SELECT lives_ok(
    $$SELECT * FROM pgrun.enqueue_workflow('{"steps": [
        {"key": "a", "job_type": "t", "queue": "q1"},
        {"key": "b", "job_type": "t", "queue": "q1"},
        {"key": "c", "job_type": "t", "queue": "q2"}]}')$$,
    'roots in two queues are released and notified'
);

SELECT * FROM finish();
ROLLBACK;
