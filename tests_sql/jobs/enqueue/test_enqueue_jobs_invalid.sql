-- enqueue_jobs validates the whole array before writing, and names the first bad element.
BEGIN;
SELECT plan(11);

-- TEST: the argument itself
SELECT throws_ok($$SELECT * FROM pgrun.enqueue_jobs(NULL)$$, 'RQ003', 'job.invalid_batch', 'NULL');
SELECT throws_ok($$SELECT * FROM pgrun.enqueue_jobs('{"job_type": "a"}')$$, 'RQ003', 'job.invalid_batch', 'an object, not an array');
SELECT throws_ok(
    $$SELECT * FROM pgrun.enqueue_jobs((SELECT jsonb_agg('{"job_type": "a"}'::jsonb) FROM generate_series(1, 100001)))$$,
    'RQ003', 'job.batch_too_large', 'more than 100000 elements'
);

-- TEST: elements
SELECT is(
    pgrun_test.error_of($$SELECT * FROM pgrun.enqueue_jobs('[{"job_type": "a"}, 7]')$$),
    'RQ003 job.invalid_batch: element 2: is a JSON number, not an object',
    'an element that is not an object'
);
SELECT is(
    pgrun_test.error_of($$SELECT * FROM pgrun.enqueue_jobs('[{"job_type": "a", "payloads": {}, "prio": 1}]')$$),
    'RQ003 job.invalid_batch: element 1: unknown keys payloads, prio',
    'unknown keys are refused, not ignored'
);
SELECT is(
    pgrun_test.error_of($$SELECT * FROM pgrun.enqueue_jobs('[{"job_type": "a"}, {"job_type": "b"}, {"job_type": "c", "priority": -1}, {"job_type": "BAD"}]')$$),
    'RQ003 job.invalid_priority: element 3: priority -1 is not an integer in 0..32767',
    'the first bad element is named by its 1-based index'
);

-- TEST: strings that do not parse
SELECT is(
    pgrun_test.error_of($$SELECT * FROM pgrun.enqueue_jobs('[{"job_type": "a"}, {"job_type": "b", "run_at": "next tuesday-ish"}]')$$),
    'RQ003 job.invalid_schedule: element 2: run_at "next tuesday-ish", delay null',
    'an unparsable run_at'
);
SELECT is(
    pgrun_test.error_of($$SELECT * FROM pgrun.enqueue_jobs('[{"job_type": "a", "delay": "soon"}]')$$),
    'RQ003 job.invalid_schedule: element 1: run_at null, delay "soon"',
    'an unparsable delay'
);
SELECT is(
    pgrun_test.error_of($$SELECT * FROM pgrun.enqueue_jobs('[{"job_type": "a"}, {"job_type": "b", "organization_id": "acme"}]')$$),
    'RQ003 job.invalid_organization: element 2: organization_id "acme" is not a usable uuid',
    'an organization_id that is not a uuid'
);

-- TEST: JSON types are checked
SELECT throws_ok(
    $$SELECT * FROM pgrun.enqueue_jobs('[{"job_type": "a", "priority": "5"}]')$$,
    'RQ003', 'job.invalid_priority', 'a priority given as a string'
);

-- TEST: nothing written by any refused batch
SELECT is((SELECT count(*) FROM pgrun.jobs), 0::bigint, 'no job was written');

SELECT * FROM finish();
ROLLBACK;
