-- Errors several job functions raise the same way.
--
-- * _job_raise_not_found: job.not_found (RQ002) for a job id that does not exist, or exists
--   in an organization the caller may not see (tenant scoping never reveals which). Used by get_job, cancel_job and requeue_job.
-- * _job_raise_invalid_type: job.invalid_type (RQ003) with the caller's DETAIL and the one HINT
--   that spells the job type rule out (the rule itself is pgrun._valid_job_type, created by
--   sql/0015_one_job_type_check.sql). Used by enqueue and upsert_job_definition.
--
-- Locks: none.

CREATE OR REPLACE FUNCTION pgrun._job_raise_not_found(p_job_id uuid, p_organization_id uuid)
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

REVOKE EXECUTE ON FUNCTION pgrun._job_raise_not_found(uuid, uuid) FROM public;

COMMENT ON FUNCTION pgrun._job_raise_not_found(uuid, uuid) IS
'Private: raise job.not_found (RQ002) for a job id, naming the organization when one was given.';

-- The job type rule itself, pgrun._valid_job_type, is in sql/0015_one_job_type_check.sql.
CREATE OR REPLACE FUNCTION pgrun._job_raise_invalid_type(p_detail text)
RETURNS void
LANGUAGE plpgsql
IMMUTABLE
AS $$
BEGIN
    PERFORM pgrun._raise(
        'job.invalid_type',
        p_detail,
        'Use at most 128 characters: lowercase letters, digits and _, in segments '
            'joined by ".", ":" or "-", starting with a letter (e.g. email.send).'
    );
END;
$$;

REVOKE EXECUTE ON FUNCTION pgrun._job_raise_invalid_type(text) FROM public;

COMMENT ON FUNCTION pgrun._job_raise_invalid_type(text) IS
'Private: raise job.invalid_type (RQ003) with the given DETAIL and the HINT that states the job type rule.';
