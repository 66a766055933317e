-- The queue's vacuum cadence (sql/0018_jobs_vacuum_cadence.sql): autovacuum of pgrun.jobs
-- starts after a fixed number of dead row versions, not a share of the table (which the
-- finished history would dominate), and every VACUUM of jobs vacuums its indexes (no bypass:
-- the dead entries at the head of jobs_claim_idx are what claim_jobs walks over).
-- tests_py/test_jobs_vacuum_cadence.py shows a plain VACUUM doing it.
BEGIN;
SELECT plan(2);

-- TEST: the storage parameters of jobs, exactly
SELECT is(
    (SELECT array_agg(o ORDER BY o) FROM unnest((SELECT c.reloptions FROM pg_class AS c
        WHERE c.oid = 'pgrun.jobs'::regclass)) AS o),
    ARRAY['autovacuum_vacuum_scale_factor=0', 'autovacuum_vacuum_threshold=10000', 'fillfactor=50',
        'vacuum_index_cleanup=on'],
    'jobs: autovacuum after 10,000 dead rows whatever its size, indexes vacuumed every time, fillfactor 50'
);

-- TEST: the history tables keep PostgreSQL's defaults (only the queue is on a fixed cadence)
SELECT is_empty(
    $$SELECT c.relname FROM pg_class AS c
      WHERE c.relnamespace = 'pgrun'::regnamespace AND c.relkind = 'r' AND c.relname <> 'jobs'
        AND c.reloptions::text ~ 'autovacuum|vacuum_index_cleanup'$$,
    'no other pgrun table carries vacuum settings'
);

SELECT * FROM finish();
ROLLBACK;
