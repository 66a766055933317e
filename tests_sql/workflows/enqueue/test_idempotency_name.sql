-- An idempotency key is unique per (workflow name, organization): two kinds of workflow may
-- both use a natural key such as 'order:42'; a run without a name is a kind of its own.
BEGIN;
SELECT plan(17);

-- SETUP
SELECT run_id AS ship, created AS ship_created FROM pgrun.enqueue_workflow('{
    "idempotency_key": "order:42", "name": "ship",
    "steps": [{"key": "a", "job_type": "t.ship"}]}') \gset

-- TEST: the same key under another name is another run
SELECT is(:'ship_created'::boolean, true, 'the first keyed run is created');
SELECT results_eq(
    $$SELECT created, status FROM pgrun.enqueue_workflow('{
        "idempotency_key": "order:42", "name": "invoice",
        "steps": [{"key": "a", "job_type": "t.invoice"}]}')$$,
    $$VALUES (true, 'running')$$,
    'the same key under another workflow name creates a second run'
);
SELECT is(
    (SELECT count(*) FROM pgrun.workflow_runs WHERE idempotency_key = 'order:42'),
    2::bigint,
    'two runs hold the key, one per name'
);

-- TEST: the same key and name replays, or conflicts when the request differs
SELECT results_eq(
    $$SELECT run_id, created FROM pgrun.enqueue_workflow('{
        "idempotency_key": "order:42", "name": "ship",
        "steps": [{"key": "a", "job_type": "t.ship"}]}')$$,
    format($$VALUES (%L::uuid, false)$$, :'ship'),
    'the same key, name and request replay the first run'
);
SELECT throws_ok(
    $$SELECT * FROM pgrun.enqueue_workflow('{
        "idempotency_key": "order:42", "name": "ship",
        "steps": [{"key": "a", "job_type": "t.ship", "priority": 1}]}')$$,
    'RQ001', 'workflow.enqueue_conflicting_retry',
    'the same key and name with another request is a conflict'
);
SELECT is(
    (SELECT run_id FROM pgrun.enqueue_workflow('{
        "idempotency_key": "order:42", "name": "invoice",
        "steps": [{"key": "a", "job_type": "t.invoice"}]}')),
    (SELECT id FROM pgrun.workflow_runs WHERE idempotency_key = 'order:42' AND name = 'invoice'),
    'the second name replays its own run'
);

-- TEST: a run without a name is a kind of its own
SELECT is(
    (SELECT created FROM pgrun.enqueue_workflow('{
        "idempotency_key": "order:42", "steps": [{"key": "a", "job_type": "t.plain"}]}')),
    true,
    'the same key without a name creates a third run'
);
SELECT id AS plain FROM pgrun.workflow_runs WHERE idempotency_key = 'order:42' AND name IS NULL \gset
SELECT results_eq(
    $$SELECT run_id, created FROM pgrun.enqueue_workflow('{
        "idempotency_key": "order:42", "name": null, "steps": [{"key": "a", "job_type": "t.plain"}]}')$$,
    format($$VALUES (%L::uuid, false)$$, :'plain'),
    'an unnamed retry (name left out or null) replays the unnamed run'
);
SELECT throws_ok(
    $$SELECT * FROM pgrun.enqueue_workflow('{
        "idempotency_key": "order:42", "steps": [{"key": "a", "job_type": "t.other"}]}')$$,
    'RQ001', 'workflow.enqueue_conflicting_retry',
    'an unnamed retry with another request conflicts with the unnamed run, not with a named one'
);
SELECT is(
    (SELECT count(*) FROM pgrun.workflow_runs WHERE idempotency_key = 'order:42'),
    3::bigint,
    'three runs: ship, invoice and the unnamed one'
);

-- TEST: organizations stay apart under one name
SELECT is(
    (SELECT created FROM pgrun.enqueue_workflow('{
        "idempotency_key": "order:42", "name": "ship", "organization_id": "22222222-2222-2222-2222-222222222222",
        "steps": [{"key": "a", "job_type": "t.ship"}]}')),
    true,
    'the same key and name in an organization is another run'
);
SELECT is(
    (SELECT created FROM pgrun.enqueue_workflow('{
        "idempotency_key": "order:42", "name": "ship", "organization_id": "22222222-2222-2222-2222-222222222222",
        "steps": [{"key": "a", "job_type": "t.ship"}]}')),
    false,
    'and replays there'
);
SELECT throws_ok(
    $$SELECT * FROM pgrun.enqueue_workflow('{
        "idempotency_key": "order:42", "name": "ship", "organization_id": "22222222-2222-2222-2222-222222222222",
        "steps": [{"key": "b", "job_type": "t.ship"}]}')$$,
    'RQ001', 'workflow.enqueue_conflicting_retry',
    'a different request there conflicts with that organization''s run'
);
SELECT is(
    (SELECT created FROM pgrun.enqueue_workflow('{
        "idempotency_key": "order:42", "organization_id": "22222222-2222-2222-2222-222222222222",
        "steps": [{"key": "z", "job_type": "t.plain"}]}')),
    true,
    'an unnamed run in that organization is yet another run'
);
SELECT is(
    (SELECT count(DISTINCT (coalesce(name, ''), organization_id)) FROM pgrun.workflow_runs WHERE idempotency_key = 'order:42'),
    5::bigint,
    'five runs hold the key: one per (name, organization)'
);

-- TEST: the index is the one the conflict and the lookup use
SELECT is(
    (SELECT pg_get_indexdef(i.indexrelid) FROM pg_index AS i
     WHERE i.indrelid = 'pgrun.workflow_runs'::regclass AND i.indisunique
       AND pg_get_indexdef(i.indexrelid) LIKE '%idempotency_key%'),
    'CREATE UNIQUE INDEX workflow_runs_idempotency_name_idx ON pgrun.workflow_runs USING btree '
    '(COALESCE(name, ''''::text), COALESCE(organization_id, ''00000000-0000-0000-0000-000000000000''::uuid), '
    'idempotency_key) WHERE (idempotency_key IS NOT NULL)',
    'one unique index on (name, organization, key); the one on (organization, key) is gone'
);
SELECT ok(
    NOT EXISTS (SELECT FROM pg_class WHERE relname = 'workflow_runs_idempotency_idx'),
    'the narrower index was dropped'
);

SELECT * FROM finish();
ROLLBACK;
