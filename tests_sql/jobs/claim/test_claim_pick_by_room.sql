-- claim_jobs' per-type caps on what its walk found (pgrun._lease_pick_by_room, called only
-- when a capped type has room): every candidate of an uncapped type is kept, and of each
-- capped type the first `room` in claim order (priority, then run_at, then id), whatever
-- order the candidates come in.
BEGIN;
SELECT plan(5);

-- SETUP: capped.a and capped.b jobs interleaved with free ones, priorities and run_ats mixed
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
CREATE TEMP TABLE made ON COMMIT DROP AS
SELECT v.name, pgrun_test.make_job(p_job_type => v.job_type, p_priority => v.priority, p_run_at => v.run_at) AS id
FROM (VALUES
    ('a3', 'capped.a', 5, timestamptz '2029-12-31 23:00:00+00'),
    ('a1', 'capped.a', 1, timestamptz '2029-12-31 23:30:00+00'),
    ('a2', 'capped.a', 5, timestamptz '2029-12-31 22:00:00+00'),
    ('f1', 'free.job', 9, timestamptz '2029-12-31 23:00:00+00'),
    ('b2', 'capped.b', 3, timestamptz '2029-12-31 23:00:00+00'),
    ('b1', 'capped.b', 2, timestamptz '2029-12-31 23:59:00+00'),
    ('f2', 'free.job', 1, timestamptz '2029-12-31 21:00:00+00')
) AS v (name, job_type, priority, run_at);

CREATE FUNCTION pg_temp.kept(p_room_types text[], p_rooms bigint[], p_names text[])
RETURNS text[]
LANGUAGE sql
AS $$
    SELECT array_agg(m.name ORDER BY m.name)
    FROM pgrun._lease_pick_by_room(
        -- the candidates in the reverse of claim order: the helper orders them itself
        ARRAY(
            SELECT j.ctid FROM pgrun.jobs AS j JOIN made AS m ON m.id = j.id
            WHERE m.name = ANY(p_names) ORDER BY j.priority DESC, j.run_at DESC, j.id DESC
        ),
        p_room_types,
        p_rooms
    ) AS r
    JOIN pgrun.jobs AS j ON j.ctid = r.r_tid
    JOIN made AS m ON m.id = j.id
$$;

-- TEST: the first `room` of each capped type in claim order, every uncapped one
SELECT is(
    pg_temp.kept('{capped.a,capped.b}', '{2,1}', '{a1,a2,a3,b1,b2,f1,f2}'),
    '{a1,a2,b1,f1,f2}'::text[],
    'capped.a keeps a1 (priority 1) and a2 (priority 5, earlier run_at), capped.b keeps b1; free jobs all kept'
);

-- TEST: a room larger than the candidates keeps them all
SELECT is(
    pg_temp.kept('{capped.a}', '{10}', '{a1,a2,a3,f2}'),
    '{a1,a2,a3,f2}'::text[],
    'room 10 keeps all three capped.a candidates'
);

-- TEST: a type the rooms do not name is not capped here
SELECT is(
    pg_temp.kept('{capped.a}', '{1}', '{a2,a3,b1,b2}'),
    '{a2,b1,b2}'::text[],
    'capped.b is not in the rooms: both kept; capped.a keeps only its first (a2 before a3 by run_at)'
);

-- TEST: ties on priority and run_at go by id
UPDATE pgrun.jobs SET run_at = '2029-12-31 22:00:00+00' WHERE id = (SELECT id FROM made WHERE name = 'a3');
SELECT is(
    pg_temp.kept('{capped.a}', '{1}', '{a2,a3}'),
    ARRAY[(SELECT m.name FROM made AS m WHERE m.name IN ('a2', 'a3') ORDER BY m.id LIMIT 1)],
    'same priority and run_at: the smaller id is kept'
);

-- TEST: no candidates, nothing kept
SELECT is_empty(
    $$SELECT * FROM pgrun._lease_pick_by_room('{}'::tid[], '{capped.a}', '{1}')$$,
    'an empty candidate list keeps nothing'
);

SELECT * FROM finish();
ROLLBACK;
