-- A claim reads at most 4 x max_jobs + 100 entries of jobs_claim_idx in claim order. When that
-- walk comes back short and a filter or a left-out type is in play, the rest is claimed per
-- (job type, queue) through jobs_claim_type_idx: jobs it may not take that sit ahead of its own
-- (another type or queue, a paused type, a capped type at its cap) are not read one by one.
-- Whichever path finds a job, the batch is the same: the first jobs the claimer may take, in
-- claim order, each once, caps kept, and nothing else changed.
BEGIN;
SELECT plan(13);

-- SETUP: 150 jobs the claimers below may not take, ahead of everything else (priority 0;
-- max_jobs => 2 reads at most 108 entries)
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT pgrun_test.make_job(p_job_type => 'other.job', p_queue => 'bulk', p_priority => 0)
FROM generate_series(1, 150);
-- Jobs of own.job behind them, over two queues, out of creation order.
SELECT pgrun_test.make_job(p_job_type => 'own.job', p_queue => 'b', p_priority => 6) AS b6 \gset
SELECT pgrun_test.make_job(p_job_type => 'own.job', p_queue => 'a', p_priority => 5) AS a5 \gset
SELECT pgrun_test.make_job(p_job_type => 'own.job', p_queue => 'b', p_priority => 5) AS b5 \gset
SELECT pgrun_test.make_job(p_job_type => 'own.job', p_queue => 'a', p_priority => 7) AS a7 \gset

CREATE TEMP TABLE reads ON COMMIT DROP AS
SELECT i.index_name, pg_stat_get_xact_tuples_returned(i.index_name::regclass) AS before
FROM unnest(ARRAY['pgrun.jobs_claim_idx', 'pgrun.jobs_claim_type_idx']) AS i (index_name);
CREATE TEMP TABLE taken ON COMMIT DROP AS
SELECT * FROM pgrun.claim_jobs(worker_id => 'w1', max_jobs => 2, job_types => ARRAY['own.job']);

-- TEST: the walk stopped at its bound, and the type's own index found the rest (the walk's
-- 108 entries are counted once more to tell that it stopped at its bound)
SELECT results_eq(
    $$SELECT r.index_name, n.read <= 216, n.read > 0
      FROM reads AS r, LATERAL (SELECT pg_stat_get_xact_tuples_returned(r.index_name::regclass) - r.before AS read) AS n
      ORDER BY r.index_name$$,
    $$VALUES ('pgrun.jobs_claim_idx', true, true), ('pgrun.jobs_claim_type_idx', true, true)$$,
    'at most 2 x 108 entries of jobs_claim_idx read (4 x 2 + 100), then jobs_claim_type_idx'
);

-- TEST: past the walk's bound, the first two of the type in claim order, across queues
SELECT results_eq(
    'SELECT job_id FROM taken',
    ARRAY[:'a5'::uuid, :'b5'::uuid],
    'a type filter past 150 other jobs: the first two of own.job in claim order, over both queues'
);

-- TEST: they are claimed like any other: running, leased to the claimer
SELECT results_eq(
    $$SELECT status, worker_id, attempt FROM pgrun.jobs WHERE id IN (SELECT job_id FROM taken) ORDER BY id$$,
    $$VALUES ('running', 'w1', 1), ('running', 'w1', 1)$$,
    'both are running under w1''s lease, attempt 1'
);

-- TEST: nothing else changed: the rows the per-queue walks locked and did not keep stay queued
SELECT results_eq(
    $$SELECT job_type, status, count(*) FROM pgrun.jobs GROUP BY job_type, status ORDER BY job_type, status$$,
    $$VALUES ('other.job', 'queued', 150::bigint), ('own.job', 'queued', 2::bigint), ('own.job', 'running', 2::bigint)$$,
    'the other type untouched, two of own.job still queued'
);

-- TEST: a type named twice is one type: each job once
SELECT results_eq(
    $$SELECT job_id FROM pgrun.claim_jobs(worker_id => 'w2', max_jobs => 5, job_types => ARRAY['own.job', 'own.job'])$$,
    ARRAY[:'b6'::uuid, :'a7'::uuid],
    'the rest of own.job, each once, in claim order'
);

-- TEST: a queue filter past 150 jobs of another queue (any type)
SELECT pgrun_test.make_job(p_job_type => 'other.job', p_queue => 'mail', p_priority => 9) AS mail9 \gset
SELECT pgrun_test.make_job(p_job_type => 'own.job', p_queue => 'mail', p_priority => 8) AS mail8 \gset
SELECT results_eq(
    $$SELECT job_id FROM pgrun.claim_jobs(worker_id => 'w3', max_jobs => 2, queues => ARRAY['mail'])$$,
    ARRAY[:'mail8'::uuid, :'mail9'::uuid],
    'a queue filter: both jobs of the queue, whatever their type, in claim order'
);

-- TEST: the walk's own finds come first and the per-pair path adds the rest, no job twice
SELECT pgrun_test.make_job(p_job_type => 'mixed.job', p_priority => 0) AS m0 \gset
SELECT pgrun_test.make_job(p_job_type => 'mixed.job', p_priority => 3) AS m3 \gset
SELECT pgrun_test.make_job(p_job_type => 'mixed.job', p_priority => 4) AS m4 \gset
SELECT results_eq(
    $$SELECT job_id FROM pgrun.claim_jobs(worker_id => 'w4', max_jobs => 3, job_types => ARRAY['mixed.job'])$$,
    ARRAY[:'m0'::uuid, :'m3'::uuid, :'m4'::uuid],
    'one job found by the walk, two past it: three distinct jobs in claim order'
);

-- TEST: a paused type ahead, no filter
SELECT pgrun.set_job_runtime_config('other.job', paused => true);
SELECT pgrun_test.make_job(p_job_type => 'late.job', p_priority => 20) AS late \gset
SELECT results_eq(
    $$SELECT job_id FROM pgrun.claim_jobs(worker_id => 'w5', max_jobs => 2)$$,
    ARRAY[:'late'::uuid],
    'the paused type''s 150 jobs are passed over, the one job behind them claimed'
);
SELECT is(
    (SELECT count(*) FROM pgrun.jobs WHERE job_type = 'other.job' AND status = 'queued'),
    150::bigint,
    'the paused type''s jobs all stay queued'
);
SELECT pgrun.set_job_runtime_config('other.job', paused => false);

-- TEST: a capped type past the walk gets only its room
SELECT pgrun.set_job_runtime_config('capped.job', max_concurrency => 2);
SELECT pgrun_test.make_job(p_job_type => 'capped.job', p_priority => 30) FROM generate_series(1, 4);
SELECT is(
    (SELECT count(*) FROM pgrun.claim_jobs(worker_id => 'w6', max_jobs => 2, job_types => ARRAY['capped.job'])),
    2::bigint,
    'a capped type past the walk: two jobs, its cap'
);
SELECT is_empty(
    $$SELECT job_id FROM pgrun.claim_jobs(worker_id => 'w6', max_jobs => 2, job_types => ARRAY['capped.job'])$$,
    'at its cap, nothing more of it'
);

-- TEST: a type with no ready job (only a later one) past the walk: nothing, and the job waits
SELECT pgrun_test.make_job(p_job_type => 'later.job', p_run_at => '2030-01-02 00:00:00+00') AS later \gset
SELECT is_empty(
    $$SELECT job_id FROM pgrun.claim_jobs(worker_id => 'w7', max_jobs => 2, job_types => ARRAY['later.job'])$$,
    'a job not yet due is not claimed past the walk either'
);
SELECT pgrun_test.freeze_time('2030-01-02 00:00:00+00');
SELECT results_eq(
    $$SELECT job_id FROM pgrun.claim_jobs(worker_id => 'w7', max_jobs => 2, job_types => ARRAY['later.job'])$$,
    ARRAY[:'later'::uuid],
    'once due, it is'
);

SELECT * FROM finish();
ROLLBACK;
