-- A capped type's jobs past its room do not take a batch's places: when the first max_jobs
-- ready jobs in claim order hold more of a capped type than its room, the claim goes on to
-- the next jobs it may take, so it comes back short only when no more are ready for it (the
-- Python worker reads a short claim as "drained" and sleeps). Through each way the claim
-- finds its jobs: the plain walk, the filtered walk, and past the walk's bound.
BEGIN;
SELECT plan(9);

-- SETUP: five jobs of a type capped at 2 ahead of three of an uncapped type
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT pgrun_test.make_job(p_job_type => 'capped.job', p_priority => 1) FROM generate_series(1, 5);
SELECT pgrun_test.make_job(p_job_type => 'free.job', p_priority => 2) AS free1 \gset
SELECT pgrun_test.make_job(p_job_type => 'free.job', p_priority => 3) AS free2 \gset
SELECT pgrun_test.make_job(p_job_type => 'free.job', p_priority => 4) AS free3 \gset
SELECT pgrun.set_job_runtime_config('capped.job', max_concurrency => 2);

CREATE TEMP TABLE plain ON COMMIT DROP AS
SELECT row_number() OVER () AS n, * FROM pgrun.claim_jobs(worker_id => 'w1', max_jobs => 3);

-- TEST: the plain walk: the cap's two, then the first free job, in claim order
SELECT results_eq(
    'SELECT job_type FROM plain ORDER BY n',
    ARRAY['capped.job', 'capped.job', 'free.job'],
    'max_jobs 3 with five capped jobs ahead: two of them (the cap) and the first free job'
);
SELECT is((SELECT job_id FROM plain WHERE n = 3), :'free1'::uuid, 'the free job is the first of its type');

-- TEST: the capped type's surplus stays queued and unclaimed
SELECT is(
    (SELECT count(*) FROM pgrun.jobs WHERE job_type = 'capped.job' AND status = 'queued' AND attempt = 0),
    3::bigint,
    'the other three capped jobs are still queued, never claimed'
);

-- TEST: the filtered walk (a queue filter), with the type now at its cap and raised by one
SELECT pgrun.set_job_runtime_config('capped.job', max_concurrency => 3);
SELECT results_eq(
    $$SELECT job_type FROM pgrun.claim_jobs(worker_id => 'w2', max_jobs => 3, queues => ARRAY['default'])$$,
    ARRAY['capped.job', 'free.job', 'free.job'],
    'a queue filter: the one place left of the cap, then the next two free jobs'
);
SELECT is(
    (SELECT array_agg(id ORDER BY priority) FROM pgrun.jobs WHERE job_type = 'free.job' AND status = 'running'),
    ARRAY[:'free1'::uuid, :'free2'::uuid, :'free3'::uuid],
    'every free job runs'
);

-- SETUP: two capped types, one place each, interleaved at the head; a free job behind
SELECT pgrun_test.make_job(p_job_type => 'cap.a', p_priority => 0) FROM generate_series(1, 3);
SELECT pgrun_test.make_job(p_job_type => 'cap.b', p_priority => 0) FROM generate_series(1, 3);
SELECT pgrun_test.make_job(p_job_type => 'free.job', p_priority => 5) AS free4 \gset
SELECT pgrun.set_job_runtime_config('cap.a', max_concurrency => 1);
SELECT pgrun.set_job_runtime_config('cap.b', max_concurrency => 1);

-- TEST: both capped types overflow in one batch; the claim still fills it
SELECT results_eq(
    $$SELECT job_type FROM pgrun.claim_jobs(worker_id => 'w3', max_jobs => 3, job_types => ARRAY['cap.a', 'cap.b', 'free.job'])$$,
    ARRAY['cap.a', 'cap.b', 'free.job'],
    'two capped types at one place each, and the free job behind them'
);

-- SETUP: a capped type's surplus longer than the walk's bound (4 x 2 + 100 entries)
SELECT pgrun_test.make_job(p_job_type => 'cap.c', p_priority => 0) FROM generate_series(1, 150);
SELECT pgrun.set_job_runtime_config('cap.c', max_concurrency => 1);
SELECT pgrun_test.make_job(p_job_type => 'free.job', p_priority => 6) AS free5 \gset

-- TEST: past the walk's bound, the free job is still found
SELECT results_eq(
    $$SELECT job_type FROM pgrun.claim_jobs(worker_id => 'w4', max_jobs => 2)$$,
    ARRAY['cap.c', 'free.job'],
    'one place of cap.c, then past its 149 others the free job'
);
SELECT is(
    (SELECT status FROM pgrun.jobs WHERE id = :'free5'),
    'running',
    'the free job behind the wall runs'
);

-- TEST: nothing left it may take: the claim is empty, whatever the capped types hold
SELECT is_empty(
    $$SELECT job_id FROM pgrun.claim_jobs(worker_id => 'w5', max_jobs => 5)$$,
    'every capped type at its cap and no free job: an empty claim'
);

SELECT * FROM finish();
ROLLBACK;
