-- Errors several job functions raise the same way.
--
-- * _raise_job_not_found: job.not_found (RQ002) for a job id that does not exist, or exists
--   in an organization the caller may not see (tenant scoping never reveals which). Used by get_job, cancel_job and requeue_job.
--
-- Locks: none.

CREATE OR REPLACE FUNCTION pgrun._raise_job_not_found(p_job_id uuid, p_organization_id uuid)
RETURNS void
LANGUAGE plpgsql
STABLE
AS $$
BEGIN
    PERFORM pgrun._raise(
        'job.not_found',
        format(
            'no job %s%s', coalesce(p_job_id::text, 'NULL'),
            CASE
                WHEN p_organization_id IS NULL THEN ''
                ELSE format(' in organization %s', p_organization_id)
            END
        ),
        'Check the job id (and the organization it belongs to); finished jobs are '
            'removed by purge_finished_jobs after their retention period.'
    );
END;
$$;

REVOKE EXECUTE ON FUNCTION pgrun._raise_job_not_found(uuid, uuid) FROM public;

COMMENT ON FUNCTION pgrun._raise_job_not_found(uuid, uuid) IS
'Private: raise job.not_found (RQ002) for a job id, naming the organization when one was given.';
