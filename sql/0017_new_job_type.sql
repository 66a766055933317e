-- 0017 new job type: one row type for a job to insert, pgrun._new_job (issue 14).
--
-- Every new job goes through one insert, pgrun._enqueue_insert_jobs (plpgsql/jobs/_insert.sql),
-- called by enqueue, the workflow release and the schedule fire. It took fourteen parallel
-- arrays, one per column a door decides, so each door declared and filled the same nine
-- arrays. It now takes one array of this type: a door builds one row per job and hands the
-- array over.
--
-- Fields: what a door decides for a job. queue, priority, max_attempts and timeout_seconds
-- are the door's request (NULL = not asked; the insert resolves them against the job's
-- definition and pgrun._job_defaults()); enqueue_request is the idempotency snapshot of a
-- keyed enqueue; workflow_run_id and workflow_step_key link a step's job, schedule_id a
-- schedule's (NULL for the others).
--
-- A type, not a table: nothing stores it. It lives here, not in plpgsql/, because the tree
-- holds only functions (migrate drops and re-creates them; a type the functions' signatures
-- use must outlive that). The leading underscore marks it private like the helpers that use
-- it: no public function takes or returns it. A changed field list is a new migration (the
-- tree's functions are re-created after every migration, against the type as it is then).

CREATE TYPE pgrun._new_job AS (
    id uuid,
    job_type text,
    payload jsonb,
    queue text,
    priority integer,
    max_attempts integer,
    timeout_seconds integer,
    run_at timestamptz,
    organization_id uuid,
    idempotency_key text,
    enqueue_request jsonb,
    workflow_run_id uuid,
    workflow_step_key text,
    schedule_id uuid
);

COMMENT ON TYPE pgrun._new_job IS
'Private: one job to insert, as a door (enqueue, workflow release, schedule fire) decides it; '
'pgrun._enqueue_insert_jobs takes an array of them.';
