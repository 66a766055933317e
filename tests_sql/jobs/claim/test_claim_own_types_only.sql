-- A claimer that names its job types, when no queued job (ready or not yet due) is of another
-- type: the type filter passes over nothing, so the claim takes the plain walk of
-- jobs_claim_idx, locking as it reads and stopping at max_jobs, after one probe of
-- jobs_claim_type_idx per gap between its types (below the first, between two, above the
-- last). A queued job of another type in any gap sends it down the bounded walk instead,
-- which reads each entry again by tuple id and counts the rest of the walk when it comes back
-- short. Either way the batch is the same: the first jobs of its types, in claim order.
-- Running and finished jobs of other types are not queued and do not count.
-- Which walk ran shows in jobs_claim_idx's reads: the plain walk reads the ready entries once;
-- the bounded walk, coming back short, reads them twice (the walk, then its count). Entries
-- of rows gone since (claims rolled back to a savepoint, jobs of other types) are read too, so
-- each case compares with the plain walk's reads over the same entries; a job not yet due is
-- skipped inside the index and not read.
BEGIN;
SELECT plan(12);

-- Index entries read by this transaction so far (pg_stat_get_xact_tuples_returned)
CREATE FUNCTION pg_temp.reads(p_index text) RETURNS bigint
LANGUAGE sql AS $$ SELECT pg_stat_get_xact_tuples_returned(p_index::regclass) $$;

-- One claim of up to ten jobs of p_types by p_worker: what it took, in order, and the entries
-- of jobs_claim_idx it read
CREATE FUNCTION pg_temp.claim(p_worker text, p_types text[])
RETURNS TABLE (taken uuid[], claim_idx bigint)
LANGUAGE plpgsql AS $$
DECLARE
    v_claim bigint := pg_temp.reads('pgrun.jobs_claim_idx');
BEGIN
    taken := ARRAY(SELECT c.job_id FROM pgrun.claim_jobs(p_worker, 60, 10, NULL, p_types) AS c);
    claim_idx := pg_temp.reads('pgrun.jobs_claim_idx') - v_claim;
    RETURN NEXT;
END;
$$;

-- The same claim beside one queued job of p_other_type that is not yet due, all undone (the
-- job, the claim) before it returns
CREATE FUNCTION pg_temp.claim_beside(p_other_type text, p_types text[])
RETURNS TABLE (taken uuid[], claim_idx bigint)
LANGUAGE plpgsql AS $$
BEGIN
    BEGIN
        PERFORM pgrun_test.make_job(p_job_type => p_other_type, p_run_at => '2030-01-02 00:00:00+00');
        SELECT c.taken, c.claim_idx INTO taken, claim_idx FROM pg_temp.claim('w1', p_types) AS c;
        RAISE EXCEPTION USING ERRCODE = 'P0001', MESSAGE = 'undo';
    EXCEPTION WHEN SQLSTATE 'P0001' THEN
        NULL;
    END;
    RETURN NEXT;
END;
$$;

-- SETUP: three ready jobs of b.job, out of creation order; a running job of a.job and a
-- succeeded job of e.job (neither is queued). Priorities from 1000 up: the entries this file
-- leaves behind sort after those of the other files' claims.
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT pgrun_test.make_job(p_job_type => 'b.job', p_priority => 1012) AS b12 \gset
SELECT pgrun_test.make_job(p_job_type => 'b.job', p_priority => 1010) AS b10 \gset
SELECT pgrun_test.make_job(p_job_type => 'b.job', p_priority => 1011) AS b11 \gset
SELECT pgrun_test.make_job(p_job_type => 'a.job', p_priority => 1000);
SELECT pgrun_test.make_job(p_job_type => 'e.job', p_priority => 1000);
SELECT count(*) FROM pgrun.claim_jobs('other', 60, 2, NULL, ARRAY['a.job', 'e.job']);
SELECT pgrun.complete_job(j.id, j.lease_token) FROM pgrun.jobs AS j WHERE j.job_type = 'e.job';

-- A claim first, undone: its walk reads the entries earlier files' rolled-back jobs left in
-- jobs_claim_idx and marks them dead, so the reads below count this file's entries only
SAVEPOINT warm;
SELECT count(*) FROM pgrun.claim_jobs('w0', 60, 10, NULL, ARRAY['b.job']);
ROLLBACK TO SAVEPOINT warm;

-- TEST: only its own types queued: the plain walk, the three jobs in claim order
SAVEPOINT own_only;
SELECT taken AS plain_taken, claim_idx AS plain_reads FROM pg_temp.claim('w1', ARRAY['b.job', 'd.job']) \gset
SELECT results_eq(
    format('SELECT %L::uuid[], %s >= 3', :'plain_taken', :'plain_reads'),
    format('VALUES (ARRAY[%L, %L, %L]::uuid[], true)', :'b10', :'b11', :'b12'),
    'no other type queued: the three jobs in claim order, each ready entry read'
);
SELECT results_eq(
    $$SELECT status, worker_id, attempt FROM pgrun.jobs WHERE job_type = 'b.job' ORDER BY priority$$,
    $$VALUES ('running', 'w1', 1), ('running', 'w1', 1), ('running', 'w1', 1)$$,
    'all three running under w1''s lease'
);
ROLLBACK TO SAVEPOINT own_only;

-- TEST: a queued job of another type in any gap (not yet due, so nobody could take it now)
-- sends the claim down the bounded walk: the same three jobs, the entries read twice
SELECT results_eq(
    $$SELECT o.other, c.taken, c.claim_idx
      FROM (VALUES ('a.job', '{b.job,d.job}'), ('c.job', '{d.job,b.job}'), ('e.job', '{b.job,d.job}'))
          AS o (other, types)
      CROSS JOIN LATERAL pg_temp.claim_beside(o.other, o.types::text[]) AS c$$,
    format(
        $$VALUES ('a.job', %1$s, 2 * %2$s::bigint), ('c.job', %1$s, 2 * %2$s::bigint), ('e.job', %1$s, 2 * %2$s::bigint)$$,
        format('ARRAY[%L, %L, %L]::uuid[]', :'b10', :'b11', :'b12'), :'plain_reads'
    ),
    'another type queued below the first type, between two (named out of order), above the last: the bounded walk, the same jobs'
);

-- TEST: its own type's job not yet due is queued too, and is no reason for the bounded walk
SELECT pgrun_test.make_job(p_job_type => 'b.job', p_run_at => '2030-01-02 00:00:00+00') AS b_later \gset
SELECT results_eq(
    format('SELECT taken, claim_idx FROM pg_temp.claim(%L, %L)', 'w1', '{b.job}'),
    format('VALUES (ARRAY[%L, %L, %L]::uuid[], %s::bigint)', :'b10', :'b11', :'b12', :'plain_reads'),
    'a later b.job: still the plain walk, the three ready jobs'
);
SELECT is(
    (SELECT status FROM pgrun.jobs WHERE id = :'b_later'),
    'queued',
    'the later job is not claimed'
);
ROLLBACK TO SAVEPOINT own_only;

-- TEST: a type named twice, and an empty list or a NULL in it
SELECT results_eq(
    format('SELECT taken, claim_idx FROM pg_temp.claim(%L, %L)', 'w1', '{b.job,b.job}'),
    format('VALUES (ARRAY[%L, %L, %L]::uuid[], %s::bigint)', :'b10', :'b11', :'b12', :'plain_reads'),
    'b.job named twice: the plain walk, each job once'
);
ROLLBACK TO SAVEPOINT own_only;
SELECT results_eq(
    format('SELECT taken, claim_idx FROM pg_temp.claim(%L, %L)', 'w1', '{NULL,b.job}'),
    format('VALUES (ARRAY[%L, %L, %L]::uuid[], 2 * %s::bigint)', :'b10', :'b11', :'b12', :'plain_reads'),
    'a NULL beside b.job: the bounded walk, the three jobs'
);
ROLLBACK TO SAVEPOINT own_only;
SELECT is(
    (SELECT cardinality(taken) FROM pg_temp.claim('w1', '{}')),
    0,
    'an empty list of types: nothing'
);
ROLLBACK TO SAVEPOINT own_only;

-- TEST: a ready job of another type ahead of its own: the bounded walk passes over it (one
-- more ready entry than the plain walk read, twice)
SELECT pgrun_test.make_job(p_job_type => 'c.job', p_priority => 1000) AS c0 \gset
SELECT results_eq(
    format('SELECT taken, claim_idx FROM pg_temp.claim(%L, %L)', 'w1', '{b.job}'),
    format('VALUES (ARRAY[%L, %L, %L]::uuid[], 2 * (%s + 1)::bigint)', :'b10', :'b11', :'b12', :'plain_reads'),
    'a ready c.job ahead: passed over, the three b.job jobs claimed'
);
SELECT is(
    (SELECT status FROM pgrun.jobs WHERE id = :'c0'),
    'queued',
    'the job of the other type stays queued'
);
ROLLBACK TO SAVEPOINT own_only;

-- TEST: a paused type among its own (a left-out type): its ready job, first in claim order,
-- is passed over and stays queued (the plain walk with d.job in its list would take it)
SELECT pgrun.set_job_runtime_config('d.job', paused => true);
SELECT pgrun_test.make_job(p_job_type => 'd.job', p_priority => 1000) AS d0 \gset
SELECT results_eq(
    format('SELECT taken FROM pg_temp.claim(%L, %L)', 'w1', '{b.job,d.job}'),
    format('VALUES (ARRAY[%L, %L, %L]::uuid[])', :'b10', :'b11', :'b12'),
    'd.job paused: passed over, the three b.job jobs claimed'
);
SELECT is(
    (SELECT status FROM pgrun.jobs WHERE id = :'d0'),
    'queued',
    'the paused type''s job stays queued'
);

SELECT * FROM finish();
ROLLBACK;
