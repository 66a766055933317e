"""The reaper loop's retry delay: a job whose worker vanished waits its type's backoff before
it runs again, as a failed attempt does, unless the operator asks for one delay for all
(JOBS_REAPER_RETRY_DELAY_MS, 0 = at once). A crashing job is not retried back to back."""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta

import psycopg
import pytest

from pgrun.client import AsyncClient
from pgrun.config import Config
from pgrun.reaper import Reaper


@pytest.mark.parametrize(
    ("delay_ms", "low", "high"), [(None, 1.5, 2.5), (0, -0.5, 0.5), (30_000, 29.5, 30.5)]
)
def test_a_reaped_job_waits_its_types_backoff_unless_a_delay_is_set(
    db: str, delay_ms: int | None, low: float, high: float
) -> None:
    """The default backoff of a type: 2 s base, jitter 0.2, so the first retry waits 1.6..2.4 s."""
    with psycopg.connect(db, autocommit=True) as conn:
        conn.execute("SELECT pgrun.enqueue_job('reap.me')")
        conn.execute("SELECT pgrun.claim_jobs('gone', 1, 1, NULL, ARRAY['reap.me'])")
    time.sleep(1.2)  # the one-second lease runs out (the database's clock)

    async def one_pass() -> int:
        async with await AsyncClient.connect(db) as client:
            return await Reaper(client, Config(reaper_retry_delay_ms=delay_ms)).reap()

    assert asyncio.run(one_pass()) == 1
    with psycopg.connect(db) as conn:
        row = conn.execute(
            "SELECT status, extract(EPOCH FROM run_at - finished_attempt_at) FROM ("
            " SELECT j.status, j.run_at, e.created_at AS finished_attempt_at FROM pgrun.jobs AS j"
            " JOIN pgrun.job_events AS e ON e.job_id = j.id AND e.outcome = 'lease_expired'"
            " WHERE j.job_type = 'reap.me') AS x"
        ).fetchone()
    assert row is not None
    status, waits = row[0], float(row[1])
    assert status == "queued"
    assert low <= waits <= high, (
        f"retry after {waits:.2f} s, expected {low}..{high} ({timedelta(seconds=waits)})"
    )
