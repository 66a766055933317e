-- The release machinery every workflow transition shares.
--
-- * _workflow_release_steps(run_ids, step_keys): the given steps whose edges have all
--   resolved (status blocked, dependency_count_pending 0) are released. An external step
--   becomes waiting_for_external. Job steps become jobs through the one insert every new
--   job goes through (pgrun._enqueue_insert_jobs, jobs/_insert.sql), all of them in one
--   call: ids from pgrun._uuidv7_series, workflow_run_id and workflow_step_key set,
--   organization_id the step's own, else the run's; run_at the release time, plus the
--   step's delay, or the step's run_at when that is later; the template's NULL fields
--   resolve there as for any job (the job type's definition, else the built-in defaults);
--   no job_events row (the job row names run and step); the queues woken as enqueue
--   wakes them. Then the steps become released with their job_id. The step's organization,
--   delay and run_at are columns of the step row the payload statement reads anyway: no
--   lookup per step.
--   The job's payload is the step's payload plus one key, "dependencies": an object
--   with one member per prerequisite, keyed by its step key, {"status": <its status>,
--   "output": <its output or null>} (docs/workflows.md). A root step gets {}. A payload
--   so built that is over 1 MiB (pg_column_size, enqueue's limit for any job) creates no
--   job: the step fails at once with error_code 'workflow.payload_too_large' (no job_id),
--   its edges resolve like any failed step's (on_success dependents are skipped,
--   on_terminal ones released). Likewise a payload nested more than 100 levels (the nesting
--   rule every stored payload keeps, pgrun._json_depth_ok), error_code
--   'workflow.payload_too_deep': an output sits three levels down (the payload,
--   "dependencies", the prerequisite's {"status", "output"}), so an output nested 98..100
--   levels, within the rule for a result, cannot reach a dependent. Checking the payload
--   here rather than results at 97 keeps one rule for every result, and the dependents of
--   a step are known only at release (an append may add them later). Returns the run of each step it so closed (the failed
--   ones and those skipped behind them), for the caller to settle with the rest: a release
--   never settles runs itself, since a caller may not have counted the steps yet (append).
-- * _workflow_resolve(run_ids, step_keys): the given steps have just become terminal.
--   Each of their unresolved outgoing edges resolves: the dependent's
--   dependency_count_pending goes down by one per edge in a row-locked UPDATE ...
--   RETURNING (so when two prerequisites finish at once exactly one transaction sees
--   zero), and an on_success edge whose prerequisite did not succeed turns a blocked
--   dependent into 'skipped'. Dependents that reached zero while blocked are released;
--   dependents that were just skipped are terminal too, so the loop goes on with them
--   (the skip cascades, one statement per level).
-- * _workflow_settle_runs(run_ids, deltas): keeps workflow_runs.open_step_count (the
--   steps not yet terminal) and the run status: a running run whose count reaches 0
--   becomes failed (some step failed, was skipped or cancelled) or succeeded. Every path
--   that opens or closes steps reports it here, under the run row lock, so the status
--   never needs a scan of the run's steps (only the final failed/succeeded check reads them).
-- * _workflow_finish_steps(job_ids): THE hook the job functions call, in their own
--   transaction, after a job became succeeded, dead or cancelled. See its comment.
--
-- Locks: callers hold the run lock (pgrun._workflow_lock_runs) and the
-- workflow_runs rows; these helpers lock the step rows they change (run id, step key
-- order). The hook takes both itself.
--
-- Errors: workflow.release_conflict (RQ001, from the hook's lock wait).

CREATE OR REPLACE FUNCTION pgrun._workflow_release_steps(p_run_ids uuid[], p_step_keys text[])
RETURNS uuid[]
LANGUAGE plpgsql
VOLATILE
-- Plan stability, whoever calls it (complete_jobs pins the same settings already;
-- append_workflow_steps, enqueue_workflow and complete_external_step pin only the generic
-- plan): every statement here reaches steps, edges and definitions by key, and with the
-- statistics of small tables the candidate lookup of a few dozen steps hash-joined a Seq Scan
-- of every step instead (tests_py/test_plan_stability_workflows.py, append with stale
-- statistics). Generic plans, built once per session: re-planned per call, the release of one
-- root step cost ~0.8 ms more (docs/performance.md, "Generic plans off the worker's path").
SET enable_seqscan = off
SET enable_bitmapscan = off
SET enable_hashjoin = off
SET enable_mergejoin = off
SET jit = off
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    c_max_payload_bytes CONSTANT integer := 1048576;  -- enqueue's limit (jobs/_enqueue.sql)
    v_now timestamptz := pgrun.now();
    v_job_runs uuid[];
    v_job_keys text[];
    v_ids uuid[];
    v_jobs pgrun._new_job[];
    v_failed_runs uuid[];
    v_failed_keys text[];
BEGIN
    -- Lock the candidates in key order; external ones start waiting, job ones are collected.
    -- Each step by primary key. "Blocked" is spelt released_at IS NULL AND finished_at IS NULL
    -- (by the CHECK constraints no other status has both NULL, and nothing clears them): with
    -- statistics taken while the table was small, a status test let the planner walk
    -- workflow_steps_open_idx by run id alone, every open step of the run for each candidate.
    WITH candidates AS (
        SELECT s.run_id, s.step_key, s.kind
        FROM pgrun.workflow_steps AS s
        JOIN unnest(p_run_ids, p_step_keys) AS k (run_id, step_key)
            ON s.run_id = k.run_id AND s.step_key = k.step_key
        WHERE s.released_at IS NULL AND s.finished_at IS NULL AND s.dependency_count_pending = 0
        ORDER BY s.run_id, s.step_key
        FOR NO KEY UPDATE OF s
    ),

    waiting AS (
        UPDATE pgrun.workflow_steps AS s
        SET status = 'waiting_for_external',
            released_at = v_now,
            updated_at = v_now
        FROM candidates AS c
        WHERE s.run_id = c.run_id AND s.step_key = c.step_key AND c.kind = 'external'
    )

    SELECT
        array_agg(c.run_id ORDER BY c.run_id, c.step_key),
        array_agg(c.step_key ORDER BY c.run_id, c.step_key)
    INTO v_job_runs, v_job_keys
    FROM candidates AS c
    WHERE c.kind = 'job';

    IF v_job_runs IS NULL THEN
        RETURN '{}'::uuid[];
    END IF;

    -- The new jobs' ids, ascending in candidate order. An array, not a ROWS FROM over the
    -- series: the planner estimates an array's unnest by its length (10 in a generic plan),
    -- a set-returning function at 1000 rows, which made it hash-join a Seq Scan of every step.
    v_ids := ARRAY(SELECT pgrun._uuidv7_series(cardinality(v_job_runs)));

    -- Build each job step's payload; a payload over a limit fails its step instead, and the
    -- others are collected (in run id, step key order) for the shared insert. The payloads
    -- are built once (MATERIALIZED): inlined, the dependencies' subquery ran once per use of
    -- the payload below (its size, its depth, the job), three times a step.
    WITH src AS MATERIALIZED (
        SELECT
            k.id,
            s.run_id,
            s.step_key,
            s.job_type,
            s.payload || jsonb_build_object('dependencies', coalesce(
                (SELECT jsonb_object_agg(
                    e.depends_on_key, jsonb_build_object('status', p.status, 'output', p.output)
                )
                FROM pgrun.workflow_step_dependencies AS e
                JOIN pgrun.workflow_steps AS p ON p.run_id = e.run_id AND p.step_key = e.depends_on_key
                WHERE e.run_id = s.run_id AND e.step_key = s.step_key),
                '{}'::jsonb
            )) AS payload,
            s.queue,
            s.priority,
            s.max_attempts,
            s.timeout_seconds,
            coalesce(s.organization_id, r.organization_id) AS organization_id,
            CASE
                WHEN s.delay IS NOT NULL THEN v_now + s.delay
                WHEN s.run_at IS NOT NULL THEN greatest(v_now, s.run_at)
                ELSE v_now
            END AS run_at
        FROM unnest(v_job_runs, v_job_keys, v_ids) AS k (run_id, step_key, id)
        JOIN pgrun.workflow_steps AS s ON s.run_id = k.run_id AND s.step_key = k.step_key
        JOIN pgrun.workflow_runs AS r ON r.id = k.run_id
    ),

    sized AS MATERIALIZED (
        SELECT
            q.*,
            CASE
                WHEN pg_column_size(q.payload) > c_max_payload_bytes THEN 'workflow.payload_too_large'
                -- a small payload skips the walk (the helper's size guard)
                WHEN NOT pgrun._json_depth_ok(q.payload) THEN 'workflow.payload_too_deep'
            END AS refusal
        FROM src AS q
    ),

    -- A payload over a limit creates no job: the step fails with the code instead.
    refused AS (
        UPDATE pgrun.workflow_steps AS s
        SET status = 'failed',
            error_code = q.refusal,
            released_at = v_now,
            finished_at = v_now,
            updated_at = v_now
        FROM sized AS q
        WHERE q.refusal IS NOT NULL AND s.run_id = q.run_id AND s.step_key = q.step_key
        RETURNING s.run_id, s.step_key
    )

    SELECT
        (SELECT array_agg(t.run_id ORDER BY t.run_id, t.step_key) FROM refused AS t),
        (SELECT array_agg(t.step_key ORDER BY t.run_id, t.step_key) FROM refused AS t),
        -- no idempotency key: every job is inserted
        array_agg(ROW(
            q.id, q.job_type, q.payload, q.queue, q.priority, q.max_attempts, q.timeout_seconds,
            q.run_at, q.organization_id, NULL, NULL, q.run_id, q.step_key, NULL
        )::pgrun._new_job)
    INTO v_failed_runs, v_failed_keys, v_jobs
    FROM (
        -- the ids ascend in this order (pgrun._uuidv7_series over the sorted candidates)
        SELECT z.* FROM sized AS z WHERE z.refusal IS NULL ORDER BY z.id
    ) AS q;

    IF v_jobs IS NOT NULL THEN
        PERFORM pgrun._enqueue_insert_jobs(v_jobs);

        UPDATE pgrun.workflow_steps AS s
        SET status = 'released',
            job_id = u.id,
            released_at = v_now,
            updated_at = v_now
        FROM unnest(v_jobs) AS u
        WHERE s.run_id = u.workflow_run_id AND s.step_key = u.workflow_step_key;
    END IF;

    -- Steps that failed here are terminal: resolve their edges (dependents released or
    -- skipped). The caller closes them, and every step that skipped, in their runs' counts.
    IF v_failed_runs IS NULL THEN
        RETURN '{}'::uuid[];
    END IF;
    RETURN v_failed_runs || pgrun._workflow_resolve(v_failed_runs, v_failed_keys);
END;
$$;

REVOKE EXECUTE ON FUNCTION pgrun._workflow_release_steps(uuid[], text[]) FROM public;

COMMENT ON FUNCTION pgrun._workflow_release_steps(uuid[], text[]) IS
'Private: release the given blocked steps whose counters are zero (jobs created set-based, externals waiting). '
'Returns the run of each step it closed (failed for a payload over 1 MiB or 100 levels, or skipped behind '
'one): the '
'caller settles them.';

CREATE OR REPLACE FUNCTION pgrun._workflow_resolve(p_run_ids uuid[], p_step_keys text[])
RETURNS uuid[]
LANGUAGE plpgsql
VOLATILE
-- The same settings as _workflow_release_steps, for the same reason: edges by their key.
SET enable_seqscan = off
SET enable_bitmapscan = off
SET enable_hashjoin = off
SET enable_mergejoin = off
SET jit = off
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    v_now timestamptz := pgrun.now();
    v_runs uuid[] := p_run_ids;
    v_keys text[] := p_step_keys;
    v_release_runs uuid[];
    v_release_keys text[];
    v_skipped uuid[] := '{}'::uuid[];
BEGIN
    WHILE coalesce(cardinality(v_keys), 0) > 0 LOOP
        WITH done AS (
            SELECT s.run_id, s.step_key, s.status
            FROM unnest(v_runs, v_keys) AS k (run_id, step_key)
            JOIN pgrun.workflow_steps AS s ON s.run_id = k.run_id AND s.step_key = k.step_key
        ),

        resolved AS (
            UPDATE pgrun.workflow_step_dependencies AS e
            SET resolved = true,
                resolved_at = v_now
            FROM done AS d
            WHERE e.run_id = d.run_id AND e.depends_on_key = d.step_key AND NOT e.resolved
            RETURNING e.run_id, e.step_key, (e.release_mode = 'on_success' AND d.status <> 'succeeded') AS skips
        ),

        per_step AS (
            SELECT r.run_id, r.step_key, count(*)::integer AS n, bool_or(r.skips) AS skip
            FROM resolved AS r
            GROUP BY r.run_id, r.step_key
        ),

        -- The dependents locked in key order, each with its count of resolved edges. The
        -- update below joins this one CTE with the table by key; joined with per_step as
        -- well, it scanned this CTE once per dependent (quadratic in the batch).
        locked AS MATERIALIZED (
            SELECT s.run_id, s.step_key, s.status AS old_status, p.n, p.skip
            FROM per_step AS p
            JOIN pgrun.workflow_steps AS s ON s.run_id = p.run_id AND s.step_key = p.step_key
            ORDER BY s.run_id, s.step_key
            FOR NO KEY UPDATE OF s
        ),

        counted AS (
            UPDATE pgrun.workflow_steps AS s
            SET dependency_count_pending = s.dependency_count_pending - l.n,
                status = CASE WHEN l.skip AND l.old_status = 'blocked' THEN 'skipped' ELSE s.status END,
                finished_at = CASE WHEN l.skip AND l.old_status = 'blocked' THEN v_now ELSE s.finished_at END,
                updated_at = v_now
            FROM locked AS l
            WHERE s.run_id = l.run_id AND s.step_key = l.step_key
            RETURNING s.run_id, s.step_key, s.status, s.dependency_count_pending, l.old_status
        )

        SELECT
            array_agg(c.run_id) FILTER (WHERE c.status = 'skipped' AND c.old_status = 'blocked'),
            array_agg(c.step_key) FILTER (WHERE c.status = 'skipped' AND c.old_status = 'blocked'),
            array_agg(c.run_id) FILTER (WHERE c.status = 'blocked' AND c.dependency_count_pending = 0),
            array_agg(c.step_key) FILTER (WHERE c.status = 'blocked' AND c.dependency_count_pending = 0)
        INTO v_runs, v_keys, v_release_runs, v_release_keys
        FROM counted AS c;

        IF v_release_runs IS NOT NULL THEN
            -- steps the release closed (a payload over the limit) count as closed here too
            v_skipped := v_skipped || pgrun._workflow_release_steps(v_release_runs, v_release_keys);
        END IF;
        v_skipped := v_skipped || coalesce(v_runs, '{}'::uuid[]);
    END LOOP;
    RETURN v_skipped;
END;
$$;

REVOKE EXECUTE ON FUNCTION pgrun._workflow_resolve(uuid[], text[]) FROM public;

COMMENT ON FUNCTION pgrun._workflow_resolve(uuid[], text[]) IS
'Private: resolve the outgoing edges of steps that just became terminal; skip, cascade, release. Returns the '
'run of each step it closed (skipped, or failed at release).';

CREATE OR REPLACE FUNCTION pgrun._workflow_settle_runs(p_run_ids uuid[], p_deltas integer[])
RETURNS void
LANGUAGE plpgsql
VOLATILE
-- Each run by primary key, whoever calls it and whatever the statistics.
SET enable_seqscan = off
SET enable_bitmapscan = off
SET jit = off
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    v_now timestamptz := pgrun.now();
    v_one_run boolean := p_run_ids[1] = ALL (p_run_ids);
    v_groups refcursor;
    v_delta integer := 0;
    v_ids uuid[] := p_run_ids[1:1];
    v_step integer;
BEGIN
    -- One UPDATE per distinct total of a run's deltas (most calls have one: each closed step
    -- counts -1), over its runs' ids. A join of the runs with the (id, delta) pairs let the
    -- planner, with statistics taken while few runs ran, walk every running run once per
    -- pair: quadratic in the batch (a completion of 200 chain steps compared 140,000 pairs).
    -- One run (a single-run caller, a completion of one job) is summed here, without the
    -- grouping statement (~6 % of completing one job that ends its run).
    IF v_one_run THEN
        FOREACH v_step IN ARRAY p_deltas LOOP
            v_delta := v_delta + v_step;
        END LOOP;
    ELSE
        OPEN v_groups FOR
            SELECT t.delta, array_agg(t.id ORDER BY t.id)
            FROM (
                SELECT u.id, sum(u.delta)::integer AS delta
                FROM unnest(p_run_ids, p_deltas) AS u (id, delta)
                GROUP BY u.id
            ) AS t
            GROUP BY t.delta;
    END IF;
    LOOP
        IF NOT v_one_run THEN
            FETCH v_groups INTO v_delta, v_ids;
            EXIT WHEN NOT FOUND;
        END IF;
        UPDATE pgrun.workflow_runs AS r
        SET open_step_count = r.open_step_count + v_delta,
            status = CASE
                WHEN r.open_step_count + v_delta > 0 THEN 'running'
                WHEN EXISTS (
                    SELECT FROM pgrun.workflow_steps AS s
                    WHERE s.run_id = r.id AND s.status IN ('failed', 'skipped', 'cancelled')
                ) THEN 'failed'
                ELSE 'succeeded'
            END,
            finished_at = CASE WHEN r.open_step_count + v_delta > 0 THEN NULL ELSE v_now END,
            updated_at = v_now
        -- running, spelt finished_at IS NULL (workflow_runs_finished_check): a status test
        -- let the planner walk every running run on workflow_runs_status_idx
        WHERE r.id = ANY (v_ids) AND r.finished_at IS NULL;
        EXIT WHEN v_one_run;
    END LOOP;
END;
$$;

REVOKE EXECUTE ON FUNCTION pgrun._workflow_settle_runs(uuid[], integer[]) FROM public;

COMMENT ON FUNCTION pgrun._workflow_settle_runs(uuid[], integer[]) IS
'Private: add each delta to its run''s open_step_count; a run reaching 0 becomes failed or succeeded.';

-- The hook the job functions call after a job reached a terminal status, in the same
-- transaction, with the job rows still locked: complete_job(s), fail_job(s),
-- reap_expired_leases, continue_job and cancel_job pass the ids they just finished (any
-- ids may be passed; the rest are ignored). For each workflow-managed job among them
-- that is now succeeded, dead or cancelled, and whose step is still 'released' with
-- that job id, in a run that is still running:
--   succeeded -> step succeeded, output = jobs.result
--   dead      -> step failed
--   cancelled -> step cancelled
-- then its edges resolve (dependents released or skipped) and the run status is
-- recomputed. A job of a cancelled or finished run, or one whose step already moved
-- on, changes nothing: the job row keeps its own outcome.
--
-- Cheap when no id belongs to a workflow: one primary-key lookup and return.
-- Locks, in order: (the caller's job rows), the SHARED run lock (FOR KEY SHARE) with a 5 s
-- lock_timeout cap (pgrun._workflow_lock_runs), the workflow_runs rows in id order, then
-- step rows. Errors: workflow.release_conflict (RQ001) when the run lock wait times out.
CREATE OR REPLACE FUNCTION pgrun._workflow_finish_steps(p_job_ids uuid[])
RETURNS void
LANGUAGE plpgsql
VOLATILE
AS $$
DECLARE
    v_now timestamptz := pgrun.now();
    v_job_ids uuid[];
    v_job_runs uuid[];
    v_job_keys text[];
    v_job_statuses text[];
    v_job_results jsonb[];
    v_runs uuid[];
    v_live uuid[];
    v_done_runs uuid[];
    v_done_keys text[];
BEGIN
    -- The one query every completion pays: primary-key lookups of the given ids.
    SELECT
        array_agg(j.id ORDER BY j.workflow_run_id, j.workflow_step_key),
        array_agg(j.workflow_run_id ORDER BY j.workflow_run_id, j.workflow_step_key),
        array_agg(j.workflow_step_key ORDER BY j.workflow_run_id, j.workflow_step_key),
        array_agg(j.status ORDER BY j.workflow_run_id, j.workflow_step_key),
        array_agg(j.result ORDER BY j.workflow_run_id, j.workflow_step_key)
    INTO v_job_ids, v_job_runs, v_job_keys, v_job_statuses, v_job_results
    FROM pgrun.jobs AS j
    WHERE j.id = ANY (p_job_ids)
      AND j.workflow_run_id IS NOT NULL
      AND j.status IN ('succeeded', 'dead', 'cancelled');
    IF v_job_ids IS NULL THEN
        RETURN;
    END IF;
    SELECT array_agg(DISTINCT r.id ORDER BY r.id) INTO v_runs FROM unnest(v_job_runs) AS r (id);

    PERFORM pgrun._workflow_lock_runs(v_runs, 'shared');

    SELECT array_agg(r.id ORDER BY r.id) INTO v_live
    FROM (
        SELECT wr.id
        FROM pgrun.workflow_runs AS wr
        -- running, spelt as in _workflow_settle_runs: the runs by primary key
        WHERE wr.id = ANY (v_runs) AND wr.finished_at IS NULL
        ORDER BY wr.id
        FOR NO KEY UPDATE OF wr
    ) AS r;
    IF v_live IS NULL THEN
        RETURN;
    END IF;

    -- Each step by primary key. "Still released" is spelt finished_at IS NULL (a step with a
    -- job id and no finished_at is released, by the CHECK constraints): a status test
    -- would let the planner drive the join from workflow_steps_open_idx, whose estimate
    -- is far off right after a bulk enqueue, and scan the id arrays once per open step.
    WITH finished AS (
        UPDATE pgrun.workflow_steps AS s
        SET status = CASE f.status WHEN 'succeeded' THEN 'succeeded' WHEN 'dead' THEN 'failed' ELSE 'cancelled' END,
            output = CASE WHEN f.status = 'succeeded' THEN f.result END,
            finished_at = v_now,
            updated_at = v_now
        FROM unnest(v_job_ids, v_job_runs, v_job_keys, v_job_statuses, v_job_results)
            AS f (job_id, run_id, step_key, status, result)
        WHERE f.run_id = ANY (v_live)
          AND s.run_id = f.run_id
          AND s.step_key = f.step_key
          AND s.job_id = f.job_id
          AND s.finished_at IS NULL
        RETURNING s.run_id, s.step_key
    )

    SELECT array_agg(f.run_id), array_agg(f.step_key) INTO v_done_runs, v_done_keys
    FROM finished AS f;
    IF v_done_runs IS NULL THEN
        RETURN;
    END IF;

    -- every finished step, and every step its outcome skipped, closes one open step
    v_done_runs := v_done_runs || pgrun._workflow_resolve(v_done_runs, v_done_keys);
    PERFORM pgrun._workflow_settle_runs(v_done_runs, array_fill(-1, ARRAY[cardinality(v_done_runs)]));
END;
$$;

REVOKE EXECUTE ON FUNCTION pgrun._workflow_finish_steps(uuid[]) FROM public;

COMMENT ON FUNCTION pgrun._workflow_finish_steps(uuid[]) IS
'Private: the job functions'' hook; settles the workflow steps of jobs that just finished and releases dependents.';
