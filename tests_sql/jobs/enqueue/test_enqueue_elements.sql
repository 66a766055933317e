-- pgrun._enqueue_elements hands the elements of a request array to the field rules and to
-- enqueue_jobs' parse: each with its 1-based index, in array order, the same values
-- jsonb_array_elements gives; and enqueue_jobs gives the jobs ids that ascend in array order
-- (one reserved UUIDv7 slot per element).
BEGIN;
SELECT plan(5);

-- TEST: index and value of each element, in order
SELECT results_eq(
    $$SELECT ord, elem FROM pgrun._enqueue_elements('[{"a": 1}, "x", null, [2, 3], {"job_type": "t"}]')$$,
    $$SELECT e.ord::integer, e.elem
      FROM jsonb_array_elements('[{"a": 1}, "x", null, [2, 3], {"job_type": "t"}]') WITH ORDINALITY AS e (elem, ord)
      ORDER BY e.ord$$,
    'every element, 1-based, in array order, as jsonb_array_elements has it'
);

-- TEST: an empty array has no elements
SELECT is_empty(
    $$SELECT * FROM pgrun._enqueue_elements('[]')$$,
    'an empty array has no elements'
);

-- TEST: a long array keeps its order end to end
SELECT is(
    (SELECT count(*) FILTER (WHERE (elem ->> 'n')::integer <> ord)
     FROM pgrun._enqueue_elements((SELECT jsonb_agg(jsonb_build_object('n', g) ORDER BY g)
                                   FROM generate_series(1, 5000) AS g))),
    0::bigint,
    'element n of 5,000 comes out as index n'
);

-- TEST: enqueue_jobs' ids ascend in array order, one per element
CREATE TEMP TABLE r ON COMMIT DROP AS
SELECT * FROM pgrun.enqueue_jobs((
    SELECT jsonb_agg(jsonb_build_object('job_type', 'ids.order', 'payload', jsonb_build_object('n', g)) ORDER BY g)
    FROM generate_series(1, 300) AS g
));
SELECT is(
    (SELECT array_agg(job_id ORDER BY ordinality) = array_agg(job_id ORDER BY job_id) FROM r),
    true,
    'the ids ascend in array order'
);
SELECT is(
    (SELECT count(*) FROM r JOIN pgrun.jobs AS j ON j.id = r.job_id WHERE (j.payload ->> 'n')::integer = r.ordinality),
    300::bigint,
    'each element made its own job'
);

SELECT * FROM finish();
ROLLBACK;
