"""The reaper loop: recover expired leases, purge old finished jobs.

Every ``JOBS_REAPER_INTERVAL_SECONDS`` it calls ``reap_expired_leases`` (again while a call
comes back full); a job it retries waits its type's backoff, as a failed attempt does, unless
``JOBS_REAPER_RETRY_DELAY_MS`` sets one delay for all (0 = retry at once); what becomes of each
job (retry, dead, cancelled) is the function's decision. About once a minute it calls
``purge_finished_jobs`` with the retention period ``JOBS_RETENTION_HOURS`` (0 = keep
everything), again while full. Purging is an admin's right (docs/security.md): under a role
that may not purge, the reaper says so once and goes on reaping; retention is then
``pgrun purge`` run by an admin (from cron, say).

Any number of reapers may run: the SQL skips rows another reaper is working on.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from datetime import timedelta

import psycopg

from pgrun.client import AsyncClient
from pgrun.config import Config
from pgrun.errors import PermissionDeniedError

log = logging.getLogger("pgrun.reaper")

REAP_BATCH = 1000
PURGE_BATCH = 10_000
PURGE_EVERY_SECONDS = 60.0


class Reaper:
    name = "reaper"

    def __init__(
        self,
        client: AsyncClient,
        config: Config,
        *,
        on_ready: Callable[[], None] | None = None,
        after: asyncio.Event | None = None,
    ) -> None:
        self.client = client
        self.config = config
        #: Called when reaped jobs are queued again (the worker in this process claims at once).
        self.on_ready = on_ready
        #: The first pass waits for this (the worker in this process has claimed once).
        self.after = after
        self._next_purge = 0.0
        self._may_purge = config.retention_hours > 0

    async def run(self, stop: asyncio.Event) -> None:
        if self.after is not None:
            await _first_of(self.after, stop)
        while not stop.is_set():
            try:
                await self.reap()
                if self._may_purge and time.monotonic() >= self._next_purge:
                    await self._purge_if_allowed()
                    self._next_purge = time.monotonic() + PURGE_EVERY_SECONDS
            except (psycopg.OperationalError, TimeoutError) as exc:
                log.warning("reaper pass failed (%s); trying again next interval", exc)
            except Exception:
                log.exception("reaper pass failed; trying again next interval")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self.config.reaper_interval_seconds)

    async def reap(self) -> int:
        """One pass: reap until a call comes back short. Returns how many jobs were reaped."""
        delay_ms = self.config.reaper_retry_delay_ms
        retry_delay = None if delay_ms is None else timedelta(milliseconds=delay_ms)
        total = 0
        while True:
            rows = await self.client.reap_expired_leases(max_jobs=REAP_BATCH, retry_delay=retry_delay)
            total += len(rows)
            for row in rows:
                log.info("reaped job %s: %s", row.job_id, row.outcome)
            if rows and self.on_ready is not None:
                self.on_ready()
            if len(rows) < REAP_BATCH:
                return total

    async def _purge_if_allowed(self) -> None:
        try:
            await self.purge()
        except PermissionDeniedError as exc:
            self._may_purge = False
            log.warning(
                "retention purge skipped from now on: this role may not purge (%s). Purging is an "
                "admin's: run `pgrun purge` as an admin, or set JOBS_RETENTION_HOURS=0 here",
                exc.describe(),
            )

    async def purge(self) -> int:
        older_than = timedelta(hours=self.config.retention_hours)
        total = 0
        while True:
            deleted = await self.client.purge_finished_jobs(older_than, max_jobs=PURGE_BATCH)
            total += deleted
            if deleted < PURGE_BATCH:
                if total:
                    log.info("purged %d finished job(s) older than %s", total, older_than)
                return total


async def _first_of(*events: asyncio.Event) -> None:
    """Return when any of ``events`` is set."""
    waits = [asyncio.ensure_future(event.wait()) for event in events]
    try:
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for wait in waits:
            wait.cancel()
