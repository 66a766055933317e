-- 0025 timezone names: the zone names pg_timezone_names lists, kept in a table that
-- upsert_schedule reads by key.
--
-- Why: a schedule's time zone must be a name pg_timezone_names lists (exactly, case included:
-- the names the Python scheduler's zoneinfo loads). pg_timezone_names is a function that
-- loads every zone file of the time zone database each time it is read: ~30-40 ms, which was
-- nearly all of an upsert_schedule's time (a deploy that upserts 1,000 schedules waited ~30 s
-- for it). The names are copied here once; pgrun._schedule_check_timezone looks a name up
-- here first and reads pg_timezone_names only for a name not found (a zone the server's time
-- zone database gained since, or an invalid name). A name is then taken when
-- pg_timezone_names lists it now or listed it here: the time zone database does not drop a
-- zone's name (an old one stays as a link to the zone that replaced it) (docs/schedules.md).
--
-- Rows are written only here: the table is read by SECURITY DEFINER functions; no pgrun role
-- is granted anything on it.

CREATE TABLE pgrun.timezone_names (
    name text PRIMARY KEY
);

INSERT INTO pgrun.timezone_names (name)
SELECT DISTINCT z.name FROM pg_catalog.pg_timezone_names() AS z;

COMMENT ON TABLE pgrun.timezone_names IS
'The zone names pg_timezone_names listed when pgrun was installed (or upgraded to 0025): '
'upsert_schedule checks a schedule''s zone here by key before reading pg_timezone_names.';
