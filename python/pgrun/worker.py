"""The worker loop: claim jobs, run their handlers, write the outcomes. Start here.

One ``Worker`` is a handful of asyncio tasks sharing one connection pool:

* **claim loop** (``_claim_loop``) — while there are free slots and jobs may be ready, one
  ``claim_jobs`` call asks for ``min(free slots, JOBS_CLAIM_BATCH_SIZE)`` jobs; each claimed
  job gets a handler task. When a claim comes back short the queue is drained: the loop
  sleeps until a NOTIFY, a freed slot after a full claim, or the poll interval.
* **listener** (``_listen``) — its own connection, ``LISTEN pgrun_jobs``, blocked in
  ``notifies()``: the enqueue functions notify once per queue per statement, so an idle
  worker wakes within a millisecond or two instead of at its next poll.
* **handler tasks** (``_execute``) — run the handler (``async def`` on this loop, a plain
  ``def`` in its own thread) under the job's timeout, turn what it returned or raised into
  an outcome, and put the outcome in the buffer.
* **flusher** (``_flush_loop``) — writes buffered outcomes every few milliseconds (or at
  once when the buffer fills): all completions in one ``complete_jobs``, all failures in
  one ``fail_jobs``, continuations one ``continue_job`` each. A write that fails because
  the server went away stays buffered and is retried.
* **heartbeat** (``_heartbeat_loop``) — every lease/3, one ``heartbeat_jobs`` for every
  lease this worker holds; a lost lease marks the job lost (its outcome will not be
  written), a cancel request sets the handler's ``cancelled`` event.

Nothing here decides a job's fate: retry or dead, cancelled or not, lease valid or not —
the SQL functions answer, and the worker does what the answer says.

Stopping (``stop`` set, e.g. by SIGTERM): claim nothing more, give running handlers
``JOBS_SHUTDOWN_GRACE_SECONDS`` to finish, write their outcomes, and return. Handlers
still running after that are abandoned; their leases expire and the reaper retries them.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
import traceback
from collections.abc import Callable, Iterable
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, cast
from uuid import UUID

import psycopg

from pgrun import queries as q
from pgrun.app import (
    App,
    AsyncHandler,
    Continue,
    Fail,
    JobContext,
    Retry,
    Seconds,
    SyncHandler,
    SyncJobContext,
)
from pgrun.client import AsyncClient, Failure
from pgrun.config import Config
from pgrun.errors import ConflictError, LeaseLostError
from pgrun.results import BatchOutcome, ClaimedJob, JsonObject

log = logging.getLogger("pgrun.worker")

#: Outcomes are written this long after the first one is buffered (unless the buffer fills).
FLUSH_DELAY = 0.002
FLUSH_MAX = 500
#: Back-off after a failed database call (server gone, pool exhausted): doubles to the cap.
RETRY_MIN, RETRY_MAX = 0.2, 5.0


@dataclass
class _Running:
    """A job whose lease this worker holds: its handler runs, or its outcome waits in the buffer."""

    job: ClaimedJob
    cancelled: threading.Event = field(default_factory=threading.Event)
    lost: bool = False


@dataclass
class _Outcome:
    kind: Literal["complete", "fail", "continue"]
    running: _Running
    result: Any = None
    failure: Failure | None = None
    follow_up: Continue | None = None


def _interval(value: Seconds | None) -> timedelta | None:
    if value is None or isinstance(value, timedelta):
        return value
    return timedelta(seconds=value)


class Worker:
    name = "worker"

    def __init__(
        self,
        app: App,
        client: AsyncClient,
        config: Config,
        *,
        queues: Iterable[str] | None = None,
    ) -> None:
        self.app = app
        self.client = client
        self.config = config
        self.queues = sorted(set(queues)) if queues is not None else None
        self.slots = config.max_global_concurrency
        self._leases: dict[UUID, _Running] = {}
        self._handlers: set[asyncio.Task[None]] = set()
        self._buffer: list[_Outcome] = []
        self._buffered = asyncio.Event()
        self._wake = asyncio.Event()
        self._maybe_ready = True
        self._stopping = False
        self._flush_idle = asyncio.Event()
        self._flush_idle.set()

    # -- public --------------------------------------------------------------------------

    def poke(self) -> None:
        """Jobs may be ready now (a NOTIFY, a reaped lease, a retry coming due): claim."""
        self._maybe_ready = True
        self._wake.set()

    @property
    def running_count(self) -> int:
        return len(self._handlers)

    async def run(self, stop: asyncio.Event) -> None:
        """Run until ``stop`` is set, then shut down gracefully (see the module docstring)."""
        await self._register_definitions(stop)
        helpers = [
            asyncio.create_task(self._listen(), name="pgrun-listen"),
            asyncio.create_task(self._heartbeat_loop(), name="pgrun-heartbeat"),
            asyncio.create_task(self._flush_loop(), name="pgrun-flush"),
        ]
        stop_waiter = asyncio.create_task(stop.wait())
        stop_waiter.add_done_callback(lambda _: self._wake.set())
        try:
            await self._claim_loop(stop)
        finally:
            stop_waiter.cancel()
            await self._shutdown()
            for task in helpers:
                task.cancel()
            await asyncio.gather(*helpers, return_exceptions=True)

    # -- start-up ------------------------------------------------------------------------

    async def _register_definitions(self, stop: asyncio.Event) -> None:
        """Upsert the definition of every registered type (retried until the server answers)."""
        delay = RETRY_MIN
        while not stop.is_set():
            try:
                for spec in self.app.job_types.values():
                    await self.client.upsert_job_definition(
                        spec.job_type,
                        queue=spec.queue,
                        priority=spec.priority,
                        max_attempts=spec.max_attempts,
                        timeout_seconds=spec.timeout,
                        backoff_base_seconds=spec.backoff_base_seconds,
                        backoff_max_seconds=spec.backoff_max_seconds,
                        backoff_jitter=spec.backoff_jitter,
                    )
                return
            except (psycopg.OperationalError, TimeoutError) as exc:
                log.warning("cannot register job definitions yet (%s); retrying in %.1fs", exc, delay)
                await _sleep_or_stop(stop, delay)
                delay = min(delay * 2, RETRY_MAX)

    # -- claiming ------------------------------------------------------------------------

    async def _claim_loop(self, stop: asyncio.Event) -> None:
        job_types = sorted(self.app.job_types)
        delay = RETRY_MIN
        while not stop.is_set():
            free = self.slots - len(self._handlers)
            if free > 0 and self._maybe_ready:
                wanted = min(free, self.config.claim_batch_size)
                try:
                    jobs = await self.client.claim_jobs(
                        self.config.worker_id,
                        lease_seconds=self.config.lease_ttl_seconds,
                        max_jobs=wanted,
                        queues=self.queues,
                        job_types=job_types,
                    )
                except (psycopg.OperationalError, TimeoutError) as exc:
                    log.warning("claim failed (%s); retrying in %.1fs", exc, delay)
                    await _sleep_or_stop(stop, delay)
                    delay = min(delay * 2, RETRY_MAX)
                    continue
                delay = RETRY_MIN
                # A short claim means the ready set is drained (for us): wait for news.
                self._maybe_ready = len(jobs) == wanted
                for job in jobs:
                    self._start(job)
                continue
            # Nothing to do until a NOTIFY, a freed slot or the poll interval.
            self._wake.clear()
            try:
                await asyncio.wait_for(self._wake.wait(), self.config.poll_interval)
            except TimeoutError:
                self._maybe_ready = True

    def _start(self, job: ClaimedJob) -> None:
        running = _Running(job)
        self._leases[job.job_id] = running
        task = asyncio.create_task(self._execute(running), name=f"pgrun-job-{job.job_id}")
        self._handlers.add(task)
        task.add_done_callback(self._handler_done)

    def _handler_done(self, task: asyncio.Task[None]) -> None:
        self._handlers.discard(task)
        self._wake.set()  # a slot is free; claims again if the last claim was full

    # -- running a handler ---------------------------------------------------------------

    async def _execute(self, running: _Running) -> None:
        job = running.job
        spec = self.app.job_types.get(job.job_type)
        timeout = job.timeout_seconds
        outcome: _Outcome
        try:
            if spec is None:  # claim_jobs only hands out registered types; be safe anyway
                raise Fail(f"no handler for job type {job.job_type!r} in this worker", retryable=True)
            if spec.is_async:
                context = JobContext(job, self, running.cancelled)
                call = cast(AsyncHandler, spec.handler)(context)
            else:
                loop = asyncio.get_running_loop()
                sync_context = SyncJobContext(job, self, running.cancelled, loop)
                call = _in_thread(cast(SyncHandler, spec.handler), sync_context, f"pgrun-job-{job.job_id}")
            result = await asyncio.wait_for(call, timeout)
            if isinstance(result, Continue):
                outcome = _Outcome("continue", running, follow_up=result)
            else:
                json.dumps(result)  # must be JSON; a TypeError here fails the job below
                outcome = _Outcome("complete", running, result=result)
        except TimeoutError:
            running.cancelled.set()
            message = f"the handler ran longer than its timeout of {timeout} s"
            outcome = self._failure(running, "timeout", message, retryable=True)
        except Retry as retry:
            outcome = self._failure(running, "retry", retry.message, retryable=True, delay=retry.delay)
        except Fail as fail:
            outcome = self._failure(running, fail.code, fail.message, retryable=fail.retryable)
        except LeaseLostError:
            running.lost = True
            self._forget(running, "a write under its lease was refused (job.lease_lost)")
            return
        except asyncio.CancelledError:
            # Abandoned at shutdown: write nothing, the lease expires and the reaper retries.
            self._leases.pop(job.job_id, None)
            raise
        except Exception as exc:
            message = "".join(traceback.format_exception(exc))
            outcome = self._failure(running, "crashed", message, retryable=True)
        if running.lost:
            self._forget(running, "its lease was lost while the handler ran; dropping its outcome")
            return
        self._buffer.append(outcome)
        self._buffered.set()

    def _failure(
        self, running: _Running, code: str, message: str, *, retryable: bool, delay: Seconds | None = None
    ) -> _Outcome:
        job = running.job
        failure = Failure(job.job_id, job.lease_token, code, message, retryable, _interval(delay))
        return _Outcome("fail", running, failure=failure)

    def _forget(self, running: _Running, why: str) -> None:
        self._leases.pop(running.job.job_id, None)
        log.warning("job %s (%s): %s", running.job.job_id, running.job.job_type, why)

    # the context's writes (JobContext.progress / log) -------------------------------------

    async def progress(self, job: ClaimedJob, data: JsonObject) -> bool:
        return await self.client.report_progress(job.job_id, job.lease_token, data)

    async def log(self, job: ClaimedJob, message: str, level: str, fields: JsonObject | None) -> None:
        await self.client.append_job_log(job.job_id, job.lease_token, message, level=level, fields=fields)

    # -- writing outcomes ----------------------------------------------------------------

    async def _flush_loop(self) -> None:
        while True:
            await self._buffered.wait()
            if len(self._buffer) < FLUSH_MAX and not self._stopping:
                await asyncio.sleep(FLUSH_DELAY)
            await self._flush_once()

    async def _flush_once(self) -> None:
        """Write everything buffered; on a connection failure keep it buffered and back off."""
        batch, self._buffer = self._buffer, []
        self._buffered.clear()
        if not batch:
            return
        self._flush_idle.clear()
        try:
            retry = await self._write(batch)
        except Exception:
            # Not a connection problem: the call itself was refused. Never let it stop the
            # flusher; drop the batch (its leases expire and the reaper decides).
            log.exception("writing %d outcome(s) failed; dropping them", len(batch))
            for outcome in batch:
                self._leases.pop(outcome.running.job.job_id, None)
            retry = []
        finally:
            self._flush_idle.set()
        if retry:
            self._buffer[:0] = retry
            self._buffered.set()

    async def _write(self, batch: list[_Outcome]) -> list[_Outcome]:
        """Write a batch; return the outcomes to try again later (the server did not answer)."""
        completions = [o for o in batch if o.kind == "complete"]
        failures = [o for o in batch if o.kind == "fail"]
        continuations = [o for o in batch if o.kind == "continue"]
        retry: list[_Outcome] = []
        if completions:
            triples = [(o.running.job.job_id, o.running.job.lease_token, o.result) for o in completions]
            rows = await self._attempt(self.client.complete_jobs(triples))
            if rows is None:
                retry += completions
            else:
                self._settle(rows)
        if failures:
            rows = await self._attempt(self.client.fail_jobs([o.failure for o in failures if o.failure]))
            if rows is None:
                retry += failures
            else:
                self._settle(rows)
        for outcome in continuations:
            if not await self._write_continue(outcome):
                retry.append(outcome)
        if retry:
            await asyncio.sleep(RETRY_MIN)
        return retry

    async def _attempt(self, call: Any) -> list[BatchOutcome] | None:
        """Await a batch write; None when it must be retried (server gone, release conflict)."""
        try:
            rows: list[BatchOutcome] = await call
            return rows
        except (psycopg.OperationalError, TimeoutError) as exc:
            log.warning("writing outcomes failed (%s); will retry", exc)
        except ConflictError as exc:
            if exc.code != "workflow.release_conflict":
                raise
            log.info("workflow.release_conflict while writing outcomes; retrying")
        return None

    async def _write_continue(self, outcome: _Outcome) -> bool:
        job, follow_up = outcome.running.job, outcome.follow_up
        assert follow_up is not None
        try:
            result = await self.client.continue_job(
                job.job_id,
                job.lease_token,
                follow_up.step,
                state=follow_up.state,
                delay=_interval(follow_up.delay),
            )
        except (psycopg.OperationalError, TimeoutError) as exc:
            log.warning("continue_job failed (%s); will retry", exc)
            return False
        except ConflictError as exc:
            if exc.code != "workflow.release_conflict":
                raise
            return False
        except LeaseLostError:
            self._forget(outcome.running, "continue_job refused: the lease was lost")
            return True
        self._leases.pop(job.job_id, None)
        self._wake_at(result.run_at)
        return True

    def _settle(self, rows: list[BatchOutcome]) -> None:
        for row in rows:
            running = self._leases.pop(row.job_id, None)
            if row.outcome == "lease_lost":
                job_type = running.job.job_type if running else "?"
                log.warning(
                    "job %s (%s): outcome not written, lease lost (%s)", row.job_id, job_type, row.lost_reason
                )
            elif row.outcome == "retry_scheduled":
                self._wake_at(row.run_at)

    def _wake_at(self, run_at: datetime | None) -> None:
        """Claim again when a retry or next step comes due (sooner than the poll, if it is)."""
        if run_at is None:
            return
        delay = (run_at - datetime.now(UTC)).total_seconds()
        if delay <= 0:
            self.poke()
        elif delay < self.config.poll_interval:
            asyncio.get_running_loop().call_later(delay, self.poke)

    # -- leases --------------------------------------------------------------------------

    async def _heartbeat_loop(self) -> None:
        interval = self.config.heartbeat_interval
        while True:
            await asyncio.sleep(interval)
            held = [r for r in self._leases.values() if not r.lost]
            if not held:
                continue
            try:
                rows = await self.client.heartbeat_jobs(
                    self.config.worker_id,
                    [(r.job.job_id, r.job.lease_token) for r in held],
                    lease_seconds=self.config.lease_ttl_seconds,
                )
            except (psycopg.OperationalError, TimeoutError) as exc:
                log.warning("heartbeat failed (%s); retrying in 1s", exc)
                interval = min(1.0, self.config.heartbeat_interval)
                continue
            interval = self.config.heartbeat_interval
            for row in rows:
                running = self._leases.get(row.job_id)
                if running is None:
                    continue
                if not row.renewed:
                    running.lost = True
                    running.cancelled.set()
                    log.warning(
                        "job %s (%s): lease lost; the handler is told to stop and its writes are dropped",
                        row.job_id,
                        running.job.job_type,
                    )
                elif row.cancel_requested and not running.cancelled.is_set():
                    log.info("job %s (%s): cancel requested", row.job_id, running.job.job_type)
                    running.cancelled.set()

    # -- the NOTIFY listener ---------------------------------------------------------------

    async def _listen(self) -> None:
        delay = RETRY_MIN
        while True:
            try:
                async with await psycopg.AsyncConnection.connect(
                    self.config.database_url, autocommit=True
                ) as conn:
                    await conn.execute(q.LISTEN)
                    delay = RETRY_MIN
                    self.poke()  # anything enqueued while we were not listening
                    async for note in conn.notifies():
                        if self.queues is None or note.payload in self.queues:
                            self.poke()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning("listener connection lost (%s); reconnecting in %.1fs", exc, delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, RETRY_MAX)

    # -- shutdown ------------------------------------------------------------------------

    async def _shutdown(self) -> None:
        self._stopping = True
        grace = self.config.shutdown_grace_seconds
        if self._handlers:
            log.info("stopping: waiting up to %s s for %d running job(s)", grace, len(self._handlers))
            _done, pending = await asyncio.wait(set(self._handlers), timeout=grace)
            for task in pending:
                log.warning("abandoning %s after the grace period; its lease will expire", task.get_name())
                task.cancel()
            if pending:
                await asyncio.wait(pending, timeout=1)
        deadline = time.monotonic() + max(5.0, self.config.heartbeat_interval)
        while (self._buffer or not self._flush_idle.is_set()) and time.monotonic() < deadline:
            if self._buffer and self._flush_idle.is_set():
                await self._flush_once()
            else:
                await asyncio.sleep(0.01)
        if self._buffer:
            log.warning("exiting with %d unwritten outcome(s); their leases will expire", len(self._buffer))


async def _sleep_or_stop(stop: asyncio.Event, seconds: float) -> None:
    with suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), seconds)


def _in_thread(function: Callable[[SyncJobContext], Any], context: SyncJobContext, name: str) -> Any:
    """Run a sync handler in its own daemon thread; an awaitable of its result.

    A daemon thread (not a pool) so a handler stuck past its timeout or the shutdown grace
    period never keeps the process alive and never takes a slot from the next job.
    """
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()

    def target() -> None:
        value: Any = None
        error: BaseException | None = None
        try:
            value = function(context)
        except BaseException as exc:
            error = exc
        with suppress(RuntimeError):  # the loop is closed: the worker left without us
            loop.call_soon_threadsafe(_settle_future, future, value, error)

    threading.Thread(target=target, name=name, daemon=True).start()
    return future


def _settle_future(future: asyncio.Future[Any], value: Any, error: BaseException | None) -> None:
    if future.done():  # timed out or abandoned meanwhile
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(value)
