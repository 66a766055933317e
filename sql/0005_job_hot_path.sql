-- 0005 job hot path: fewer rows written per job between claim and completion.
--
-- 1. A finished attempt is recorded on the job_events row that ends it, not in a table of
--    its own. Every write that ends an attempt (complete, fail, continue, the reaper)
--    already writes exactly one event in the same statement; that row now carries the
--    attempt's outcome, step, lease token, start and error. One heap insert and one index
--    insert fewer per attempt. The view job_attempts keeps its columns and meaning.
-- 2. jobs gets fillfactor 50: a claim and a completion each write a new row version
--    (neither update can be HOT: status is in the partial indexes' predicates), and with
--    room on the page the new version stays there: one page touched instead of two, and
--    no extra lock record in the WAL for the move. Existing pages keep their fill until
--    they are rewritten; new pages use the setting.
--
-- Measurements: docs/performance.md, "Job hot path".

ALTER TABLE pgrun.job_events
ADD COLUMN outcome text,
ADD COLUMN step text,
ADD COLUMN lease_token uuid,
ADD COLUMN started_at timestamptz,
ADD COLUMN error_code text,
ADD COLUMN error_message text;

ALTER TABLE pgrun.job_events ADD CONSTRAINT job_events_attempt_check CHECK (
    -- outcome is set exactly on the event that ends an attempt (a transition out of
    -- running other than cancel_requested) and says how the attempt ended:
    -- succeeded: complete_job; failed: fail_job; timed_out: fail_job with error code
    -- 'timeout'; crashed: fail_job with error code 'crashed'; lease_expired: the reaper;
    -- cancelled: the write after a cancel request; continued: continue_job
    (
        outcome IS NULL AND step IS NULL AND lease_token IS NULL AND started_at IS NULL
        AND error_code IS NULL AND error_message IS NULL
    )
    OR (
        outcome IN ('succeeded', 'failed', 'timed_out', 'crashed', 'lease_expired', 'cancelled', 'continued')
        AND coalesce(from_status = 'running', FALSE)
        AND event <> 'cancel_requested'
        AND started_at IS NOT NULL
        AND lease_token IS NOT NULL
        AND worker_id IS NOT NULL
    )
);

COMMENT ON COLUMN pgrun.job_events.outcome IS
'Set on the event that ends an attempt: how the attempt ended (job_attempts reads these rows).';

-- Move every recorded attempt onto the event that ended it: the transition out of running
-- with the same job and attempt number (cancel_requested stays running and ends nothing).
DO $$
DECLARE
    v_attempts bigint;
    v_moved bigint;
BEGIN
    -- Each attempt must have exactly one event that ended it, or nothing is changed.
    SELECT count(*) INTO v_attempts
    FROM pgrun.job_attempts_finished AS a
    WHERE (
        SELECT count(*)
        FROM pgrun.job_events AS e
        WHERE e.job_id = a.job_id
          AND e.attempt = a.attempt
          AND e.from_status = 'running'
          AND e.event <> 'cancel_requested'
    ) <> 1;
    IF v_attempts > 0 THEN
        RAISE EXCEPTION 'migration 0005: % finished attempts without exactly one event that ended them', v_attempts
        USING HINT = 'Nothing was changed. Inspect pgrun.job_attempts_finished against pgrun.job_events.';
    END IF;

    SELECT count(*) INTO v_attempts FROM pgrun.job_attempts_finished;

    UPDATE pgrun.job_events AS e
    SET outcome = a.outcome,
        step = a.step,
        lease_token = a.lease_token,
        started_at = a.started_at,
        error_code = a.error_code,
        error_message = a.error_message
    FROM pgrun.job_attempts_finished AS a
    WHERE e.job_id = a.job_id
      AND e.attempt = a.attempt
      AND e.from_status = 'running'
      AND e.event <> 'cancel_requested';
    GET DIAGNOSTICS v_moved = ROW_COUNT;

    IF v_moved <> v_attempts THEN
        RAISE EXCEPTION 'migration 0005: % finished attempts but % matching events', v_attempts, v_moved
        USING HINT = 'Nothing was changed. Every finished attempt should have exactly one event that '
            'ended it; inspect pgrun.job_attempts_finished against pgrun.job_events.';
    END IF;
END;
$$;

-- Same columns, same meaning; the finished attempts now come from job_events (a lookup by
-- job_id is a probe of its primary key (job_id, id)).
CREATE OR REPLACE VIEW pgrun.job_attempts AS
SELECT
    e.job_id,
    e.attempt,
    e.step,
    e.worker_id,
    e.lease_token,
    e.started_at,
    e.created_at AS finished_at,
    e.outcome,
    e.error_code,
    e.error_message
FROM pgrun.job_events AS e
WHERE e.outcome IS NOT NULL
UNION ALL
SELECT
    j.id AS job_id,
    j.total_attempts AS attempt,
    j.step,
    j.worker_id,
    j.lease_token,
    j.started_at,
    NULL::timestamptz AS finished_at,
    NULL::text AS outcome,
    NULL::text AS error_code,
    NULL::text AS error_message
FROM pgrun.jobs AS j
WHERE j.status = 'running';

-- job_metrics, unchanged but for where its crash counts come from: the events that ended
-- attempts crashed or lease_expired in the window.
CREATE OR REPLACE VIEW pgrun.job_metrics AS
WITH w AS (
    SELECT pgrun.now() - interval '5 minutes' AS window_start
),

per_type AS (
    SELECT
        j.job_type,
        j.queue,
        count(*) FILTER (WHERE j.status = 'queued') AS queued,
        count(*) FILTER (WHERE j.status = 'running') AS running,
        count(*) FILTER (WHERE j.status = 'succeeded') AS succeeded,
        count(*) FILTER (WHERE j.status = 'dead') AS dead,
        count(*) FILTER (WHERE j.status = 'cancelled') AS cancelled,
        round(
            count(*) FILTER (
                WHERE j.status = 'succeeded' AND j.finished_at >= w.window_start
            ) / 5.0,
            2
        ) AS succeeded_per_minute,
        percentile_cont(0.5) WITHIN GROUP (
            ORDER BY greatest(extract(EPOCH FROM j.started_at - j.run_at), 0)
        ) FILTER (
            WHERE j.started_at >= w.window_start AND j.status <> 'queued'
        ) AS latency_p50_seconds,
        percentile_cont(0.95) WITHIN GROUP (
            ORDER BY greatest(extract(EPOCH FROM j.started_at - j.run_at), 0)
        ) FILTER (
            WHERE j.started_at >= w.window_start AND j.status <> 'queued'
        ) AS latency_p95_seconds,
        percentile_cont(0.5) WITHIN GROUP (
            ORDER BY extract(EPOCH FROM j.finished_at - j.started_at)
        ) FILTER (
            WHERE j.finished_at >= w.window_start AND j.started_at IS NOT NULL
        ) AS duration_p50_seconds,
        percentile_cont(0.95) WITHIN GROUP (
            ORDER BY extract(EPOCH FROM j.finished_at - j.started_at)
        ) FILTER (
            WHERE j.finished_at >= w.window_start AND j.started_at IS NOT NULL
        ) AS duration_p95_seconds
    FROM pgrun.jobs AS j
    CROSS JOIN w
    GROUP BY j.job_type, j.queue
),

crashes AS (
    SELECT
        j.job_type,
        j.queue,
        count(*) FILTER (WHERE a.outcome = 'crashed') AS crashed,
        count(*) FILTER (WHERE a.outcome = 'lease_expired') AS lease_expired
    FROM pgrun.job_events AS a
    INNER JOIN pgrun.jobs AS j ON a.job_id = j.id
    CROSS JOIN w
    WHERE a.outcome IN ('crashed', 'lease_expired') AND a.created_at >= w.window_start
    GROUP BY j.job_type, j.queue
)

SELECT
    p.job_type,
    p.queue,
    p.queued,
    p.running,
    p.succeeded,
    p.dead,
    p.cancelled,
    w.window_start,
    p.succeeded_per_minute,
    p.latency_p50_seconds,
    p.latency_p95_seconds,
    p.duration_p50_seconds,
    p.duration_p95_seconds,
    coalesce(c.crashed, 0) AS crashed,
    coalesce(c.lease_expired, 0) AS lease_expired
FROM per_type AS p
CROSS JOIN w
LEFT JOIN crashes AS c ON p.job_type = c.job_type AND p.queue = c.queue;

DROP TABLE pgrun.job_attempts_finished;

ALTER TABLE pgrun.jobs SET (fillfactor = 50);
