-- The payload must be a JSON object (NULL means {}) of at most 1 MiB.
BEGIN;
SELECT plan(7);

-- TEST: not an object
SELECT throws_ok($$SELECT * FROM pgrun.enqueue_job('a', '[1, 2]')$$, 'RQ003', 'job.invalid_payload', 'an array');
SELECT throws_ok($$SELECT * FROM pgrun.enqueue_job('a', '"text"')$$, 'RQ003', 'job.invalid_payload', 'a string');
SELECT throws_ok($$SELECT * FROM pgrun.enqueue_job('a', '42')$$, 'RQ003', 'job.invalid_payload', 'a number');

-- TEST: too large
SELECT throws_ok(
    format('SELECT * FROM pgrun.enqueue_job(%L, jsonb_build_object(%L, repeat(%L, 1048576)))', 'a', 'blob', 'x'),
    'RQ003', 'job.payload_too_large', 'a payload over 1 MiB'
);

-- TEST: just under the limit is fine
SELECT is(
    (SELECT created FROM pgrun.enqueue_job('a', jsonb_build_object('blob', repeat('x', 1000000)))),
    true,
    'a payload of about 1 MB is accepted'
);

-- TEST: NULL and JSON null mean {}
SELECT job_id AS sql_null FROM pgrun.enqueue_job('a', NULL) \gset
SELECT job_id AS json_null FROM pgrun.enqueue_job('a', 'null') \gset
SELECT is((SELECT payload FROM pgrun.jobs WHERE id = :'sql_null'), '{}'::jsonb, 'a NULL payload is stored as {}');
SELECT is((SELECT payload FROM pgrun.jobs WHERE id = :'json_null'), '{}'::jsonb, 'a JSON null payload is stored as {}');

SELECT * FROM finish();
ROLLBACK;
