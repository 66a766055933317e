-- If the job holding a key disappears between the insert's conflict and the read of it (a
-- concurrent purge), enqueue raises 40001 job.enqueue_idempotency_race: retry the call.
BEGIN;
SELECT plan(2);

-- SETUP: a job holding the key, and a trigger that deletes it right after the next insert
-- statement on jobs, i.e. after ON CONFLICT has seen it and before enqueue reads it.
SELECT pgrun.enqueue_job('mail.send', idempotency_key => 'doomed');
CREATE FUNCTION pg_temp.purge_doomed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM pgrun.jobs WHERE idempotency_key = 'doomed';
    RETURN NULL;
END;
$$;
CREATE TRIGGER purge_doomed AFTER INSERT ON pgrun.jobs
FOR EACH STATEMENT EXECUTE FUNCTION pg_temp.purge_doomed();

-- TEST: the race surfaces as a retryable serialization failure
SELECT throws_ok(
    $$SELECT * FROM pgrun.enqueue_job('mail.send', idempotency_key => 'doomed')$$,
    '40001', 'job.enqueue_idempotency_race', 'the vanished row is reported, not papered over'
);

-- TEST: once the purge has happened, the same call simply creates a new job
DROP TRIGGER purge_doomed ON pgrun.jobs;
DELETE FROM pgrun.jobs WHERE idempotency_key = 'doomed';
SELECT is(
    (SELECT created FROM pgrun.enqueue_job('mail.send', idempotency_key => 'doomed')),
    true,
    'the retry creates the job afresh'
);

SELECT * FROM finish();
ROLLBACK;
