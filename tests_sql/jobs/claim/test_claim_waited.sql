-- claim_jobs returns each job's run_at (when it became due) and started_at (the claim's
-- time), both on the database clock: started_at - run_at is how long it waited while ready.
BEGIN;
SELECT plan(3);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT pgrun_test.make_job(p_run_at => '2030-01-01 00:10:00+00') AS job \gset
SELECT pgrun_test.freeze_time('2030-01-01 00:10:02.5+00');
CREATE TEMP TABLE claimed AS
SELECT c.* FROM pgrun.claim_jobs(worker_id => 'w') AS c;

-- TEST: run_at is the job's due time
SELECT is(
    (SELECT row(c.job_id, c.run_at)::text FROM claimed AS c),
    row(:'job'::uuid, '2030-01-01 00:10:00+00'::timestamptz)::text,
    'run_at is when the job became due'
);

-- TEST: started_at is the claim's time, as the job row records it
SELECT results_eq(
    'SELECT c.started_at, c.started_at - c.run_at FROM claimed AS c',
    $$VALUES ('2030-01-01 00:10:02.5+00'::timestamptz, interval '2.5 seconds')$$,
    'started_at is the claim''s time: the job waited 2.5 s while ready'
);

SELECT is(
    (SELECT j.started_at FROM pgrun.jobs AS j WHERE j.id = :'job'::uuid),
    (SELECT c.started_at FROM claimed AS c),
    'the same started_at as the running attempt on the job row'
);

SELECT * FROM finish();
ROLLBACK;
