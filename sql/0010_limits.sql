-- 0010 limits: caps on what a job may store, and each error message stored once (issue 12).
--
-- 1. job_definitions.max_result_bytes: the largest result (complete_job) and state
--    (continue_job) a job of the type may store, in bytes of jsonb (pg_column_size, the
--    measure enqueue uses for payloads). NULL = the built-in default, 1 MiB; a type may
--    set 1 KiB..16 MiB, so no type is ever unbounded. Read at the write that stores the
--    value, so a change applies to jobs already enqueued.
-- 2. An error message is stored once: on the event that ended the attempt
--    (job_events.error_message, which job_attempts reads). The copies on jobs and on
--    job_dead_letters are dropped. jobs.error_attempt names the attempt whose error the job
--    carries (its error_code stays on the row); a dead letter names its attempt already.
--    get_job and list_jobs read the message through those references, so they return
--    what they did. Existing rows are checked first: every copy must equal the message on
--    the event it points at, or nothing is changed.
-- 3. job_log_counts: how many log lines each attempt appended, kept and dropped
--    (append_job_log keeps the first 1,000 of an attempt and counts the rest).
-- 4. workflow_steps.error_code: why a job step failed without a job. A release whose
--    payload (the step's payload plus its prerequisites' outputs) would exceed the job
--    payload limit fails the step with workflow.payload_too_large instead of creating the
--    job; workflow_steps_job_check now allows exactly that.
--
-- Every built-in call is schema-qualified: a migration runs with the migrator's search_path.

-- 1. Result and state cap per job type.
ALTER TABLE pgrun.job_definitions ADD COLUMN max_result_bytes integer;

ALTER TABLE pgrun.job_definitions ADD CONSTRAINT job_definitions_max_result_bytes_check CHECK (
    max_result_bytes BETWEEN 1024 AND 16777216
);

COMMENT ON COLUMN pgrun.job_definitions.max_result_bytes IS
'The largest result (complete_job) or state (continue_job) a job of this type may store, in bytes of '
'jsonb; NULL = the built-in 1 MiB. 1024..16777216.';

-- 2. Error messages: the attempt's event holds the text, jobs and dead letters point at it.
ALTER TABLE pgrun.jobs ADD COLUMN error_attempt integer;

COMMENT ON COLUMN pgrun.jobs.error_attempt IS
'The attempt whose error the job carries (error_code here, the message on the event that ended that '
'attempt); NULL when no attempt failed.';

DO $pgrun_errors$
DECLARE
    v_unmatched bigint;
BEGIN
    -- The job's error is that of the latest ended attempt reporting the same code and message
    -- (fail_job and the reaper wrote both copies in one statement; later attempts that did not
    -- fail left them alone).
    UPDATE pgrun.jobs AS j
    SET error_attempt = (
        SELECT pg_catalog.max(e.attempt)
        FROM pgrun.job_events AS e
        WHERE e.job_id OPERATOR(pg_catalog.=) j.id
          AND e.outcome IS NOT NULL
          AND e.error_code IS NOT DISTINCT FROM j.error_code
          AND e.error_message IS NOT DISTINCT FROM j.error_message
    )
    WHERE j.error_code IS NOT NULL OR j.error_message IS NOT NULL;

    SELECT pg_catalog.count(*) INTO v_unmatched
    FROM pgrun.jobs AS j
    WHERE j.error_message IS NOT NULL AND j.error_attempt IS NULL;
    IF v_unmatched OPERATOR(pg_catalog.>) 0 THEN
        RAISE EXCEPTION 'migration 0010: % jobs carry an error message no attempt event holds', v_unmatched
        USING HINT = 'Nothing was changed. Compare pgrun.jobs.error_message with the events that ended '
            'their attempts (pgrun.job_events, outcome IS NOT NULL).';
    END IF;

    SELECT pg_catalog.count(*) INTO v_unmatched
    FROM pgrun.job_dead_letters AS d
    WHERE d.error_message IS DISTINCT FROM (
        SELECT e.error_message
        FROM pgrun.job_events AS e
        WHERE e.job_id OPERATOR(pg_catalog.=) d.job_id
          AND e.attempt OPERATOR(pg_catalog.=) d.attempt
          AND e.outcome IS NOT NULL
    );
    IF v_unmatched OPERATOR(pg_catalog.>) 0 THEN
        RAISE EXCEPTION 'migration 0010: % dead letters carry an error message their attempt''s event does not', v_unmatched
        USING HINT = 'Nothing was changed. Compare pgrun.job_dead_letters.error_message with the event '
            'that ended the same attempt (pgrun.job_events, outcome IS NOT NULL).';
    END IF;
END;
$pgrun_errors$;

ALTER TABLE pgrun.jobs DROP COLUMN error_message;

ALTER TABLE pgrun.job_dead_letters DROP COLUMN error_message;

-- 3. Log lines per attempt.
CREATE TABLE pgrun.job_log_counts (
    job_id uuid NOT NULL,
    attempt integer NOT NULL,
    -- lines stored in job_logs, and lines refused because the attempt had reached the cap
    stored integer NOT NULL DEFAULT 0,
    dropped integer NOT NULL DEFAULT 0,
    PRIMARY KEY (job_id, attempt),
    CONSTRAINT job_log_counts_check CHECK (stored >= 0 AND dropped >= 0)
);

COMMENT ON TABLE pgrun.job_log_counts IS
'Per attempt: log lines append_job_log stored and dropped (an attempt keeps its first 1,000 lines); '
'purge_finished_jobs deletes them with the job.';

-- 4. A job step may fail without a job: its payload would have been too large.
ALTER TABLE pgrun.workflow_steps ADD COLUMN error_code text;

COMMENT ON COLUMN pgrun.workflow_steps.error_code IS
'Why a job step failed without a job (workflow.payload_too_large); NULL otherwise.';

ALTER TABLE pgrun.workflow_steps DROP CONSTRAINT workflow_steps_job_check;

ALTER TABLE pgrun.workflow_steps ADD CONSTRAINT workflow_steps_job_check CHECK (
    -- a job id only on a released job step, and every released job step has one; a job step
    -- that failed at its release (error_code set) has none
    (
        job_id IS NULL AND status <> 'released'
        AND (kind = 'external' OR status NOT IN ('succeeded', 'failed'))
        AND error_code IS NULL
    )
    OR (
        job_id IS NOT NULL AND kind = 'job' AND released_at IS NOT NULL
        AND status IN ('released', 'succeeded', 'failed', 'cancelled')
        AND error_code IS NULL
    )
    OR (
        job_id IS NULL AND kind = 'job' AND status = 'failed' AND released_at IS NOT NULL
        AND error_code IS NOT NULL
    )
);
