-- 0014 workflows: a job step may name its own organization, and a delay or a run_at for its
-- job (issue 13 item 11).
--
-- workflow_steps.organization_id: the organization the step's job is stamped with; NULL (every
-- existing step) means the run's, as before. enqueue_workflow and append_workflow_steps accept
-- only an organization the caller could enqueue a job in directly (docs/workflows.md).
-- workflow_steps.delay / run_at: when the step's job may start, relative to its release (the
-- job's run_at = release time + delay) or absolute (greatest(release time, run_at)); at most
-- one of the two, both NULL (every existing step) for "at release", as before. The ranges are
-- those of the time-argument rule (pgrun._time_ok): a delay of 0 s..100 years; run_at is
-- checked against the clock when the step is given, so the table only requires it finite.
-- External steps make no job and carry none of the three.
--
-- The columns are nullable without a default, so adding them rewrites nothing; adding the
-- checks reads the table's rows once. Every built-in call is schema-qualified: a migration
-- runs with the migrator's search_path.

ALTER TABLE pgrun.workflow_steps
ADD COLUMN organization_id uuid,
ADD COLUMN delay interval,
ADD COLUMN run_at timestamptz,
ADD CONSTRAINT workflow_steps_organization_check CHECK (
    organization_id <> '00000000-0000-0000-0000-000000000000'::uuid
),
ADD CONSTRAINT workflow_steps_start_check CHECK (
    (delay IS NULL OR run_at IS NULL)
    AND pg_catalog.extract('epoch', delay) BETWEEN 0 AND 3155760000
    AND pg_catalog.isfinite(run_at)
),
ADD CONSTRAINT workflow_steps_placement_kind_check CHECK (
    kind = 'job' OR (organization_id IS NULL AND delay IS NULL AND run_at IS NULL)
);

COMMENT ON COLUMN pgrun.workflow_steps.organization_id IS
'The organization the step''s job is stamped with; NULL = the run''s.';

COMMENT ON COLUMN pgrun.workflow_steps.delay IS
'The step''s job starts this long after the step is released (0 s..100 years); NULL = at release.';

COMMENT ON COLUMN pgrun.workflow_steps.run_at IS
'The step''s job starts no earlier than this (and no earlier than its release); NULL = at release.';
