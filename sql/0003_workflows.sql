-- 0003 workflows: runs of a DAG of steps, their edges, and the record of appends.
--
-- A run holds steps; a step is a job template (kind 'job') or a gate that an outside
-- system closes (kind 'external'). Edges say which step waits for which, and whether it
-- needs the prerequisite to succeed (on_success) or only to finish (on_terminal). Each
-- step counts its unresolved edges in dependency_count_pending; when that reaches zero
-- the step is released. plpgsql/workflows/ holds every transition; docs/workflows.md
-- describes the spec format and the lock protocol.
--
-- The workflow tables reference each other with foreign keys. Between jobs and
-- workflows there is none: jobs is the hot table, and jobs.workflow_run_id /
-- jobs.workflow_step_key (0002) are plain columns, indexed for the cancel path.

CREATE TABLE pgrun.workflow_runs (
    id uuid PRIMARY KEY DEFAULT pgrun.uuidv7(),
    -- an optional label for people and dashboards; part of the idempotency snapshot
    name text,
    status text NOT NULL DEFAULT 'running',
    organization_id uuid,
    -- idempotency: the key is unique per organization_id; the snapshot is the canonical
    -- original request (steps sorted by key, dependencies sorted) a keyed retry is compared with
    idempotency_key text,
    enqueue_request jsonb,
    metadata jsonb NOT NULL DEFAULT '{}',
    -- steps not yet terminal; kept by every transition under the run row lock, so the
    -- run status needs no scan of its steps (the run finishes when it reaches 0)
    open_step_count integer NOT NULL,
    cancel_reason text,
    created_at timestamptz NOT NULL DEFAULT pgrun.now(),
    updated_at timestamptz NOT NULL DEFAULT pgrun.now(),
    finished_at timestamptz,
    CONSTRAINT workflow_runs_status_check CHECK (
        -- running: enqueue_workflow; stays so while any step is not terminal
        -- succeeded: the last step finished and every step succeeded
        -- failed: the last step finished and some step failed, was skipped or was cancelled
        -- cancelled: cancel_workflow_run
        status IN ('running', 'succeeded', 'failed', 'cancelled')
    ),
    CONSTRAINT workflow_runs_finished_check CHECK ((status = 'running') = (finished_at IS NULL)),
    CONSTRAINT workflow_runs_open_steps_check CHECK (
        (status = 'running') = (open_step_count > 0) AND open_step_count >= 0
    ),
    CONSTRAINT workflow_runs_cancel_check CHECK (cancel_reason IS NULL OR status = 'cancelled'),
    CONSTRAINT workflow_runs_name_check CHECK (length(name) BETWEEN 1 AND 200),
    CONSTRAINT workflow_runs_metadata_check CHECK (jsonb_typeof(metadata) = 'object'),
    CONSTRAINT workflow_runs_idempotency_check CHECK (
        (idempotency_key IS NULL) = (enqueue_request IS NULL)
        AND length(idempotency_key) BETWEEN 1 AND 256
    ),
    CONSTRAINT workflow_runs_organization_check CHECK (
        organization_id <> '00000000-0000-0000-0000-000000000000'::uuid
    )
);

COMMENT ON TABLE pgrun.workflow_runs IS
'One row per workflow run: its status, idempotency key and request snapshot, metadata.';

-- The nil uuid stands for "no organization", so the key is unique per tenant and globally.
CREATE UNIQUE INDEX workflow_runs_idempotency_idx ON pgrun.workflow_runs (
    coalesce(organization_id, '00000000-0000-0000-0000-000000000000'::uuid),
    idempotency_key
)
WHERE idempotency_key IS NOT NULL;

-- list_workflow_runs: keyset pagination by id, optionally per status or tenant.
CREATE INDEX workflow_runs_status_idx ON pgrun.workflow_runs (status, id);

CREATE INDEX workflow_runs_organization_idx ON pgrun.workflow_runs (organization_id, id)
WHERE organization_id IS NOT NULL;

-- Append-only: one row per append_workflow_steps call that added steps. A keyed append
-- is unique per (run_id, mutation_key); a retry is compared with the stored canonical request.
CREATE TABLE pgrun.workflow_run_mutations (
    id uuid PRIMARY KEY DEFAULT pgrun.uuidv7(),
    run_id uuid NOT NULL REFERENCES pgrun.workflow_runs (id) ON DELETE CASCADE,
    kind text NOT NULL DEFAULT 'append_steps',
    mutation_key text,
    request jsonb NOT NULL,
    step_keys text[] NOT NULL,
    created_at timestamptz NOT NULL DEFAULT pgrun.now(),
    CONSTRAINT workflow_run_mutations_kind_check CHECK (
        -- append_steps: append_workflow_steps
        kind IN ('append_steps')
    ),
    CONSTRAINT workflow_run_mutations_key_check CHECK (length(mutation_key) BETWEEN 1 AND 256),
    CONSTRAINT workflow_run_mutations_steps_check CHECK (cardinality(step_keys) >= 1)
);

CREATE UNIQUE INDEX workflow_run_mutations_key_idx ON pgrun.workflow_run_mutations (run_id, mutation_key)
WHERE mutation_key IS NOT NULL;

CREATE INDEX workflow_run_mutations_run_idx ON pgrun.workflow_run_mutations (run_id, id);

COMMENT ON TABLE pgrun.workflow_run_mutations IS
'Append-only record of append_workflow_steps calls: key, canonical request, the step keys added.';

CREATE TABLE pgrun.workflow_steps (
    run_id uuid NOT NULL REFERENCES pgrun.workflow_runs (id) ON DELETE CASCADE,
    step_key text NOT NULL,
    kind text NOT NULL,
    status text NOT NULL DEFAULT 'blocked',
    -- the job template (kind 'job' only); NULL fields take the job type's definition,
    -- else the built-in defaults, when the job is created at release
    job_type text,
    payload jsonb,
    queue text,
    priority integer,
    max_attempts integer,
    timeout_seconds integer,
    -- dependency_count_pending = the step's edges not yet resolved
    dependency_count_total integer NOT NULL DEFAULT 0,
    dependency_count_pending integer NOT NULL DEFAULT 0,
    job_id uuid,
    -- the job's result, or what complete_external_step was given
    output jsonb,
    -- the append that added the step; NULL for the steps enqueue_workflow created
    mutation_id uuid REFERENCES pgrun.workflow_run_mutations (id) ON DELETE CASCADE,
    created_at timestamptz NOT NULL DEFAULT pgrun.now(),
    updated_at timestamptz NOT NULL DEFAULT pgrun.now(),
    released_at timestamptz,
    finished_at timestamptz,
    PRIMARY KEY (run_id, step_key),
    CONSTRAINT workflow_steps_kind_check CHECK (
        -- job: released as a job of job_type; external: released as a gate for complete_external_step
        kind IN ('job', 'external')
    ),
    CONSTRAINT workflow_steps_status_check CHECK (
        -- blocked: enqueue_workflow / append_workflow_steps; some edge is still unresolved
        -- released: a job step whose edges all resolved; its job (job_id) was created
        -- waiting_for_external: an external step whose edges all resolved
        -- succeeded: its job succeeded, or complete_external_step(succeeded => true)
        -- failed: its job died, or complete_external_step(succeeded => false)
        -- skipped: an on_success prerequisite ended other than succeeded (cascades)
        -- cancelled: cancel_workflow_run, or cancel_job on the step's job
        status IN (
            'blocked', 'released', 'waiting_for_external', 'succeeded', 'failed', 'skipped', 'cancelled'
        )
    ),
    CONSTRAINT workflow_steps_key_check CHECK (
        length(step_key) BETWEEN 1 AND 128 AND step_key = btrim(step_key)
    ),
    CONSTRAINT workflow_steps_template_check CHECK (
        (kind = 'job' AND job_type IS NOT NULL AND jsonb_typeof(payload) = 'object')
        OR (
            kind = 'external' AND job_type IS NULL AND payload IS NULL AND queue IS NULL
            AND priority IS NULL AND max_attempts IS NULL AND timeout_seconds IS NULL
        )
    ),
    CONSTRAINT workflow_steps_priority_check CHECK (priority BETWEEN 0 AND 32767),
    CONSTRAINT workflow_steps_max_attempts_check CHECK (max_attempts BETWEEN 1 AND 1000),
    CONSTRAINT workflow_steps_timeout_check CHECK (timeout_seconds > 0),
    CONSTRAINT workflow_steps_counters_check CHECK (
        dependency_count_pending >= 0 AND dependency_count_pending <= dependency_count_total
    ),
    -- only a step whose edges all resolved can have been released or have finished by itself
    CONSTRAINT workflow_steps_released_check CHECK (
        status NOT IN ('released', 'waiting_for_external', 'succeeded', 'failed')
        OR (dependency_count_pending = 0 AND released_at IS NOT NULL)
    ),
    CONSTRAINT workflow_steps_status_kind_check CHECK (
        (status <> 'released' OR kind = 'job') AND (status <> 'waiting_for_external' OR kind = 'external')
    ),
    -- a job id only on a released job step, and every released job step has one
    CONSTRAINT workflow_steps_job_check CHECK (
        (
            job_id IS NULL AND status <> 'released'
            AND (kind = 'external' OR status NOT IN ('succeeded', 'failed'))
        )
        OR (
            job_id IS NOT NULL AND kind = 'job' AND released_at IS NOT NULL
            AND status IN ('released', 'succeeded', 'failed', 'cancelled')
        )
    ),
    -- output only on a finished step
    CONSTRAINT workflow_steps_output_check CHECK (output IS NULL OR status IN ('succeeded', 'failed')),
    CONSTRAINT workflow_steps_finished_check CHECK (
        (status IN ('succeeded', 'failed', 'skipped', 'cancelled')) = (finished_at IS NOT NULL)
    )
) WITH (fillfactor = 90);

COMMENT ON TABLE pgrun.workflow_steps IS
'One row per step of a run: kind, job template, status, dependency counters, job id, output.';

-- Run status: "is any step of this run still open?" reads only open steps.
CREATE INDEX workflow_steps_open_idx ON pgrun.workflow_steps (run_id)
WHERE status IN ('blocked', 'released', 'waiting_for_external');

CREATE INDEX workflow_steps_mutation_idx ON pgrun.workflow_steps (mutation_id)
WHERE mutation_id IS NOT NULL;

CREATE TABLE pgrun.workflow_step_dependencies (
    run_id uuid NOT NULL,
    step_key text NOT NULL,
    depends_on_key text NOT NULL,
    release_mode text NOT NULL DEFAULT 'on_success',
    resolved boolean NOT NULL DEFAULT FALSE,
    resolved_at timestamptz,
    created_at timestamptz NOT NULL DEFAULT pgrun.now(),
    -- the release path looks edges up by prerequisite
    PRIMARY KEY (run_id, depends_on_key, step_key),
    FOREIGN KEY (run_id, step_key) REFERENCES pgrun.workflow_steps (run_id, step_key) ON DELETE CASCADE,
    FOREIGN KEY (run_id, depends_on_key) REFERENCES pgrun.workflow_steps (run_id, step_key) ON DELETE CASCADE,
    CONSTRAINT workflow_step_dependencies_release_mode_check CHECK (
        -- on_success: the dependent runs only if the prerequisite succeeded, else it is skipped
        -- on_terminal: the dependent runs once the prerequisite finished, whatever the outcome
        release_mode IN ('on_success', 'on_terminal')
    ),
    CONSTRAINT workflow_step_dependencies_self_check CHECK (step_key <> depends_on_key),
    CONSTRAINT workflow_step_dependencies_resolved_check CHECK (resolved = (resolved_at IS NOT NULL))
);

-- Building a released job's payload, and reading a step's prerequisites.
CREATE INDEX workflow_step_dependencies_step_idx ON pgrun.workflow_step_dependencies (
    run_id, step_key, depends_on_key
);

COMMENT ON TABLE pgrun.workflow_step_dependencies IS
'Edges: step_key waits for depends_on_key; release_mode on_success or on_terminal; resolved once counted.';
