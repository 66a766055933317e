-- max_held: a claimer holds at most that many running jobs of any one capped type, the ones
-- it already holds (its worker_id) counted, so jobs it claims ahead of its free slots do not
-- sit on room another claimer could run them in. Uncapped types, and a claim without
-- max_held, are as before.
BEGIN;
SELECT plan(9);

-- SETUP: ten jobs of a type capped at 8 ahead of three uncapped ones
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT pgrun_test.make_job(p_job_type => 'capped.job', p_priority => 1) FROM generate_series(1, 10);
SELECT pgrun_test.make_job(p_job_type => 'free.job', p_priority => 2) FROM generate_series(1, 3);
INSERT INTO pgrun.job_runtime_configs (job_type, max_concurrency) VALUES ('capped.job', 8);

CREATE TEMP TABLE w1_first ON COMMIT DROP AS
SELECT * FROM pgrun.claim_jobs(worker_id => 'w1', max_jobs => 6, max_held => 4);

-- TEST: max_held 4, four capped jobs; the batch's other places go to the jobs behind them
SELECT results_eq(
    'SELECT job_type, count(*) FROM w1_first GROUP BY job_type ORDER BY job_type',
    $$VALUES ('capped.job', 4::bigint), ('free.job', 2::bigint)$$,
    'four capped jobs (max_held, under the cap of 8), then two uncapped ones'
);

-- TEST: the claimer already holds four: no more of the type, though the cap has room
SELECT results_eq(
    'SELECT job_type FROM pgrun.claim_jobs(worker_id => ''w1'', max_jobs => 6, max_held => 4)',
    $$VALUES ('free.job')$$,
    'holding four, it gets none of the capped type, only the last uncapped job'
);

-- TEST: another claimer counts only its own: it gets the room left
SELECT is(
    (SELECT count(*) FROM pgrun.claim_jobs(worker_id => 'w2', max_jobs => 6, max_held => 4)),
    4::bigint,
    'a second claimer (max_held 4) takes the other four jobs the cap allows'
);
SELECT is(
    (SELECT count(*) FROM pgrun.jobs WHERE job_type = 'capped.job' AND status = 'running'),
    8::bigint,
    'eight capped jobs run: the cap, split between the two claimers'
);

-- TEST: a job it finished frees one of its places (the cap has room again too)
UPDATE pgrun.job_runtime_configs SET max_concurrency = 20 WHERE job_type = 'capped.job';
SELECT pgrun.complete_job(job_id, lease_token)
FROM w1_first WHERE job_type = 'capped.job' ORDER BY job_id LIMIT 1;
SELECT is(
    (SELECT count(*) FROM pgrun.claim_jobs(worker_id => 'w1', max_jobs => 6, max_held => 4)),
    1::bigint,
    'one of its four finished: it gets one more, though the cap has room for more'
);

-- TEST: max_held bounds each capped type on its own
INSERT INTO pgrun.job_runtime_configs (job_type, max_concurrency) VALUES ('other.capped', 100);
SELECT pgrun_test.make_job(p_job_type => 'other.capped') FROM generate_series(1, 5);
SELECT results_eq(
    'SELECT job_type, count(*) FROM pgrun.claim_jobs(worker_id => ''w1'', max_jobs => 10, max_held => 4) GROUP BY job_type',
    $$VALUES ('other.capped', 4::bigint)$$,
    'four of another capped type: the bound counts the running jobs of each type'
);

-- TEST: without max_held, the cap alone bounds it (as before)
SELECT pgrun_test.make_job(p_job_type => 'capped.job') FROM generate_series(1, 3);
SELECT is(
    (SELECT count(*) FROM pgrun.claim_jobs(worker_id => 'w1', max_jobs => 10) WHERE job_type = 'capped.job'),
    4::bigint,
    'max_held NULL: every queued capped job the cap has room for (the one left and three new)'
);

-- TEST: max_held does not bound an uncapped type
SELECT pgrun_test.make_job(p_job_type => 'free.job') FROM generate_series(1, 3);
SELECT is(
    (SELECT count(*) FROM pgrun.claim_jobs(worker_id => 'w1', max_jobs => 10, max_held => 1)),
    3::bigint,
    'max_held 1: still all three uncapped jobs'
);

-- TEST: max_held beyond the cap's room: the room bounds
UPDATE pgrun.job_runtime_configs SET max_concurrency = 1 WHERE job_type = 'other.capped';
SELECT pgrun_test.make_job(p_job_type => 'other.capped');
SELECT is_empty(
    'SELECT job_id FROM pgrun.claim_jobs(worker_id => ''w3'', max_jobs => 10, max_held => 100)',
    'a type at its cap is still full for a claimer with max_held to spare'
);

SELECT * FROM finish();
ROLLBACK;
