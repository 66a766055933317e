-- 0008 production clock: pgrun.now() is the database clock and nothing else.
--
-- Until now pgrun.now() honoured the session setting pgrun.fake_now, so any session could
-- move pgrun's clock: reap another worker's healthy lease, complete on a lease that had
-- really expired, or claim a delayed job at once. In an install no session setting moves
-- the clock any more. The test suites install the clock-aware pgrun.now() themselves, as
-- the owner (pgrun.testing.install_test_clock); `pgrun check-schema` reports an install
-- that carries it.
--
-- The function stays a one-line SQL function without a SET clause, so it is inlined into
-- every statement that calls it (docs/performance.md); CREATE OR REPLACE keeps its owner
-- and grants. Every built-in call is schema-qualified: a migration runs with the
-- migrator's search_path.

CREATE OR REPLACE FUNCTION pgrun.now()
RETURNS timestamptz
LANGUAGE sql
STABLE
PARALLEL SAFE
AS $$
    SELECT pg_catalog.now()
$$;

COMMENT ON FUNCTION pgrun.now() IS
'The database clock pgrun uses for every timestamp: the transaction start time. No session setting moves it.';
