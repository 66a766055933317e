"""The reaper loop. Its retry delay: a job whose worker vanished waits its type's backoff before
it runs again, as a failed attempt does, unless the operator asks for one delay for all
(JOBS_REAPER_RETRY_DELAY_MS, 0 = at once). A crashing job is not retried back to back. Its
first pass beside a worker waits for the worker's first claim."""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta
from typing import Any, cast

import psycopg
import pytest

from pgrun.app import App
from pgrun.client import AsyncClient
from pgrun.config import Config
from pgrun.reaper import Reaper
from pgrun.runner import default_loops
from pgrun.worker import Worker


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


def test_the_first_pass_waits_for_the_workers_first_claim() -> None:
    """Beside a worker (pgrun.runner.default_loops), the reaper's first pass comes after the
    worker's first claim has answered, not in the middle of the start; a stop before then
    ends it without a pass. Alone, it reaps at once."""
    calls: list[int] = []

    class Counting:
        async def reap_expired_leases(self, **_: Any) -> list[Any]:
            calls.append(1)
            return []

    async def main() -> None:
        after, stop = asyncio.Event(), asyncio.Event()
        reaper = Reaper(cast(AsyncClient, Counting()), Config(retention_hours=0), after=after)
        task = asyncio.create_task(reaper.run(stop))
        await asyncio.sleep(0.05)
        assert calls == [], "reaped before the worker's first claim"
        after.set()
        await asyncio.sleep(0.05)
        assert calls == [1]
        stop.set()
        await asyncio.wait_for(task, 1)

        calls.clear()
        stop = asyncio.Event()
        task = asyncio.create_task(
            Reaper(cast(AsyncClient, Counting()), Config(), after=asyncio.Event()).run(stop)
        )
        await asyncio.sleep(0.01)
        stop.set()
        await asyncio.wait_for(task, 1)
        assert calls == [], "stopped before the first claim: no pass"

        stop = asyncio.Event()
        task = asyncio.create_task(Reaper(cast(AsyncClient, Counting()), Config(retention_hours=0)).run(stop))
        await asyncio.sleep(0.05)
        stop.set()
        await asyncio.wait_for(task, 1)
        assert calls == [1], "no worker to wait for: at once"

        built = {
            name: factory(cast(AsyncClient, Counting()), Config()) for name, factory in default_loops(App())
        }
        assert cast(Reaper, built["reaper"]).after is cast(Worker, built["worker"]).claimed_once

    asyncio.run(main())
