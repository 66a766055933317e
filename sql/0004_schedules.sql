-- 0004 schedules: cron schedules and the ticks that make each plan time fire exactly once.
--
-- SQL decides, Python executes: the scheduler loop (python/pgrun/scheduler.py) computes plan
-- times with croniter, but whether a plan time may still make a job is decided here, by the
-- primary key of schedule_ticks: one row per (schedule, scope, plan_time), ever. Every
-- timestamp comes from pgrun.now(), never from a scheduler's host clock.

CREATE TABLE pgrun.job_schedules (
    id uuid PRIMARY KEY DEFAULT pgrun.uuidv7(),
    -- the schedule's name is unique per organization (NULL = no organization)
    name text NOT NULL,
    organization_id uuid,
    -- 5 fields (minute hour day month weekday) or 6 (the sixth is seconds), or an @macro;
    -- SQL checks the shape, the Python side parses it fully before calling upsert_schedule
    cron text NOT NULL,
    timezone text NOT NULL DEFAULT 'UTC',
    -- the job each plan time makes; NULL settings come from the job definition at fire time
    job_type text NOT NULL,
    payload jsonb NOT NULL DEFAULT '{}',
    queue text,
    priority integer,
    max_attempts integer,
    timeout_seconds integer,
    catch_up text NOT NULL DEFAULT 'latest',
    backfill_limit integer NOT NULL DEFAULT 100,
    misfire_grace_seconds integer NOT NULL DEFAULT 60,
    -- scopes: one tick (and job) per scope and plan time
    scope_kind text NOT NULL DEFAULT 'none',
    scopes text[] NOT NULL DEFAULT '{}',
    -- when true, a job of this schedule whose lease expires is not run again: the reaper
    -- kills it and marks its tick failed
    forbid_stale_reentry boolean NOT NULL DEFAULT FALSE,
    -- enabled is part of the declaration (upsert_schedule sets it); paused_at is the
    -- operator's switch (pause_schedule / resume_schedule) and upsert never touches it
    enabled boolean NOT NULL DEFAULT TRUE,
    paused_at timestamptz,
    -- planning state: every plan time <= planned_until has been decided (fired or skipped);
    -- next_run_at is when the scheduler should look again; last_plan_at the latest plan time
    -- that made a tick, last_fired_at when (database time)
    planned_until timestamptz NOT NULL,
    next_run_at timestamptz NOT NULL,
    last_plan_at timestamptz,
    last_fired_at timestamptz,
    -- the scheduler currently planning this schedule (claim_due_schedules .. fire_schedule)
    claimed_by text,
    claim_token uuid,
    claim_expires_at timestamptz,
    created_at timestamptz NOT NULL DEFAULT pgrun.now(),
    updated_at timestamptz NOT NULL DEFAULT pgrun.now(),
    CONSTRAINT job_schedules_name_check CHECK (length(name) BETWEEN 1 AND 200 AND name = btrim(name)),
    CONSTRAINT job_schedules_cron_check CHECK (length(cron) BETWEEN 1 AND 200),
    CONSTRAINT job_schedules_job_type_check CHECK (
        job_type ~ '^[a-z][a-z0-9_]*([.:-][a-z0-9_]+)*$' AND length(job_type) <= 128
    ),
    CONSTRAINT job_schedules_payload_check CHECK (jsonb_typeof(payload) = 'object'),
    CONSTRAINT job_schedules_priority_check CHECK (priority BETWEEN 0 AND 32767),
    CONSTRAINT job_schedules_max_attempts_check CHECK (max_attempts BETWEEN 1 AND 1000),
    CONSTRAINT job_schedules_timeout_check CHECK (timeout_seconds > 0),
    CONSTRAINT job_schedules_catch_up_check CHECK (
        -- latest: after downtime, only the most recent missed plan time fires
        -- all: every missed plan time fires, at most backfill_limit of them (the most recent)
        -- none: missed plan times are skipped; those at most misfire_grace_seconds late fire
        catch_up IN ('latest', 'all', 'none')
    ),
    CONSTRAINT job_schedules_backfill_limit_check CHECK (backfill_limit BETWEEN 1 AND 10000),
    CONSTRAINT job_schedules_misfire_grace_check CHECK (misfire_grace_seconds BETWEEN 1 AND 86400),
    CONSTRAINT job_schedules_scope_check CHECK (
        -- none: one tick per plan time (scope '')
        -- organization: one per organization id in scopes; the job belongs to it
        -- key: one per free-form key in scopes
        scope_kind IN ('none', 'organization', 'key')
        AND (scope_kind = 'none') = (cardinality(scopes) = 0)
        AND (scope_kind <> 'organization' OR organization_id IS NULL)
    ),
    CONSTRAINT job_schedules_claim_check CHECK (
        (claim_token IS NULL) = (claimed_by IS NULL)
        AND (claim_token IS NULL) = (claim_expires_at IS NULL)
    )
);

COMMENT ON TABLE pgrun.job_schedules IS
'Cron schedules: expression, time zone, the job each plan time makes, catch-up policy and planning '
'state; upsert_schedule writes them, the scheduler loop plans them (claim_due_schedules, fire_schedule).';

CREATE UNIQUE INDEX job_schedules_name_idx ON pgrun.job_schedules (
    coalesce(organization_id, '00000000-0000-0000-0000-000000000000'::uuid), name
);

-- The due-schedule query: only schedules that may fire are indexed.
CREATE INDEX job_schedules_due_idx ON pgrun.job_schedules (next_run_at, id)
WHERE enabled AND paused_at IS NULL;

-- The exactly-once guard: one row per (schedule, scope, plan time), ever (until the schedule
-- is deleted). job_id names the job the tick made; it survives the job's purge.
CREATE TABLE pgrun.schedule_ticks (
    schedule_id uuid NOT NULL REFERENCES pgrun.job_schedules (id) ON DELETE CASCADE,
    scope text NOT NULL DEFAULT '',
    plan_time timestamptz NOT NULL,
    job_id uuid NOT NULL,
    status text NOT NULL DEFAULT 'fired',
    error_code text,
    fired_by text,
    created_at timestamptz NOT NULL DEFAULT pgrun.now(),
    updated_at timestamptz NOT NULL DEFAULT pgrun.now(),
    PRIMARY KEY (schedule_id, scope, plan_time),
    CONSTRAINT schedule_ticks_status_check CHECK (
        -- fired: fire_schedule made the tick and its job (the job's own status says the rest)
        -- failed: the job's lease expired and the schedule forbids stale re-entry, so the
        --         reaper killed the job instead of running it again
        status IN ('fired', 'failed')
    ),
    CONSTRAINT schedule_ticks_error_check CHECK ((status = 'failed') = (error_code IS NOT NULL))
);

COMMENT ON TABLE pgrun.schedule_ticks IS
'One row per (schedule, scope, plan_time): the exactly-once guard of fire_schedule, pointing at the '
'job it made; status failed when the job lost its lease and its schedule forbids stale re-entry.';

CREATE UNIQUE INDEX schedule_ticks_job_idx ON pgrun.schedule_ticks (job_id);
