"""Helpers for the worker tests: run the loops in-process until a condition holds."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from pgrun.app import App
from pgrun.client import Client
from pgrun.config import Config
from pgrun.eventloop import run_until_complete
from pgrun.runner import default_loops, run_loops

FINISHED = ("succeeded", "dead", "cancelled")


def fast_config(dsn: str, **changes: Any) -> Config:
    """Short intervals for tests. Built directly, so values below the env minimums are kept."""
    values: dict[str, Any] = {
        "database_url": dsn,
        "worker_id": "test-worker",
        "poll_interval_ms": 100,
        "lease_ttl_seconds": 10,
        "reaper_interval_seconds": 1,
        "shutdown_grace_seconds": 5,
    }
    values.update(changes)
    return Config(**values)


def run_worker_until(
    app: App,
    config: Config,
    until: Callable[[Client], bool],
    timeout: float = 20.0,
    **loop_options: Any,
) -> float:
    """Run worker + reaper until ``until(client)`` is true; return the seconds it took."""

    async def main() -> float:
        stop = asyncio.Event()
        task = asyncio.create_task(run_loops(default_loops(app, **loop_options), config, stop))
        started = time.monotonic()
        with Client.connect(config.database_url) as client:
            try:
                while not await asyncio.to_thread(until, client):
                    if task.done():
                        task.result()
                        raise AssertionError("the loops ended before the condition held")
                    if time.monotonic() - started > timeout:
                        raise AssertionError(f"condition not met within {timeout} s")
                    await asyncio.sleep(0.05)
                return time.monotonic() - started
            finally:
                stop.set()
                await asyncio.wait_for(task, 30)

    return run_until_complete(main(), config)  # the loop `pgrun worker` runs on: uvloop's unless named


def statuses(client: Client, job_ids: list[Any]) -> list[str]:
    return [client.get_job(job_id)["status"] for job_id in job_ids]


def finished(client: Client, job_ids: list[Any]) -> bool:
    """Whether every job has reached a final status."""
    return all(status in FINISHED for status in statuses(client, job_ids))


def run_one_job(
    app: App,
    dsn: str,
    job_type: str,
    payload: dict[str, Any] | None = None,
    **enqueue_options: Any,
) -> dict[str, Any]:
    """Enqueue one job, run worker + reaper (fast_config) until it has finished, return get_job.

    The job is enqueued before the worker upserts the app's definitions, so what
    ``enqueue_options`` leaves out comes from the built-in defaults, not from ``@app.job``.
    """
    with Client.connect(dsn) as client:
        job_id = client.enqueue_job(job_type, payload, **enqueue_options).job_id
        run_worker_until(app, fast_config(dsn), lambda c: finished(c, [job_id]))
        return client.get_job(job_id)
