-- 0012 workflows: a run's idempotency key is unique per (workflow name, organization).
--
-- Before, workflow_runs_idempotency_idx made a key unique per organization alone, so two kinds
-- of workflow (workflow_runs.name: "ship", "invoice") could not both use a natural key such as
-- "order:42": the second enqueue was a conflicting retry of the first. The key now names a run
-- among the runs of one name in one organization, as a job's key does per job type.
--
-- name is optional (NULL: a run without a label), and a run without a name is a kind of its
-- own: an unnamed enqueue replays or conflicts with the unnamed run holding the key, never with
-- a named one. NULL takes part as '' through coalesce(name, '') in the index expression, the
-- way organization_id already takes part as the nil uuid. That, rather than NULLS NOT DISTINCT,
-- because enqueue_workflow's lookup after a conflict is then one equality per column,
-- coalesce(r.name, '') = coalesce(v_name, ''), which matches the index expression and is a
-- single index probe; with NULLS NOT DISTINCT on the bare column the lookup would have to say
-- "r.name = v_name OR both are NULL" (IS NOT DISTINCT FROM is not an indexable operator), and
-- ON CONFLICT and the lookup would describe the key in two different ways. '' is never a real
-- name: workflow_runs_name_check requires 1..200 characters.
--
-- Existing runs: the new key (name, organization, key) is wider than the old one (organization,
-- key), so rows that were unique under the old index are unique under the new one, and the
-- index builds on any existing install without a check of our own. Existing keyed runs keep
-- replaying: a retry carries the same name (the name is part of the stored request snapshot),
-- so it finds the same run. The new index is built before the old one is dropped, so the table
-- is never without a unique key. CREATE INDEX (not CONCURRENTLY: the runner owns the
-- transaction) holds a SHARE lock on workflow_runs while it builds, which blocks enqueues and
-- run updates, not reads, for the length of one scan of the table.
--
-- Every built-in call is schema-qualified: a migration runs with the migrator's search_path
-- (coalesce is syntax, not a call).

CREATE UNIQUE INDEX workflow_runs_idempotency_name_idx ON pgrun.workflow_runs (
    coalesce(name, ''),
    coalesce(organization_id, '00000000-0000-0000-0000-000000000000'::uuid),
    idempotency_key
)
WHERE idempotency_key IS NOT NULL;

DROP INDEX pgrun.workflow_runs_idempotency_idx;

COMMENT ON INDEX pgrun.workflow_runs_idempotency_name_idx IS
'A run''s idempotency key is unique per (workflow name, organization); NULL name and NULL organization '
'take part as '''' and the nil uuid.';
