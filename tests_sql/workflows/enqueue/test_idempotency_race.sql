-- If the run holding a key disappears between the insert's conflict and the read of it
-- (deleted concurrently), enqueue_workflow raises 40001 workflow.enqueue_idempotency_race.
BEGIN;
SELECT plan(2);

-- SETUP: a run holding the key, and a trigger that deletes it right after the next insert
-- statement on workflow_runs, i.e. after ON CONFLICT has seen it and before the read.
SELECT * FROM pgrun.enqueue_workflow('{"idempotency_key": "doomed", "steps": [{"key": "a", "kind": "external"}]}');
CREATE FUNCTION pg_temp.delete_doomed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM pgrun.workflow_runs WHERE idempotency_key = 'doomed';
    RETURN NULL;
END;
$$;
CREATE TRIGGER delete_doomed AFTER INSERT ON pgrun.workflow_runs
FOR EACH STATEMENT EXECUTE FUNCTION pg_temp.delete_doomed();

-- TEST: the race surfaces as a retryable serialization failure
SELECT throws_ok(
    $$SELECT * FROM pgrun.enqueue_workflow('{"idempotency_key": "doomed", "steps": [{"key": "a", "kind": "external"}]}')$$,
    '40001', 'workflow.enqueue_idempotency_race', 'the vanished run is reported, not papered over'
);

-- TEST: afterwards the same call creates a new run
DROP TRIGGER delete_doomed ON pgrun.workflow_runs;
DELETE FROM pgrun.workflow_runs WHERE idempotency_key = 'doomed';
SELECT is(
    (SELECT created FROM pgrun.enqueue_workflow('{"idempotency_key": "doomed", "steps": [{"key": "a", "kind": "external"}]}')),
    true,
    'the retry creates the run afresh'
);

SELECT * FROM finish();
ROLLBACK;
