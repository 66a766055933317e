-- 0024 validate lease check: the stored rows of jobs checked against the jobs_lease_check 0023
-- re-created NOT VALID.
--
-- Its own transaction, so its own lock: VALIDATE CONSTRAINT takes SHARE UPDATE EXCLUSIVE on
-- jobs, which lets enqueues, claims, completions and reads go on while it scans. Every row
-- already passed the stronger rule 0023 replaced, so this cannot fail on a table pgrun wrote;
-- it makes the catalog say so again (convalidated).

ALTER TABLE pgrun.jobs VALIDATE CONSTRAINT jobs_lease_check;
