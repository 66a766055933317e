-- The three doors that make jobs (enqueue_job, a released workflow step, a fired schedule)
-- go through one insert (pgrun._enqueue_insert_jobs) and resolve a job's settings the same
-- way: the request, else the type's definition, else the built-in defaults
-- (pgrun._job_defaults). Each door's job is also linked as its door says; no door writes an
-- event, and get_job_history derives each job's 'enqueued' event, naming the link, from the row.
BEGIN;
SELECT plan(10);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:10:00+00');

-- A definition that sets the queue, the attempts and the backoff base and jitter, and leaves
-- priority, timeout and backoff cap at the built-in defaults.
SELECT pgrun.upsert_job_definition(
    'doors.defined', queue => 'doors', max_attempts => 7, backoff_base_seconds => 5, backoff_jitter => 0
);

-- Door 1: enqueue_job. The request gives a priority only.
SELECT job_id AS enqueued_defined FROM pgrun.enqueue_job('doors.defined', priority => 3) \gset
SELECT job_id AS enqueued_bare FROM pgrun.enqueue_job('doors.bare') \gset

-- Door 2: a workflow's root steps are released at once; the defined step asks for a priority.
SELECT pgrun_test.wf_enqueue('{"steps": [
    {"key": "defined", "job_type": "doors.defined", "priority": 3},
    {"key": "bare", "job_type": "doors.bare"}
]}'::jsonb) AS run_id \gset

-- Door 3: schedules fired at a plan time in the past; the defined one asks for a priority.
SELECT schedule_id AS schedule_defined
FROM pgrun.upsert_schedule('doors-defined', '*/5 * * * *', 'doors.defined', priority => 3) \gset
SELECT schedule_id AS schedule_bare FROM pgrun.upsert_schedule('doors-bare', '*/5 * * * *', 'doors.bare') \gset
SELECT pgrun_test.fire(:'schedule_defined', ARRAY['2030-01-01 00:05:00+00'::timestamptz]);
SELECT pgrun_test.fire(:'schedule_bare', ARRAY['2030-01-01 00:05:00+00'::timestamptz]);

CREATE TEMP TABLE doors ON COMMIT DROP AS
SELECT d.door, d.type, j.*
FROM (VALUES
    ('enqueue', 'defined', :'enqueued_defined'::uuid),
    ('enqueue', 'bare', :'enqueued_bare'::uuid),
    ('workflow', 'defined', pgrun_test.wf_job(:'run_id', 'defined')),
    ('workflow', 'bare', pgrun_test.wf_job(:'run_id', 'bare')),
    ('schedule', 'defined', (SELECT id FROM pgrun.jobs WHERE schedule_id = :'schedule_defined')),
    ('schedule', 'bare', (SELECT id FROM pgrun.jobs WHERE schedule_id = :'schedule_bare'))
) AS d (door, type, job_id)
JOIN pgrun.jobs AS j ON j.id = d.job_id;

-- TEST: every door made its two jobs
SELECT is((SELECT count(*) FROM doors), 6::bigint, 'each door made a job of each type');

-- TEST: with a definition, the three resolve alike: request, then definition, then built-in
SELECT results_eq(
    $$SELECT door, queue, priority, max_attempts, timeout_seconds,
             backoff_base_seconds, backoff_max_seconds, backoff_jitter
      FROM doors WHERE type = 'defined' ORDER BY door$$,
    $$VALUES
        ('enqueue', 'doors', 3, 7, NULL::integer, 5::double precision, 3600::double precision, 0::double precision),
        ('schedule', 'doors', 3, 7, NULL::integer, 5::double precision, 3600::double precision, 0::double precision),
        ('workflow', 'doors', 3, 7, NULL::integer, 5::double precision, 3600::double precision, 0::double precision)$$,
    'defined type: priority from the request, queue, attempts, backoff base and jitter from the definition, '
    'timeout and backoff cap as the definition took them from the built-in defaults'
);

-- TEST: without a definition, the three get the built-in defaults
SELECT results_eq(
    $$SELECT door, queue, priority, max_attempts, timeout_seconds,
             backoff_base_seconds, backoff_max_seconds, backoff_jitter
      FROM doors WHERE type = 'bare' ORDER BY door$$,
    $$VALUES
        ('enqueue', 'default', 100, 20, NULL::integer, 2::double precision, 3600::double precision, 0.2::double precision),
        ('schedule', 'default', 100, 20, NULL::integer, 2::double precision, 3600::double precision, 0.2::double precision),
        ('workflow', 'default', 100, 20, NULL::integer, 2::double precision, 3600::double precision, 0.2::double precision)$$,
    'no definition: queue default, priority 100, max_attempts 20, no timeout, backoff 2 s / 3600 s / 0.2'
);

-- TEST: the built-in defaults are the one row pgrun._job_defaults returns
SELECT results_eq(
    $$SELECT DISTINCT queue, priority, max_attempts, timeout_seconds,
             backoff_base_seconds, backoff_max_seconds, backoff_jitter
      FROM doors WHERE type = 'bare'$$,
    $$SELECT * FROM pgrun._job_defaults()$$,
    'the bare jobs carry exactly pgrun._job_defaults()'
);

-- TEST: and so does a definition stated with nothing but its type
SELECT results_eq(
    $$SELECT queue, priority, max_attempts, timeout_seconds,
             backoff_base_seconds, backoff_max_seconds, backoff_jitter
      FROM pgrun.upsert_job_definition('doors.stated')$$,
    $$SELECT * FROM pgrun._job_defaults()$$,
    'upsert_job_definition fills omitted fields from pgrun._job_defaults()'
);

-- TEST: every job starts alike
SELECT is(
    (SELECT count(DISTINCT (status, attempt, created_at, updated_at)) FROM doors),
    1::bigint,
    'all six are queued, attempt 0, created at the same database now'
);

-- TEST: each door links its job, and the derived enqueued event says so
SELECT results_eq(
    $$SELECT door, type, workflow_run_id IS NOT NULL, workflow_step_key, schedule_id IS NOT NULL
      FROM doors ORDER BY door, type$$,
    $$VALUES ('enqueue', 'bare', false, NULL::text, false), ('enqueue', 'defined', false, NULL, false),
             ('schedule', 'bare', false, NULL, true), ('schedule', 'defined', false, NULL, true),
             ('workflow', 'bare', true, 'bare', false), ('workflow', 'defined', true, 'defined', false)$$,
    'workflow jobs name run and step, schedule jobs their schedule, plain jobs neither'
);

SELECT results_eq(
    $$SELECT d.door, d.type, e -> 'detail'
      FROM doors AS d
      CROSS JOIN LATERAL jsonb_array_elements(pgrun.get_job_history(d.id) -> 'events') AS e
      ORDER BY d.door, d.type$$,
    format(
        $$VALUES ('enqueue', 'bare', 'null'::jsonb), ('enqueue', 'defined', 'null'),
                 ('schedule', 'bare', %L), ('schedule', 'defined', %L),
                 ('workflow', 'bare', %L), ('workflow', 'defined', %L)$$,
        jsonb_build_object('schedule_id', :'schedule_bare'::uuid),
        jsonb_build_object('schedule_id', :'schedule_defined'::uuid),
        jsonb_build_object('workflow_run_id', :'run_id'::uuid, 'workflow_step_key', 'bare'),
        jsonb_build_object('workflow_run_id', :'run_id'::uuid, 'workflow_step_key', 'defined')
    ),
    'one derived event per job in its history, its detail naming the link (none for a plain job)'
);

SELECT is(
    (SELECT count(*) FROM doors AS d
     CROSS JOIN LATERAL jsonb_array_elements(pgrun.get_job_history(d.id) -> 'events') AS e
     WHERE e ->> 'event' = 'enqueued' AND e ->> 'to_status' = 'queued' AND e -> 'from_status' = 'null'
       AND (e ->> 'attempt')::integer = 0 AND (e ->> 'derived')::boolean
       AND (e ->> 'created_at')::timestamptz = d.created_at
       AND NOT EXISTS (SELECT FROM pgrun.job_events AS s WHERE s.job_id = d.id)),
    6::bigint,
    'every one is the enqueued transition into queued at the job''s created_at, derived: no door wrote a row'
);

-- TEST: a later definition change leaves the jobs every door made alone
SELECT pgrun.upsert_job_definition('doors.bare', queue => 'later', priority => 9);
SELECT is(
    (SELECT count(*) FROM pgrun.jobs AS j JOIN doors AS d ON d.id = j.id
     WHERE d.type = 'bare' AND j.queue = 'default' AND j.priority = 100),
    3::bigint,
    'jobs keep the settings they were made with'
);

SELECT * FROM finish();
ROLLBACK;
