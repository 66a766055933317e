-- 0018 jobs vacuum cadence: the queue's dead row versions are cleaned up on a fixed cadence,
-- however much finished history pgrun.jobs keeps (issue 15 item 7).
--
-- Every claim and every completion writes a new version of a jobs row, and neither update
-- can be HOT (status is in the partial indexes' predicates). So each claimed job leaves the
-- entry of its queued version behind in jobs_claim_idx, at the head of the index (the oldest
-- run_at), and each finished one its running version's in jobs_lease_idx. claim_jobs walks
-- jobs_claim_idx from its head: it steps over every dead entry there (killed entries are
-- skipped, but their pages are still read) until VACUUM removes them. The walk is as long as
-- the number of jobs claimed since the last VACUUM that cleaned the indexes.
--
-- With PostgreSQL's defaults, two rules tie that VACUUM to the size of the whole table, so
-- to the finished history it keeps, not to the queue:
--   1. autovacuum starts after 50 + 20 % of reltuples dead row versions: with 10 million
--      finished jobs kept, 2 million, i.e. about a million jobs between two vacuums;
--   2. a VACUUM whose dead rows sit on fewer than 2 % of the table's pages skips the index
--      pass altogether (index_cleanup 'auto', PostgreSQL's bypass): the heap is pruned and
--      every index keeps its dead entries. With 10 million jobs (580,000 pages) that is up to
--      about 180,000 jobs' worth of dead entries left at the head of jobs_claim_idx.
-- Measured with 10 million finished jobs (docs/performance.md, "A hot table that stays
-- small"): claim_jobs(max_jobs => 1) read 3,377 pages of jobs_claim_idx instead of 3 and took
-- 3.9 ms instead of 0.02 ms; claim latency p50 was 0.61x of an empty database's.
--
-- So jobs gets absolute settings: autovacuum starts after 10,000 dead row versions (about
-- 5,000 jobs), whatever the history, and every VACUUM of jobs, manual or automatic, vacuums
-- its indexes. The price grows with the history: the index pass reads every index of jobs
-- in full (jobs_pkey and jobs_finished_idx are about 50 bytes per kept job): 0.57 s of one
-- core for 10 million finished jobs, at most once per autovacuum_naptime (1 min by default),
-- throttled by autovacuum's cost limit. The heap pass reads only the pages changed since the
-- last VACUUM (the visibility map skips the rest). Retention (purge_finished_jobs, the
-- reaper) keeps the history, and with it that price, bounded.
--
-- Storage parameters only: no rewrite; SHARE UPDATE EXCLUSIVE lock, which conflicts with
-- neither reads nor writes of the rows.

ALTER TABLE pgrun.jobs SET (
    autovacuum_vacuum_scale_factor = 0,
    autovacuum_vacuum_threshold = 10000,
    vacuum_index_cleanup = on
);
