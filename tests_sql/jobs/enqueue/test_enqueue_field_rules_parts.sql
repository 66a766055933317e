-- The field rules of an enqueue element come in two parts (jobs/_enqueue.sql):
-- _enqueue_invalid_code_basic (keys, type, payload), which a single request of only a type
-- and a payload evaluates alone, and the optional fields' rules, tried only after the first
-- part passed. This pins that the parts decide exactly what the whole does, in the same
-- order, and that the single enqueue's id (uuidv7()) continues the session's one sequence.
BEGIN;
SELECT plan(10);

-- SETUP
CREATE TEMP TABLE elems (label text, elem jsonb) ON COMMIT DROP;
INSERT INTO elems VALUES
    ('not an object', '[1]'),
    ('an unknown key', '{"job_type": "a.b", "payload": {}, "colour": "red"}'),
    ('a bad type', '{"job_type": "", "payload": {}}'),
    ('a bad type and a bad priority', '{"job_type": "", "payload": {}, "priority": -1}'),
    ('a payload that is an array', '{"job_type": "a.b", "payload": [1]}'),
    ('a payload nested too deep', jsonb_build_object('job_type', 'a.b', 'payload',
        (repeat('{"a": ', 101) || '1' || repeat('}', 101))::jsonb)),
    ('a good element', '{"job_type": "a.b", "payload": {"n": 1}}'),
    ('a bad priority', '{"job_type": "a.b", "payload": {}, "priority": -1}'),
    ('a bad queue', '{"job_type": "a.b", "payload": {}, "queue": ""}'),
    ('a bad key', '{"job_type": "a.b", "idempotency_key": ""}');

-- TEST: the first part alone
SELECT results_eq(
    $$SELECT label, pgrun._enqueue_invalid_code_basic(elem) FROM elems ORDER BY label$$,
    $$VALUES ('a bad key', NULL::text), ('a bad priority', NULL), ('a bad queue', NULL),
        ('a bad type', 'job.invalid_type'), ('a bad type and a bad priority', 'job.invalid_type'),
        ('a good element', NULL), ('a payload nested too deep', 'job.invalid_payload'),
        ('a payload that is an array', 'job.invalid_payload'), ('an unknown key', 'job.invalid_batch'),
        ('not an object', 'job.invalid_batch')$$,
    'the first part judges keys, type and payload, and passes what only optional fields break'
);

-- TEST: which elements need the optional fields' rules (a key given as JSON null counts)
SELECT results_eq(
    $$SELECT label, pgrun._enqueue_has_options(elem) FROM elems WHERE jsonb_typeof(elem) = 'object' ORDER BY label$$,
    $$VALUES ('a bad key', true), ('a bad priority', true), ('a bad queue', true), ('a bad type', false),
        ('a bad type and a bad priority', true), ('a good element', false),
        ('a payload nested too deep', false), ('a payload that is an array', false), ('an unknown key', false)$$,
    'an element needs the optional rules exactly when it names an optional field'
);

-- TEST: the whole: the first part's code wins, else the optional fields' rules
SELECT results_eq(
    $$SELECT label, pgrun._enqueue_invalid_code(elem) FROM elems ORDER BY label$$,
    $$VALUES ('a bad key', 'job.invalid_idempotency_key'::text), ('a bad priority', 'job.invalid_priority'),
        ('a bad queue', 'job.invalid_queue'), ('a bad type', 'job.invalid_type'),
        ('a bad type and a bad priority', 'job.invalid_type'), ('a good element', NULL),
        ('a payload nested too deep', 'job.invalid_payload'), ('a payload that is an array', 'job.invalid_payload'),
        ('an unknown key', 'job.invalid_batch'), ('not an object', 'job.invalid_batch')$$,
    'the whole gives the first part''s code when it has one, else the first optional rule broken'
);

-- TEST: an optional field's string is parsed only after the first part passed
SELECT is(
    pgrun._enqueue_invalid_code('{"job_type": "", "run_at": "not a time"}'),
    'job.invalid_type',
    'a bad type is reported before a malformed run_at is ever parsed'
);
SELECT throws_ok(
    $$SELECT pgrun._enqueue_invalid_code('{"job_type": "a.b", "run_at": "not a time"}')$$,
    '22007',
    NULL,
    'a malformed run_at still raises its data_exception once the first part passed'
);

-- TEST: the single enqueue takes the same rules (a type and a payload: the first part)
SELECT throws_ok(
    $$SELECT pgrun.enqueue_job('', '{}')$$,
    'RQ003',
    NULL,
    'enqueue_job refuses a bad type'
);
SELECT throws_like(
    $$SELECT pgrun.enqueue_job('a.b', '{}', priority => -1)$$,
    '%job.invalid_priority%',
    'enqueue_job with an optional field takes the whole rules'
);

-- TEST: the single enqueue's id continues the session's one UUIDv7 sequence
CREATE TEMP TABLE ids (n integer, id uuid) ON COMMIT DROP;
INSERT INTO ids VALUES (1, pgrun.uuidv7());
INSERT INTO ids SELECT 2, job_id FROM pgrun.enqueue_job('a.b', '{}');
INSERT INTO ids SELECT 3, job_id FROM pgrun.enqueue_jobs('[{"job_type": "a.b"}, {"job_type": "a.b"}]');
INSERT INTO ids SELECT 4, job_id FROM pgrun.enqueue_job('a.b', '{}');
INSERT INTO ids VALUES (5, pgrun.uuidv7());
SELECT is(
    (SELECT count(*)::integer FROM (SELECT id, lag(id) OVER (ORDER BY n, id) AS prev FROM ids) AS s WHERE id <= prev),
    0,
    'ids from uuidv7(), enqueue_job and enqueue_jobs strictly increase in the order they were made'
);
SELECT is((SELECT count(DISTINCT id)::integer FROM ids), 6, 'six distinct ids');
SELECT is(
    (SELECT count(*)::integer FROM ids WHERE substr(id::text, 15, 1) <> '7'),
    0,
    'every id is a version 7 uuid'
);

SELECT * FROM finish();
ROLLBACK;
