-- A malformed or missing job type is job.invalid_type; an unknown but well-formed one is fine.
BEGIN;
SELECT plan(7);

-- TEST: malformed
SELECT throws_ok($$SELECT * FROM pgrun.enqueue_job(NULL)$$, 'RQ003', 'job.invalid_type', 'NULL job_type');
SELECT throws_ok($$SELECT * FROM pgrun.enqueue_job('')$$, 'RQ003', 'job.invalid_type', 'empty job_type');
SELECT throws_ok($$SELECT * FROM pgrun.enqueue_job('Email.Send')$$, 'RQ003', 'job.invalid_type', 'upper case');
SELECT throws_ok($$SELECT * FROM pgrun.enqueue_job('email..send')$$, 'RQ003', 'job.invalid_type', 'an empty segment');
SELECT throws_ok(
    format('SELECT * FROM pgrun.enqueue_job(%L)', 'a' || repeat('b', 128)),
    'RQ003', 'job.invalid_type', 'longer than 128 characters'
);

-- TEST: well-formed shapes
SELECT is(
    (SELECT count(*) FROM pgrun.enqueue_jobs('[{"job_type": "a"}, {"job_type": "email.send"}, {"job_type": "billing:invoice-v2.send_now"}]')),
    3::bigint,
    'letters, digits and _ in segments joined by . : - are accepted, defined or not'
);

-- TEST: nothing written by the refused calls
SELECT is((SELECT count(*) FROM pgrun.jobs), 3::bigint, 'only the valid jobs exist');

SELECT * FROM finish();
ROLLBACK;
