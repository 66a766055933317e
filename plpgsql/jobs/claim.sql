-- claim_jobs: hand up to max_jobs ready jobs to a worker, each under a fresh lease.
--
-- A job is ready when status = 'queued' and run_at <= pgrun.now(). Ready jobs are taken
-- in priority order (lower runs first), then run_at, then id, optionally narrowed to some
-- queues and job types. Each claimed job becomes 'running' with a new lease_token, a
-- lease that ends lease_seconds from now, the worker's id, attempt + 1 and
-- total_attempts + 1. A claim writes no job_events row (issue 15): the running attempt
-- (number total_attempts, the claim's number over the job's life) lives in the jobs row
-- itself (worker_id, started_at, lease); job_attempts shows it, and the write that ends the
-- attempt records it on the event it writes anyway (outcome, step, worker, lease token,
-- start), as does the 'released' event of a claim handed back unstarted (worker, number,
-- claim time): no attempt row and no event of its own. Old 'claimed' rows stay valid.
-- max_attempts is the budget of the job's current step: the one continue_job gave it
-- (step_max_attempts), else the job's. run_at is when the job became due and started_at
-- the claim's time (both on the database clock): started_at - run_at is how long a ready
-- job waited, what a worker's start-latency metric reports.
--
-- Paused job types are not claimed. A job type with max_concurrency never has more
-- running jobs than the cap, however many claimers run at once:
--   1. read the paused and the capped types (job_runtime_configs, no lock);
--   2. when some are capped, lock their rows ORDER BY job_type FOR UPDATE, waiting at most
--      0.2 s (the caller's lock_timeout when shorter) for another claim of the type to
--      commit; a capped type whose row is held longer than that is left out of this call
--      (the next call tries again). Skipping at once, as claims did before, came back short
--      whenever two claimers of a capped type met, which a worker reads as a drained queue;
--   3. in a new statement (READ COMMITTED: a fresh snapshot, which sees every claim the
--      previous holder of the row committed) count the running jobs of each locked type
--      (through jobs_lease_idx, the partial index over running jobs); its room is max_concurrency minus that count, and a full type is left out;
--   4. the claim, in steps, each a statement only when needed: a walk of jobs_claim_idx in
--      claim order, filters and left-out types applied, locking FOR UPDATE SKIP LOCKED up to
--      max_jobs rows; with a filter or a left-out type in play (a job type filter counts only
--      when some queued job is of another type: a few lookups in jobs_claim_type_idx tell)
--      the walk reads at most 4 x max_jobs + 100 entries, and when it comes back short at
--      that bound, the rest comes from one walk of jobs_claim_type_idx per (job type, queue)
--      the claimer may take (_lease_lock_by_pair, jobs/_claim_pairs.sql): a claim never pays
--      for ready jobs it may not take (docs/lease-machine.md "Ready jobs a claim passes
--      over"); per capped type at most its room of them are kept (_lease_pick_by_room,
--      jobs/_claim_rooms.sql), and when that cut some, the types that filled their room are
--      left out and the walk runs again for the places left; then one UPDATE of the kept
--      rows by tuple id, which returns them in claim order.
-- A capped type's surplus stays queued for a later call and takes no place in the batch: a
-- batch holds fewer than max_jobs jobs only when no more are ready for the claimer.
-- max_held (NULL: no bound) is the most running jobs of any one capped type the claimer
-- holds under its worker_id, those it holds already counted (started or waiting in its local
-- queue: PostgreSQL cannot tell): its room in a capped type is at most max_held less them. A
-- worker that claims ahead of its free slots passes its slots (the Python worker: its slots,
-- or what its handlers finish in its prefetch window when that is more), so the jobs waiting
-- in one worker's queue do not take up a cap's room while another worker has slots to run
-- them. Per type, as caps are; a type without a cap is not bounded by it.
--
-- Locks, in order: job_runtime_configs rows of capped types (job_type order, waiting at most
-- 0.2 s), then the claimed jobs rows (claim order, SKIP LOCKED: never waits on a job). Rows
-- locked and not kept (the per-pair walks' surplus, a capped type's beyond its room, a job of
-- another type the plain walk met) stay locked until the claim's transaction ends. A claimer
-- whose job types are all capped (or left out) asks the walk for no more than their rooms'
-- sum (max_jobs counts down to it; none: no walk), so its surplus is at most that.
--
-- Errors (RQ003, before anything is locked): job.invalid_worker_id (NULL, blank or over
-- 200 characters), job.invalid_lease_seconds (outside 1..86400), job.invalid_max_jobs
-- (outside 1..1000), job.invalid_max_held (outside 1..10000); job.claim_unsupported_isolation
-- (RQ006, before anything is locked: a capped type the claimer may take, in a REPEATABLE
-- READ or SERIALIZABLE transaction). queues / job_types NULL mean "any"; an empty array
-- matches nothing.
-- A worker role with a scope (role_access queues / job_types) claims inside it: NULL means
-- its scope, and a queue or type outside it is access.queue_denied / access.job_type_denied
-- (42501, before anything is locked).

CREATE OR REPLACE FUNCTION pgrun.claim_jobs(
    worker_id text,
    lease_seconds integer DEFAULT 30,
    max_jobs integer DEFAULT 1,
    queues text[] DEFAULT NULL,
    job_types text[] DEFAULT NULL,
    max_held integer DEFAULT NULL
)
RETURNS TABLE (
    job_id uuid,
    job_type text,
    queue text,
    priority integer,
    payload jsonb,
    attempt integer,
    max_attempts integer,
    lease_token uuid,
    lease_expires_at timestamptz,
    timeout_seconds integer,
    step text,
    state jsonb,
    progress jsonb,
    organization_id uuid,
    workflow_run_id uuid,
    workflow_step_key text,
    run_at timestamptz,
    started_at timestamptz
)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
-- Plan stability: with stale statistics (a bulk load, no ANALYZE yet) or a queue/type
-- filter the planner cannot estimate, it prefers a bitmap scan of every ready row plus a
-- sort over the ordered walk of jobs_claim_idx that stops after max_jobs rows. Without
-- seq and bitmap scans the ordered index scan is always the cheapest path left; JIT never
-- pays off on a statement this short. The settings fix the plan's shape, so it is built
-- once per session (force_generic_plan) instead of re-planned on every call.
-- Measurements: docs/lease-machine.md.
SET enable_seqscan = off
SET enable_bitmapscan = off
SET jit = off
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    v_now timestamptz := pgrun.now();
    v_capped text[];
    v_lock_timeout text;
    v_locked text[];
    v_excluded text[];
    v_room_types text[] := '{}'::text[];
    v_rooms bigint[] := '{}'::bigint[];
    v_queues text[];
    v_job_types text[];
    v_narrowed boolean;
    v_walk integer;
    v_read integer;
    v_tids tid[];
    v_want integer;
    v_kept tid[];
    v_claimed tid[] := '{}'::tid[];
    v_unscoped boolean;
    v_max_jobs integer := claim_jobs.max_jobs;
    v_room_sum bigint;
BEGIN
    PERFORM pgrun._lease_check_worker(claim_jobs.worker_id, claim_jobs.lease_seconds);
    IF claim_jobs.max_jobs IS NULL OR claim_jobs.max_jobs NOT BETWEEN 1 AND 1000 THEN
        PERFORM pgrun._raise(
            'job.invalid_max_jobs',
            format('max_jobs %s is outside 1..1000', coalesce(claim_jobs.max_jobs::text, 'NULL')),
            'Claim as many jobs as the worker has free slots, at most 1000 per call.'
        );
    END IF;
    IF claim_jobs.max_held NOT BETWEEN 1 AND 10000 THEN
        PERFORM pgrun._raise(
            'job.invalid_max_held',
            format('max_held %s is outside 1..10000', claim_jobs.max_held),
            'Pass how many jobs of a capped type the worker may hold (its slots), or NULL.'
        );
    END IF;

    -- 0. A worker role with a scope claims inside it only (util/_access.sql): NULL filters
    --    become the scope, a filter outside it is access.queue_denied / job_type_denied.
    --    A caller without a scope (an admin, or no queues and no job types in its
    --    role_access row) keeps its filters, which is what _caller_check_scope returns for
    --    it: only a scoped role pays for that call (~20 us of a one-job claim).
    -- 1. Paused types are out; capped types are what the next steps are about. (Types
    --    outside job_types are filtered out by the claim anyway.) Read with step 0 in one
    --    statement for the requested types, and again for a scoped role's resolved ones.
    SELECT a.is_admin OR (a.queues IS NULL AND a.job_types IS NULL), t.excluded, t.capped
    INTO v_unscoped, v_excluded, v_capped
    FROM pgrun._caller_access() AS a
    CROSS JOIN pgrun._claim_type_configs(claim_jobs.job_types) AS t;
    IF v_unscoped THEN
        v_queues := claim_jobs.queues;
        v_job_types := claim_jobs.job_types;
    ELSE
        SELECT c.queues, c.job_types INTO v_queues, v_job_types
        FROM pgrun._caller_check_scope(claim_jobs.queues, claim_jobs.job_types) AS c;
        SELECT t.excluded, t.capped INTO v_excluded, v_capped
        FROM pgrun._claim_type_configs(v_job_types) AS t;
    END IF;

    IF cardinality(v_capped) > 0 THEN
        -- A capped type's room is counted in a snapshot taken after its row is locked (step
        -- 3): only READ COMMITTED (and READ UNCOMMITTED, which PostgreSQL runs as it) takes
        -- one per statement. Under REPEATABLE READ / SERIALIZABLE the count would miss what
        -- claims committed since the transaction's snapshot and exceed the cap.
        IF current_setting('transaction_isolation') NOT IN ('read committed', 'read uncommitted') THEN
            PERFORM pgrun._raise(
                'job.claim_unsupported_isolation',
                format(
                    'a claim of capped job type(s) %s at isolation level %s',
                    pgrun._clip(pg_catalog.array_to_string(v_capped, ', '), 200),
                    current_setting('transaction_isolation')
                ),
                'Claim in a READ COMMITTED transaction (the default), or name only uncapped job types.'
            );
        END IF;
        -- 2. Lock the capped types' rows, in job_type order (no deadlock between claims),
        --    waiting at most 0.2 s (or the caller's lock_timeout when shorter): another claim
        --    of the type holds its row until it commits, a few milliseconds. Rather than
        --    wait longer (a row held by something else, an open transaction of
        --    set_job_runtime_config), the rows free now are locked without waiting and a
        --    type still held sits this call out. The bound is this statement's lock_timeout
        --    only (the caller's is set back; the block's rollback sets it back on the
        --    timeout).
        BEGIN
            v_lock_timeout := pgrun._cap_lock_timeout('200ms');
            SELECT coalesce(array_agg(l.job_type ORDER BY l.job_type), '{}')
            INTO v_locked
            FROM (
                SELECT rc.job_type
                FROM pgrun.job_runtime_configs AS rc
                WHERE rc.job_type = ANY(v_capped)
                ORDER BY rc.job_type
                FOR UPDATE
            ) AS l;
            PERFORM set_config('lock_timeout', v_lock_timeout, true);
        EXCEPTION WHEN lock_not_available THEN
            SELECT coalesce(array_agg(l.job_type ORDER BY l.job_type), '{}')
            INTO v_locked
            FROM (
                SELECT rc.job_type
                FROM pgrun.job_runtime_configs AS rc
                WHERE rc.job_type = ANY(v_capped)
                ORDER BY rc.job_type
                FOR UPDATE SKIP LOCKED
            ) AS l;
        END;

        -- 3. A new statement, so a fresh snapshot: it sees every claim committed by the
        --    previous holder of each locked row. Room = cap - running, and with max_held,
        --    at most max_held less the type's running jobs this claimer holds (worker_id).
        SELECT
            coalesce(array_agg(r.job_type) FILTER (WHERE r.room > 0), '{}'),
            coalesce(array_agg(r.room) FILTER (WHERE r.room > 0), '{}'),
            coalesce(sum(r.room) FILTER (WHERE r.room > 0), 0)
        INTO v_room_types, v_rooms, v_room_sum
        FROM (
            SELECT
                rc.job_type,
                least(
                    rc.max_concurrency - n.running,
                    claim_jobs.max_held - n.mine
                ) AS room
            FROM unnest(v_locked) AS t (job_type)
            JOIN pgrun.job_runtime_configs AS rc ON rc.job_type = t.job_type
            CROSS JOIN LATERAL (
                SELECT
                    count(*) AS running,
                    count(*) FILTER (WHERE j.worker_id = claim_jobs.worker_id) AS mine
                FROM pgrun.jobs AS j
                WHERE j.status = 'running' AND j.job_type = rc.job_type
            ) AS n
            WHERE rc.max_concurrency IS NOT NULL AND NOT rc.paused
        ) AS r;

        -- Every capped type without room in this call (not locked, or full) is left out.
        v_excluded := v_excluded || ARRAY(
            SELECT c.job_type FROM unnest(v_capped) AS c (job_type)
            WHERE NOT (c.job_type = ANY(v_room_types))
        );
        -- A claimer whose job types are all capped (or left out) takes no more than their
        -- rooms add up to, so its walk locks no more: locking max_jobs of them and keeping
        -- the rooms' worth held the rest from every other session until it committed
        -- (~2 ms a claim of 500 for a room of 8). No room at all: nothing to claim.
        IF v_job_types <@ (v_capped || v_excluded) THEN
            v_max_jobs := least(v_max_jobs, v_room_sum);
            IF v_max_jobs = 0 THEN
                RETURN;
            END IF;
        END IF;
    END IF;

    -- The walk's bound: the claim itself plus what concurrent claimers of the same head hold
    -- locked (a few batches), before the per-pair path takes over; that path only when some
    -- ready job may be one this call cannot take.
    v_walk := 4 * v_max_jobs + 100;
    v_narrowed := v_queues IS NOT NULL OR cardinality(v_excluded) > 0;
    -- A worker names the job types it runs, and most of the time no queued job (ready or
    -- delayed) is of another type: the type filter then passes over nothing, and the claim
    -- takes the plain walk. Lookups in jobs_claim_type_idx tell, one per gap between the
    -- claimer's types (below the first and above the last in one statement, between two in a
    -- second only when there are several), each a range on the index's first column that
    -- stops at its first entry: a few index descents, against a second read of every claimed
    -- row by tuple id on the bounded walk (docs/performance.md, fifteenth pass).
    IF NOT v_narrowed AND v_job_types IS NOT NULL THEN
        v_narrowed := cardinality(v_job_types) = 0 OR array_position(v_job_types, NULL) IS NOT NULL
            OR EXISTS (
                SELECT 1
                FROM pgrun.jobs AS j
                WHERE j.status <> 'running' AND j.finished_at IS NULL
                  AND j.job_type < (SELECT min(t.job_type) FROM unnest(v_job_types) AS t (job_type))
            )
            OR EXISTS (
                SELECT 1
                FROM pgrun.jobs AS j
                WHERE j.status <> 'running' AND j.finished_at IS NULL
                  AND j.job_type > (SELECT max(t.job_type) FROM unnest(v_job_types) AS t (job_type))
            );
        IF NOT v_narrowed AND cardinality(v_job_types) > 1 THEN
            v_narrowed := EXISTS (
                SELECT 1
                FROM unnest(v_job_types) AS lo (job_type)
                -- LATERAL with LIMIT: a lookup per gap, its bounds as index conditions
                CROSS JOIN LATERAL (
                    SELECT 1
                    FROM pgrun.jobs AS j
                    WHERE j.status <> 'running' AND j.finished_at IS NULL
                      AND j.job_type > lo.job_type
                      AND j.job_type < (
                          SELECT min(hi.job_type) FROM unnest(v_job_types) AS hi (job_type)
                          WHERE hi.job_type > lo.job_type
                      )
                    LIMIT 1
                ) AS found
            );
        END IF;
    END IF;

    -- 4. The claim, in plpgsql steps, so a claim sets up only the statements it runs (one
    --    statement holding every path set them all up: ~90 us of a claim of one job, 18 %).
    --    Steps 4a-4c run once, unless a capped type's rows beyond its room were found: then
    --    again for the places those took (below).
    LOOP
        v_want := v_max_jobs - cardinality(v_claimed);

        -- 4a. The walk: jobs_claim_idx in claim order, the claimer's filters and left-out
        --     types applied to each entry's row, the rows it may take locked without waiting,
        --     until v_want are. When every queued job is one it may take (not v_narrowed: no
        --     filter, or only a job type filter that no queued job fails, no left-out type)
        --     the walk locks in the scan and stops after v_want. Otherwise it reads at most
        --     v_walk entries, unlocked and in claim order (the index's), and the ones it may
        --     take (none already kept) are found again by tuple id and locked, until v_want
        --     are (a second read of each, the price of the bound). The walk streams: a full
        --     claim stops early.
        IF NOT v_narrowed THEN
            -- The type filter after the lock, not in the scan: a job of another type enqueued
            -- since the lookups is locked and left (the claim comes back short this once) rather
            -- than read past, so the walk stays at max_jobs rows whatever commits meanwhile.
            v_tids := array_remove(ARRAY(
                SELECT CASE WHEN v_job_types IS NULL OR j.job_type = ANY(v_job_types) THEN j.ctid END
                FROM pgrun.jobs AS j
                WHERE j.status = 'queued' AND j.run_at <= v_now
                ORDER BY j.priority, j.run_at, j.id
                LIMIT v_want
                FOR UPDATE OF j SKIP LOCKED
            ), NULL);
        ELSE
            WITH locked AS (
                SELECT j.ctid AS tid
                FROM (
                    SELECT x.ctid AS tid, x.job_type, x.queue, x.priority, x.run_at, x.id
                    FROM pgrun.jobs AS x
                    WHERE x.status = 'queued' AND x.run_at <= v_now
                    ORDER BY x.priority, x.run_at, x.id
                    LIMIT v_walk
                ) AS w
                JOIN pgrun.jobs AS j ON j.ctid = w.tid
                WHERE j.status = 'queued'
                  AND (v_queues IS NULL OR w.queue = ANY(v_queues))
                  AND (v_job_types IS NULL OR w.job_type = ANY(v_job_types))
                  AND w.job_type <> ALL(v_excluded)
                  AND w.tid <> ALL(v_claimed)
                ORDER BY w.priority, w.run_at, w.id
                LIMIT v_want
                FOR UPDATE OF j SKIP LOCKED
            )
            SELECT
                ARRAY(SELECT l.tid FROM locked AS l),
                -- how many entries the walk read, asked only when it came back short (then it
                -- read them all): the ready entries up to the bound, counted again in this
                -- snapshot
                CASE WHEN (SELECT count(*) FROM locked) < v_want THEN (
                    SELECT count(*)::integer
                    FROM (
                        SELECT 1 FROM pgrun.jobs AS x WHERE x.status = 'queued' AND x.run_at <= v_now LIMIT v_walk
                    ) AS h
                ) END
            INTO v_tids, v_read;

            -- 4b. Only when the walk came back short, stopped at its bound (it read v_walk
            --     entries): the jobs it read may have been ones this claimer cannot take, and
            --     the rest comes from one walk of jobs_claim_type_idx per (job type, queue) it
            --     may take (_lease_lock_by_pair, jobs/_claim_pairs.sql).
            IF cardinality(v_tids) < v_want AND v_read = v_walk THEN
                v_tids := v_tids || ARRAY(
                    SELECT m.r_tid
                    FROM pgrun._lease_lock_by_pair(
                        v_now,
                        v_want - cardinality(v_tids),
                        v_claimed || v_tids,
                        v_queues,
                        v_job_types,
                        v_excluded
                    ) AS m
                );
            END IF;
        END IF;

        -- 4c. With a capped type in play, at most its room of its rows, in claim order
        --     (_lease_pick_by_room, jobs/_claim_rooms.sql). The surplus stays queued (and
        --     locked until the transaction ends); its places in the batch go to the next jobs
        --     the claimer may take: the types that filled their room are left out and 4a-4c
        --     run again for the places left, the rows kept so far passed over. So a claim
        --     comes back short only when no more jobs are ready for it, which the Python
        --     worker reads as a drained queue. Each round fills one type's room at least, so
        --     there are at most as many rounds as capped types, plus one; a claim with no
        --     capped type in play, or none whose rows overflowed, has one.
        IF cardinality(v_room_types) = 0 OR cardinality(v_tids) = 0 THEN
            v_claimed := v_claimed || v_tids;
            EXIT;
        END IF;
        v_kept := ARRAY(SELECT r.r_tid FROM pgrun._lease_pick_by_room(v_tids, v_room_types, v_rooms) AS r);
        v_claimed := v_claimed || v_kept;
        -- Done when nothing was cut, the batch is full, or the round found all there was.
        EXIT WHEN cardinality(v_kept) = cardinality(v_tids) OR cardinality(v_claimed) >= v_max_jobs
            OR cardinality(v_tids) < v_want;
        -- Each capped type's room less what it just got; a type with none left is left out.
        SELECT
            coalesce(array_agg(r.job_type) FILTER (WHERE r.room > 0), '{}'),
            coalesce(array_agg(r.room) FILTER (WHERE r.room > 0), '{}'),
            v_excluded || coalesce(array_agg(r.job_type) FILTER (WHERE r.room <= 0), '{}')
        INTO v_room_types, v_rooms, v_excluded
        FROM (
            SELECT t.job_type, t.room - (SELECT count(*) FROM pgrun.jobs AS j WHERE j.ctid = ANY(v_kept) AND j.job_type = t.job_type) AS room
            FROM unnest(v_room_types, v_rooms) AS t (job_type, room)
        ) AS r;
        v_narrowed := TRUE;
    END LOOP;
    v_tids := v_claimed;

    -- 4d. The rows are found again by their tuple id (a TID scan, no index descent per job):
    --     they are locked by this transaction, so no other transaction can have moved them
    --     since the walk. One race under-claims, never mis-claims: a queued row that another
    --     transaction updated (still queued) and committed while the bounded walk read it is
    --     left out (its new version no longer has the tuple id the walk read) and stays
    --     queued; the plain walk locks and returns the new version, which this statement's
    --     later snapshot sees. No pgrun write updates a queued row that way today. The guard
    --     says "queued" as "not leased and not finished" (the same rows, by jobs_lease_check and
    --     jobs_finished_check), not as status = 'queued', and matches no partial index's
    --     predicate: status = 'queued' would let the planner walk jobs_claim_idx instead of
    --     the TID scan when the statistics make the table look small.
    IF cardinality(v_tids) = 0 THEN
        RETURN;
    END IF;
    RETURN QUERY
    WITH claimed AS (
        UPDATE pgrun.jobs AS j
        SET status = 'running',
            worker_id = claim_jobs.worker_id,
            lease_token = gen_random_uuid(),
            lease_expires_at = v_now + make_interval(secs => claim_jobs.lease_seconds),
            heartbeat_at = v_now,
            attempt = j.attempt + 1,
            total_attempts = j.total_attempts + 1,
            started_at = v_now,
            updated_at = v_now
        WHERE j.ctid = ANY(v_tids)
          AND j.lease_token IS NULL
          AND j.finished_at IS NULL
        RETURNING
            j.id, j.job_type, j.queue, j.priority, j.payload, j.attempt,
            coalesce(j.step_max_attempts, j.max_attempts) AS max_attempts, j.lease_token,
            j.lease_expires_at, j.timeout_seconds, j.step, j.state, j.progress, j.organization_id,
            j.workflow_run_id, j.workflow_step_key, j.run_at
    )

    SELECT
        c.id, c.job_type, c.queue, c.priority, c.payload, c.attempt, c.max_attempts,
        c.lease_token, c.lease_expires_at, c.timeout_seconds, c.step, c.state, c.progress,
        c.organization_id, c.workflow_run_id, c.workflow_step_key, c.run_at, v_now
    FROM claimed AS c
    ORDER BY c.priority, c.run_at, c.id;
END;
$$;

COMMENT ON FUNCTION pgrun.claim_jobs(text, integer, integer, text[], text[], integer) IS
'Claim up to max_jobs (1..1000) ready jobs (status queued, run_at <= now) for worker_id, lowest priority '
'number first, then run_at, then id, optionally only from the given queues and job types (NULL = any, '
'an empty array = none). Paused types are skipped and per-type max_concurrency caps are never exceeded '
'(claims of a capped type take turns: one waits at most 0.2 s, or its lock_timeout when shorter, for another '
'to commit, then leaves a type still held out of this call); a capped type''s jobs '
'beyond its room take no place in the batch, so a claim returns fewer than max_jobs only when no more jobs it '
'may take are ready. max_held (1..10000, NULL = no bound): the most running jobs of any one capped type the '
'claimer holds under worker_id, those it holds counted; a worker claiming ahead of its free slots passes its '
'slots, so jobs waiting in its local queue do not take a cap''s room another worker could run them in. '
'Ready jobs it may not '
'take (another queue or type, a paused or full type) cost it a bounded read however many sit ahead of its '
'own. Each job becomes '
'running under a fresh lease_token that expires lease_seconds (1..86400) from now, attempt and '
'total_attempts go up by one (job_attempts shows the running attempt); no event is written (the job row '
'shows the claim, the event that ends the attempt records its start and worker). Returns one '
'row per claimed job, in claim order, with what the handler needs (payload, attempt, max_attempts: the '
'step''s budget when continue_job set one, step, state, progress, the lease, run_at: when it became due, '
'started_at: the claim''s time). Never waits on a job another claimer holds. '
'A worker role limited to queues or job types claims inside its scope (NULL filters = the scope). '
'Errors: job.invalid_worker_id, job.invalid_lease_seconds, job.invalid_max_jobs, job.invalid_max_held (RQ003); '
'job.claim_unsupported_isolation (RQ006: a capped type it may take, under REPEATABLE READ or SERIALIZABLE); '
'access.queue_denied, access.job_type_denied (42501: a filter outside the role''s scope).';
