-- 0020 jobs_claim_type_idx: the ready jobs of each (job type, queue) in claim order, so that a
-- claim never pays for ready jobs it may not take.
--
-- claim_jobs walks jobs_claim_idx (priority, run_at, id) and reads each row's queue and type
-- from the table. Ready jobs it may not take (another type or queue than the claimer asked
-- for, a paused type, a capped type at its cap) that sit ahead of its own were read again by
-- every claim: 100,000 of them made a claim of 10 take 20-28 ms instead of 1 ms. The walk of
-- jobs_claim_idx is now bounded, and when it comes back short with a filter or a left-out type
-- in play, claim_jobs takes the rest through this index: one ordered walk per (job type,
-- queue) it may take (docs/lease-machine.md, "Ready jobs a claim passes over").
--
-- Partial like jobs_claim_idx: a job is in it only while queued, so a claim, completion or
-- failure of a running job writes no entry here; an enqueue (and a retry, a requeue) writes one.
-- Its predicate says "queued" as "not running and not finished" (the same rows, by
-- jobs_finished_check), and claim_jobs' per-pair queries say it the same way: PostgreSQL cannot
-- prove status = 'queued' from it, so it never plans those queries over jobs_claim_idx (a walk
-- of every queued job, which a small or freshly loaded table's statistics can make look cheap
-- in a plan kept for the session).
-- CREATE INDEX (not CONCURRENTLY: the runner owns the transaction) holds a SHARE lock on jobs
-- while it reads the table once (finished rows included): enqueues and claims wait for that,
-- reads do not.

CREATE INDEX jobs_claim_type_idx ON pgrun.jobs (job_type, queue, priority, run_at, id)
WHERE status <> 'running' AND finished_at IS NULL;
