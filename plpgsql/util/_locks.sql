-- _cap_lock_timeout(cap): bound the wait of the statements that follow on a row lock, for a
-- path that waits for another transaction's short write rather than skipping its row, but
-- must not wait for a long one. Sets lock_timeout to cap for this transaction, unless the
-- caller's is stricter already (and not 0, unlimited); returns the caller's value, which the
-- path sets back (set_config(..., true)) once its wait is over. A wait that ends in an
-- exception block's rollback needs no setting back: the rollback restores it.
--
-- Callers: the workflow release path's shared run lock (5 s, workflows/_lock.sql) and
-- claim_jobs' lock of the capped types' runtime rows (0.2 s, jobs/claim.sql).
--
-- Locks: none. Errors: none (cap is one of its callers' constants).

CREATE OR REPLACE FUNCTION pgrun._cap_lock_timeout(p_cap text)
RETURNS text
LANGUAGE plpgsql
VOLATILE
AS $$
DECLARE
    v_previous text := current_setting('lock_timeout');
    v_previous_wait interval := v_previous::interval;
BEGIN
    IF v_previous_wait = interval '0' OR v_previous_wait > p_cap::interval THEN
        PERFORM set_config('lock_timeout', p_cap, true);
    END IF;
    RETURN v_previous;
END;
$$;

REVOKE EXECUTE ON FUNCTION pgrun._cap_lock_timeout(text) FROM public;

COMMENT ON FUNCTION pgrun._cap_lock_timeout(text) IS
'Private: cap lock_timeout at the given value for this transaction (a stricter one is kept); returns the '
'previous value, to be set back.';
