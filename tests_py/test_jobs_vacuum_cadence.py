"""The queue's vacuum cadence (sql/0018_jobs_vacuum_cadence.sql): a plain VACUUM of pgrun.jobs
-- what autovacuum runs -- removes the dead entries the claims left at the head of
jobs_claim_idx, even when the finished history makes them a tiny share of the table.

Without the migration's vacuum_index_cleanup = on, PostgreSQL skips the index pass when the
dead rows sit on fewer than 2 % of the table's pages (the bypass), and claim_jobs keeps walking
over those entries until a much larger VACUUM comes (docs/performance.md, "A hot table that
stays small")."""

from __future__ import annotations

from typing import Any

import psycopg

FINISHED = 100_000  # about 5,000 pages at fillfactor 50: 2 % of them is 100
CLAIMED = 600  # their dead versions sit on about 30 pages; their claim-index entries fill several


def _vacuum_messages(conn: psycopg.Connection[Any]) -> list[str]:
    messages: list[str] = []
    conn.add_notice_handler(lambda diag: messages.append(diag.message_primary or ""))
    conn.execute("VACUUM (VERBOSE) pgrun.jobs")
    return messages


def test_vacuum_of_jobs_cleans_the_claim_index_however_large_the_history(db: str) -> None:
    with psycopg.connect(db, autocommit=True) as conn:
        # autovacuum must not run first: this test runs the VACUUM it would run
        conn.execute("ALTER TABLE pgrun.jobs SET (autovacuum_enabled = false)")
        conn.execute(
            """
            INSERT INTO pgrun.jobs (job_type, queue, priority, status, run_at, attempt, total_attempts,
                max_attempts, backoff_base_seconds, backoff_max_seconds, backoff_jitter, worker_id,
                started_at, finished_at)
            SELECT 'bench.noop', 'default', 100, 'succeeded', now() - interval '1 hour', 1, 1, 20, 2, 3600,
                0.2, 'w', now() - interval '1 hour', now() - interval '1 hour'
            FROM generate_series(1, %s)
            """,
            (FINISHED,),
        )
        conn.execute("VACUUM pgrun.jobs")
        conn.execute(
            "SELECT count(*) FROM pgrun.enqueue_jobs((SELECT jsonb_agg(jsonb_build_object("
            "'job_type', 'bench.noop')) FROM generate_series(1, %s)))",
            (CLAIMED,),
        )
        claimed = conn.execute(
            "SELECT array_agg(job_id), array_agg(lease_token) "
            "FROM pgrun.claim_jobs(worker_id => 'w', max_jobs => %s)",
            (CLAIMED,),
        ).fetchone()
        assert claimed is not None and len(claimed[0]) == CLAIMED
        conn.execute("SELECT count(*) FROM pgrun.complete_jobs(%s, %s)", claimed)

        messages = "\n".join(_vacuum_messages(conn))

    assert "index scan bypassed" not in messages, messages
    assert "index scan needed" in messages, messages
    # the claim index's pages that held only the claimed jobs' queued versions are gone
    claim_index = next(line for line in messages.splitlines() if '"jobs_claim_idx"' in line)
    deleted = int(claim_index.split(" newly deleted")[0].rsplit(", ", 1)[1])
    assert deleted >= 1, claim_index
