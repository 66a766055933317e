"""The worker loop: claim jobs, run their handlers, write the outcomes. Start here.

One ``Worker`` is a handful of asyncio tasks sharing one connection pool:

* **claim loop** (``_claim_loop``) — when the **local queue** (``_queue``: claimed jobs not
  started yet) and the claims in flight will bring are down to half its bound
  (``_queue_bound``: ``JOBS_PREFETCH`` if set, else about ``PREFETCH_SECONDS`` of the
  handlers' recent rate, up to 1000, at least one slot's worth per slot unless the handlers
  are known to take ``PREFETCH_SECONDS`` or more) or a free slot has
  nothing to start, and jobs may be ready, a ``claim_jobs`` task (``_claim``) asks for
  ``min(room, JOBS_CLAIM_BATCH_SIZE)`` jobs, room being the slots plus the bound minus what
  the worker holds and has asked for (with ``max_held``, ``_max_held``: how many jobs of a
  capped type it may hold, so that jobs waiting in its queue leave a cap's room to other
  workers); at most ``JOBS_CLAIMS_IN_FLIGHT`` claims (default 2)
  run at once: with more, a fast worker whose queue runs low does not wait out one claim's
  round trip before asking again. A free slot takes the next job from the queue
  (``_dispatch``) and runs its handler task, so a freed slot never waits for a claim round
  trip, and the next claim is in flight while handlers run and outcomes are written. The
  queue is kept in claim order (priority, run_at, id): a claim's jobs are merged in, so a
  job of better priority claimed later goes ahead of the held jobs not started yet, and
  claims answering out of order start their jobs in order. When a claim comes back short
  (and no news came while it ran: a NOTIFY, or outcomes written, which free room under a job
  type's cap) the queue is drained: the loop sleeps until news, a freed slot after a full
  claim, or the poll interval. ``JOBS_PREFETCH=0`` claims only for free slots.
* **listener** (``_listen``) — its own connection, ``LISTEN pgrun_jobs``, blocked in
  ``notifies()``: the enqueue functions notify once per queue per statement, so an idle
  worker wakes within a millisecond or two instead of at its next poll. A notification
  (``poke``, as are a reaped lease and a known due time) starts the claim itself when the
  claim loop would, rather than leaving it to the loop it wakes.
* **handler tasks** (``_execute``) — run the handler (``async def`` on this loop, a plain
  ``def`` in its own thread) under the job's timeout, turn what it returned or raised into
  an outcome, and put the outcome in the buffer. A result or ``Continue`` state PostgreSQL
  could not store (not JSON, NaN, a NUL or a lone surrogate in a string) becomes a failure
  of that job (``result_invalid`` / ``state_invalid``, not retried) before anything is sent;
  every error message is made storable (NUL and lone surrogates replaced, at most 4,000
  characters) and passes the app's ``redact`` hook. A crash sends the exception's type and
  clipped text (``store_tracebacks``: the traceback) and logs the whole traceback.
* **flusher** (``_flush_loop``) — writes buffered outcomes every few milliseconds (or at
  once when the buffer fills): all completions in one ``complete_jobs``, all failures in
  one ``fail_jobs``, continuations one ``continue_job`` each. What a refused write does
  (``_split``):

  - the server went away or asked for a retry (connection loss, serialization failure,
    deadlock, lock or statement timeout: ``_transient``): the batch stays buffered and is
    written again as it is after a pause;
  - ``workflow.release_conflict`` (a run's release lock is busy): the plain jobs' outcomes
    are written again at once; the workflow jobs' are parked with their run and written by
    that run's own retry (``_retry_run``: 0.2 s later, then with back-off, at most
    ``PARKED_WRITES`` at a time; the run's later outcomes join them), so a run that still
    conflicts never holds back its batch-mates, other runs or the next batches;
  - anything else: the batch is split in halves and each half written, until the refused
    outcome is alone; a refused completion then becomes a ``result_invalid`` failure, a
    refused failure is written once more as ``failure_invalid`` (without its delay), a
    refused continuation becomes ``state_too_large`` / ``state_invalid`` /
    ``continue_invalid``; a refusal not about the outcome's content (permissions, an
    internal error) drops the outcome and its lease expires. Every other outcome of the
    batch is written exactly once.

  ``complete_jobs`` reporting a row ``result_too_large`` (nothing written for that job)
  becomes a ``result_too_large`` failure of that job, not retried.
* **heartbeat** (``_heartbeat_loop``) — every lease/3, one ``heartbeat_jobs`` for every
  lease this worker holds, the local queue's included; a lost lease marks the job lost (its
  outcome will not be written; a queued job leaves the queue unstarted), a cancel request
  sets the handler's ``cancelled`` event, or, for a job not started yet, takes it out of the
  queue and hands it back (``release_jobs`` ends it cancelled).

Durability (``JOBS_ASYNC_CLAIMS``, on by default; docs/lease-machine.md, "Durability"): claims
and heartbeats go through a small pool of their own whose connections start with
``synchronous_commit = off`` (``async_commit_pool``), so they do not wait for a WAL flush.
A claim lost in a server crash leaves its job queued (it runs again, as after a lost lease),
and the durable write that ends the attempt flushes the claim's WAL first. Completions,
failures, continuations, progress and log lines use the durable pool the worker was given.

Nothing here decides a job's fate: retry or dead, cancelled or not, lease valid or not —
the SQL functions answer, and the worker does what the answer says.

Metrics (``metrics``, docs/metrics.md): claims, handler run times, flushes and what the SQL
answered for each outcome are reported to a ``pgrun.metrics.WorkerMetrics``; without
``--metrics-port`` the worker holds ``NO_METRICS``, whose hooks do nothing.

Starting (``run``): the first claim goes out while the job types' definitions are upserted
(``_register``; the claim reads the jobs' own settings); no handler starts before the upsert
has answered, the listener connects after it, and a refused upsert ends the worker with the
claimed jobs handed back.

Stopping (``stop`` set, e.g. by SIGTERM): claim nothing more, let the claims in flight answer,
hand the jobs waiting in the local queue back at once (``release_jobs``: queued again, no
attempt spent), give running handlers ``JOBS_SHUTDOWN_GRACE_SECONDS`` to finish, write their
outcomes, and return. Handlers still running after that are abandoned; their leases expire
and the reaper retries them.
"""

from __future__ import annotations

import asyncio
import heapq
import json
import logging
import re
import time
import traceback
from collections import Counter, deque
from collections.abc import Callable, Iterable
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, NamedTuple, cast
from uuid import UUID

import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg_pool import AsyncConnectionPool

from pgrun import queries as q
from pgrun.app import (
    App,
    AsyncHandler,
    CancelEvent,
    Continue,
    Fail,
    JobContext,
    Retry,
    SyncHandler,
    SyncJobContext,
)
from pgrun.client import (
    AsyncClient,
    Continuation,
    Failure,
    KeepingAsyncClient,
    LogLine,
    configure_async_connection,
)
from pgrun.config import Config
from pgrun.errors import ConflictError, InvalidInputError, LeaseLostError, PgrunError, schema_mismatch
from pgrun.eventloop import loop_kind
from pgrun.metrics import NO_METRICS, NoMetrics
from pgrun.results import BatchOutcome, ClaimedJob, JsonObject, JsonText, Seconds, UndecodableJson
from pgrun.threads import HandlerThreads

log = logging.getLogger("pgrun.worker")

#: Outcomes are written this long after the first one is buffered (unless the buffer fills,
#: or no other outcome is coming: see ``Worker._gather_outcomes``).
FLUSH_DELAY = 0.002
FLUSH_MAX = 500
#: At most this many log lines an append_job_logs call (the function takes 10,000).
LOG_LINES_MAX = 2000
#: By default the local queue holds about this much of the worker's recent throughput (see
#: ``Worker._queue_bound``): the rate of finished handlers, sampled at most every
#: RATE_SAMPLE_SECONDS and smoothed over about RATE_SECONDS.
PREFETCH_SECONDS = 0.1
RATE_SAMPLE_SECONDS = 0.05
RATE_SECONDS = 0.25
#: Back-off after a failed database call (server gone, pool exhausted): doubles to the cap.
RETRY_MIN, RETRY_MAX = 0.2, 5.0
#: At most this many writes of parked outcomes (see ``_retry_run``) at a time.
PARKED_WRITES = 2
#: The longest error message the worker sends (pgrun stores at most 4,000 characters).
MAX_ERROR_MESSAGE = 4000
#: A crash is stored as its exception's type and at most this much of its text (by default).
CRASH_MESSAGE_CHARS = 200
_TRUNCATED = " [truncated]"

# A write refused with one of these SQLSTATE classes (connection exception, transaction
# rollback: serialization failure and deadlock, insufficient resources, operator
# intervention: statement_timeout and shutdown, system error) or lock_not_available is
# written again as it is; so is one the server never answered (no SQLSTATE).
_TRANSIENT_CLASSES = frozenset({"08", "40", "53", "57", "58"})
#: How many known due times (delayed jobs, retries) the worker keeps timers for.
MAX_DUE_TIMES = 10_000
#: uvloop's timers count whole milliseconds and fire up to ~1.3 ms before their time by the
#: clock a job's run_at is on; there the due-time timer is set this much later, so the claim
#: it starts does not come before the job is due (which would leave the job to the poll).
UVLOOP_TIMER_SLACK = 0.002
#: How often one outcome's own write may time out before the worker gives it up.
MAX_TIMEOUTS = 5
_TRANSIENT_STATES = frozenset({"55P03"})
# A NUL escape in JSON text: an odd number of backslashes before u0000.
_NUL_ESCAPE = re.compile(r"(\\+)u0000")
#: json.dumps with these options, built once: json.dumps builds an encoder per call when given
#: options (~0.8 us of its ~2.2 for a small object, on every result and log line checked).
_JSON_ENCODER = json.JSONEncoder(allow_nan=False, ensure_ascii=False)


@dataclass
class _Running:
    """A job whose lease this worker holds: its handler runs, or its outcome waits in the buffer."""

    job: ClaimedJob
    cancelled: CancelEvent = field(default_factory=CancelEvent)
    lost: bool = False
    #: Claimed but its handler not started yet: it waits in the local queue.
    waiting: bool = True


class _ClaimOut(NamedTuple):
    """A claim in flight: how many jobs it asked for, and its number (claims are numbered as
    they are sent, and their jobs start in that order: ``_release_held``)."""

    wanted: int
    number: int


@dataclass
class _Outcome:
    kind: Literal["complete", "fail", "continue"]
    running: _Running
    result: Any = None
    failure: Failure | None = None
    follow_up: Continue | None = None
    #: A failure written in place of an outcome the server refused: refused too, it is dropped.
    rewritten: bool = False
    #: How many writes of this outcome alone ran out of time (statement or lock timeout).
    timeouts: int = 0


@dataclass
class _Pending:
    """What a write left to do."""

    #: Not written, the server did not answer or asked for a retry: write again after a pause.
    retry: list[_Outcome] = field(default_factory=list)
    #: Not written, their workflow run's release lock is busy: they wait with their run.
    conflicted: list[_Outcome] = field(default_factory=list)
    #: Failures that replace refused outcomes (or a too-large result): write them next.
    follow_ups: list[_Outcome] = field(default_factory=list)

    def take_follow_ups(self) -> list[_Outcome]:
        taken, self.follow_ups = self.follow_ups, []
        return taken


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
        metrics: NoMetrics = NO_METRICS,
    ) -> None:
        self.app = app
        self.client = client
        self.config = config
        self.queues = sorted(set(queues)) if queues is not None else None
        self.slots = config.max_global_concurrency
        self._leases: dict[UUID, _Running] = {}
        #: Running handlers' tasks and their jobs (a task is not named after its job: formatting
        #: the id was 2 % of the worker's time at 20,000 no-op jobs a second).
        self._handlers: dict[asyncio.Task[None], _Running] = {}
        #: Claimed jobs not started yet, in claim order (their leases are in ``_leases``).
        self._queue: deque[_Running] = deque()
        self._prefetch = config.prefetch_limit
        #: Handlers finished, and the rate they finish at (per second, smoothed), sampled
        #: by ``_queue_bound``.
        self._finished = 0
        self._rate = 0.0
        self._rate_at = time.monotonic()
        self._rate_finished = 0
        #: The handlers' run times added up (seconds), the total at the rate's last sample, and
        #: the mean run time over the last sample that had any (0.0: none finished yet).
        self._handler_seconds = 0.0
        self._rate_handler_seconds = 0.0
        self._handler_time = 0.0
        self._buffer: list[_Outcome] = []
        #: Log lines handlers wrote (ctx.log), written with the next flush, before its outcomes.
        self._log_lines: list[LogLine] = []
        #: Set when a flush has written the lines it took: a handler that buffered
        #: LOG_LINES_MAX unwritten lines waits for it (``log``).
        self._lines_written = asyncio.Event()
        self._buffered = asyncio.Event()
        #: The daemon threads sync handlers run in, reused from one handler to the next.
        self._threads = HandlerThreads()
        #: Set when no handler runs, no job waits in the local queue and no claim is out: no
        #: outcome is coming that a flush should wait for (``_gather_outcomes``).
        self._drained = asyncio.Event()
        self._wake = asyncio.Event()
        self._maybe_ready = True
        #: How many times ``poke`` was called: a claim that comes back short after news
        #: arrived does not conclude that nothing is ready.
        self._pokes = 0
        #: Claims in flight, each with how many jobs it asked for and its number; the jobs
        #: asked for in all. The jobs of a claim that answered while an earlier one was still
        #: out wait by its number (``_release_held``: they join the local queue once the
        #: earlier ones have answered).
        self._claiming: dict[asyncio.Task[None], _ClaimOut] = {}
        self._asked = 0
        self._claims_sent = 0
        self._held: dict[int, list[_Running]] = {}
        #: How many claims may be out at once: JOBS_CLAIMS_IN_FLIGHT, but one for a worker of
        #: one slot, which runs its jobs one after another in claim order. Two claims out at
        #: once split the next jobs between them as the server runs them, and the one that
        #: answers first (held back while a claim sent before it is out) may bring the later
        #: ones: with several slots those start side by side anyway.
        self._claims_limit = config.claims_in_flight if self.slots > 1 else 1
        #: The job types claims ask for, and whether a poke may start a claim itself: from the
        #: claim loop's start until the stop event is set (or the loop ends).
        self._job_types: list[str] = []
        self._claiming_on = False
        #: After a failed claim: no claim before this monotonic time; the next back-off.
        self._claim_retry_at = 0.0
        self._claim_delay = RETRY_MIN
        #: A claim refused for a reason retrying will not fix; the claim loop raises it.
        self._claim_error: Exception | None = None
        #: time.monotonic() times at which known jobs come due (delayed enqueues, retries,
        #: next steps), earliest first; one timer is armed for the earliest.
        self._due: list[float] = []
        self._due_timer: asyncio.TimerHandle | None = None
        self._due_timer_at = 0.0
        #: pgrun.next_run_at's last answer since the listener (re)connected, and the time
        #: (time.monotonic()) of its timer: when that fires, the next one is asked for (_wake_at_next_run).
        self._asked_run_at: datetime | None = None
        self._asked_at: float | None = None
        #: The pgrun.next_run_at asks out (``_ask_next_run``): a reconnect or a timer may start
        #: one while an earlier one is still out; the shutdown stops them all.
        self._asks: set[asyncio.Task[None]] = set()
        self._stopping = False
        #: The definitions are registered: claimed jobs may start, the listener connects
        #: (``_register``).
        self._registered = asyncio.Event()
        #: Set when the first claim has answered (or failed): the reaper's first pass waits
        #: for it, so that a worker's start is not slowed by its own maintenance.
        self.claimed_once = asyncio.Event()
        self._flush_idle = asyncio.Event()
        self._flush_idle.set()
        #: Outcomes waiting for a workflow run's release conflict to clear, by run.
        self._parked: dict[UUID, list[_Outcome]] = {}
        self._parked_tasks: set[asyncio.Task[None]] = set()
        # Parked writes may each wait out a lock timeout: they never take more than these
        # connections from the pool, which claims and heartbeats share.
        self._parked_writes = asyncio.Semaphore(PARKED_WRITES)
        #: pgrun.metrics.WorkerMetrics with --metrics-port, else hooks that do nothing.
        self._metrics = metrics
        #: Where claims and heartbeats go: ``client``'s pool, or (async_claims) a pool of
        #: connections that commit without waiting for the WAL flush, opened by ``run``; while
        #: it runs, through a KeepingAsyncClient (a claim reuses the last claim's connection).
        self._claims = client
        #: Where outcomes are written (completions, failures, continuations): ``client``, or
        #: while ``run`` runs a KeepingAsyncClient on its pool, so that flushes, one after
        #: another, go to one backend instead of rotating over the pool's (jobs/s 1.03x,
        #: docs/performance.md, eighteenth pass); parked writes beside a flush take another.
        self._writes = client
        #: The schema has no continue_jobs (migrated before it): continuations go by continue_job.
        self._continue_one_by_one = False
        metrics.watch_buffer(self._unwritten)
        metrics.watch_waiting(lambda: len(self._queue) + self._held_jobs)

    # -- public --------------------------------------------------------------------------

    def poke(self) -> None:
        """Jobs may be ready now (a NOTIFY, a reaped lease, a retry coming due): claim."""
        self._maybe_ready = True
        self._pokes += 1
        # The claim starts here, not when the woken claim loop gets to it: an idle worker's
        # NOTIFY -> claim is one pass of the event loop shorter (its task is scheduled first).
        if self._claiming_on and not self._stopping and self._claim_error is None:
            self._claim_if_room()
        self._wake.set()

    @property
    def running_count(self) -> int:
        return len(self._handlers)

    def _unwritten(self) -> int:
        """Outcomes not written yet: buffered, or parked with their workflow run."""
        return len(self._buffer) + sum(len(parked) for parked in self._parked.values())

    async def run(self, stop: asyncio.Event) -> None:
        """Run until ``stop`` is set, then shut down gracefully (see the module docstring)."""
        claims_pool = (
            async_commit_pool(self.client.pool, self.config.claims_in_flight)
            if self.config.async_claims
            else None
        )
        if claims_pool is not None:
            # opened first: its first connection is made while the definitions register
            await claims_pool.open(wait=False)
        claims_on = claims_pool if claims_pool is not None else getattr(self.client, "pool", None)
        if isinstance(claims_on, AsyncConnectionPool):
            # claims and heartbeats keep their connections between calls (KeepingAsyncClient)
            self._claims = KeepingAsyncClient(claims_on)
        if isinstance(getattr(self.client, "pool", None), AsyncConnectionPool):
            self._writes = KeepingAsyncClient(self.client.pool)
        helpers = [
            # the first claim is sent while the definitions register; no handler starts before
            asyncio.create_task(self._register(stop), name="pgrun-register"),
            asyncio.create_task(self._listen(), name="pgrun-listen"),
            asyncio.create_task(self._heartbeat_loop(), name="pgrun-heartbeat"),
            asyncio.create_task(self._flush_loop(), name="pgrun-flush"),
        ]
        stop_waiter = asyncio.create_task(stop.wait())
        stop_waiter.add_done_callback(self._stop_claiming)
        self._job_types = sorted(self.app.job_types)
        self._claiming_on = True
        try:
            await self._claim_loop(stop)
        finally:
            self._claiming_on = False
            stop_waiter.cancel()
            await self._shutdown()
            helpers += self._parked_tasks
            helpers += self._asks
            for task in helpers:
                task.cancel()
            await asyncio.gather(*helpers, return_exceptions=True)
            if isinstance(self._claims, KeepingAsyncClient):
                await self._claims.release()
            if isinstance(self._writes, KeepingAsyncClient):
                await self._writes.release()
            self._writes = self.client
            self._claims = self.client
            if claims_pool is not None:
                await claims_pool.close()

    # -- start-up ------------------------------------------------------------------------

    async def _register(self, stop: asyncio.Event) -> None:
        """Register the definitions, then let claimed jobs start. A refusal (not the server's
        weather, which is retried) ends the worker as a refused claim does: the claim loop
        raises it, and the jobs claimed meanwhile are handed back unstarted."""
        try:
            await self._register_definitions(stop)
        except Exception as exc:
            self._claim_error = exc
            self._wake.set()
            return
        self._registered.set()
        self._dispatch()

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
                        max_result_bytes=spec.max_result_bytes,
                    )
                return
            except (psycopg.OperationalError, TimeoutError) as exc:
                log.warning("cannot register job definitions yet (%s); retrying in %.1fs", exc, delay)
                await _sleep_or_stop(stop, delay)
                delay = min(delay * 2, RETRY_MAX)

    # -- claiming ------------------------------------------------------------------------

    async def _claim_loop(self, stop: asyncio.Event) -> None:
        while True:
            if self._claim_error is not None:
                raise self._claim_error
            if stop.is_set():
                return
            if self._claim_if_room():
                continue
            # Nothing to do until a NOTIFY, a freed slot, a claim's answer or the poll interval
            # (or, after a failed claim, the end of its back-off).
            self._wake.clear()
            timeout = self.config.poll_interval
            if self._claim_retry_at:
                timeout = max(0.0, min(timeout, self._claim_retry_at - time.monotonic()))
            try:
                async with asyncio.timeout(timeout):
                    await self._wake.wait()
            except TimeoutError:
                self._maybe_ready = True

    def _stop_claiming(self, _: object) -> None:
        """The stop event is set (or ``run`` is ending): no poke starts a claim from now on,
        and the claim loop wakes to return."""
        self._claiming_on = False
        self._wake.set()

    def _claim_if_room(self) -> bool:
        """Start a claim if one is due now (``_claim_size``); whether one started."""
        wanted = self._claim_size()
        if wanted:
            self._start_claim(wanted, self._job_types)
        return bool(wanted)

    def _claim_size(self) -> int:
        """How many jobs to claim now (0: none). At most ``claims_in_flight`` claims at a time;
        a claim starts when the jobs the local queue holds and the claims in flight will bring
        are down to half the bound (or fewer than the free slots), jobs may be ready, and no
        failed claim's back-off is running. It asks for the room left: the slots plus the
        bound, minus the running, waiting and asked-for jobs, at most the claim batch size."""
        if len(self._claiming) >= self._claims_limit or not self._maybe_ready:
            return 0
        if self._claim_retry_at:
            if time.monotonic() < self._claim_retry_at:
                return 0
            self._claim_retry_at = 0.0
        bound = self._queue_bound()
        coming = len(self._queue) + self._asked + self._held_jobs
        room = self.slots + bound - len(self._handlers) - coming
        refill = coming <= bound // 2 or coming < self.slots - len(self._handlers)
        return min(room, self.config.claim_batch_size) if room > 0 and refill else 0

    def _start_claim(self, wanted: int, job_types: list[str]) -> None:
        busy = bool(self._handlers or self._queue)
        task = asyncio.create_task(self._claim(wanted, job_types, self._pokes, busy))
        self._claiming[task] = _ClaimOut(wanted, self._claims_sent)
        self._claims_sent += 1
        self._asked += wanted

    async def _claim(self, wanted: int, job_types: list[str], pokes: int, busy: bool) -> None:
        """One claim_jobs call: its jobs join the local queue in claim order and start while
        slots are free; if an earlier claim is still out, they wait for its answer
        (``_release_held``), so that claims answering out of order start their jobs in claim
        order. A failed call sets the back-off the claim loop waits out. ``busy``: handlers
        ran or jobs waited when it was sent."""
        started = time.perf_counter()
        task = cast("asyncio.Task[None]", asyncio.current_task())
        number = self._claiming[task].number
        jobs: list[ClaimedJob] | None = None
        try:
            jobs = await self._claims.claim_jobs(
                self.config.worker_id,
                lease_seconds=self.config.lease_ttl_seconds,
                max_jobs=wanted,
                queues=self.queues,
                job_types=job_types,
                max_held=self._max_held(),
            )
        except (psycopg.OperationalError, TimeoutError) as exc:
            log.warning("claim failed (%s); retrying in %.1fs", exc, self._claim_delay)
            self._claim_retry_at = time.monotonic() + self._claim_delay
            self._claim_delay = min(self._claim_delay * 2, RETRY_MAX)
        except Exception as exc:  # not the server's weather: the claim loop raises it
            if isinstance(exc, psycopg.errors.UndefinedFunction):
                log.error("claim_jobs refused this worker's call: %s", schema_mismatch(exc, "worker"))
            self._claim_error = exc
        finally:
            self._asked -= wanted
            del self._claiming[task]
            self._wake.set()
            self.claimed_once.set()
        if jobs is not None:
            self._claim_delay = RETRY_MIN
            self._metrics.claimed(jobs, time.perf_counter() - started)
            # A short claim means the ready set is drained (for us), unless news came meanwhile.
            if len(jobs) < wanted and self._pokes == pokes:
                self._maybe_ready = False
            if jobs:
                self._claimed_while_busy(busy, len(jobs) == wanted)
                held = [_Running(job) for job in jobs]
                for running in held:  # heartbeated from now on, queued or held
                    self._leases[running.job.job_id] = running
                self._held[number] = held
        self._release_held()
        self._check_drained()

    @property
    def _held_jobs(self) -> int:
        """How many jobs the held claims brought (counted against the local queue's room)."""
        return sum(len(held) for held in self._held.values())

    def _release_held(self) -> None:
        """Queue the held claims' jobs that no claim still out precedes, in the order the
        claims were sent, and start what the slots allow. A job the heartbeat took out
        while it was held (a cancel, a lost lease: ``waiting`` cleared) is left out."""
        if not self._held:
            return
        first_out = min((out.number for out in self._claiming.values()), default=None)
        for number in sorted(self._held):
            if first_out is not None and number > first_out:
                break
            waiting = [running for running in self._held.pop(number) if running.waiting]
            if waiting:
                self._enqueue_local(waiting)
        self._dispatch()

    def _claimed_while_busy(self, busy: bool, full: bool) -> None:
        """Start-up. A full claim sent while the worker had work, that comes back to an
        empty local queue and an idle slot, was too small: the handlers ran dry waiting for
        it. The rate the bound is taken from is then raised at once, rather than after the
        measured rate catches up (~0.35 s at a worker's start or after an idle spell, claims
        of 10 jobs growing to 500 at 20,000 jobs a second): to what the slots get through at
        the handlers' mean run time (Little's law: slots / mean time), at least twice the
        bound, at most the ceiling's rate (doubling alone took six round trips to reach
        claims of 500 at a no-op worker's start). The rate's next samples bring it back down
        if the handlers are slower."""
        if busy and full and not self._queue and len(self._handlers) < self.slots:
            mean = self._mean_handler_time()
            capacity = self.slots / mean if mean > 0 else 0.0
            doubled = 2 * self._queue_bound() / PREFETCH_SECONDS
            ceiling = self._prefetch / PREFETCH_SECONDS
            self._rate = max(self._rate, min(ceiling, max(doubled, capacity)))

    def _enqueue_local(self, claimed: list[_Running]) -> None:
        """Put claimed jobs in the local queue, which stays in claim order (priority, run_at,
        id): a claim that answers before an earlier one, or brings a job of better priority
        than those waiting, is merged in, not appended. Their leases are held already
        (``_claim`` holds them when the claim answers)."""
        if self._queue and _claim_order(claimed[0]) < _claim_order(self._queue[-1]):
            self._queue = deque(heapq.merge(self._queue, claimed, key=_claim_order))
        else:
            self._queue.extend(claimed)

    def _queue_bound(self) -> int:
        """How many claimed, not started jobs the worker holds now: ``JOBS_PREFETCH`` when it
        is set; by default what the handlers finish in ``PREFETCH_SECONDS`` at the rate
        measured lately, at most ``config.prefetch_limit``, and at least one per slot unless
        the handlers' mean run time is known to be ``PREFETCH_SECONDS`` or more. Fast
        handlers get claims large enough to amortise the round trip; slow ones get what they
        finish in that window (none, for a few slots of one-second handlers): a claim's round
        trip is a small part of such a run, and a job held ahead would wait most of a run
        while another worker might have started it at once. Until a handler has finished, and
        for faster ones, one slot's worth each."""
        if self.config.prefetch is not None:
            return self._prefetch
        now = time.monotonic()
        elapsed = now - self._rate_at
        if elapsed >= RATE_SAMPLE_SECONDS:
            rate = (self._finished - self._rate_finished) / elapsed
            self._handler_time = self._mean_handler_time()
            self._rate_handler_seconds = self._handler_seconds
            # Smoothed over about RATE_SECONDS: a sample that long (an idle spell) replaces it.
            self._rate += min(1.0, elapsed / RATE_SECONDS) * (rate - self._rate)
            self._rate_at, self._rate_finished = now, self._finished
        floor = self.slots if self._handler_time < PREFETCH_SECONDS else 0
        return min(self._prefetch, max(floor, int(self._rate * PREFETCH_SECONDS)))

    def _max_held(self) -> int:
        """The most running jobs of any one capped type this worker holds, the ones waiting
        in its local queue counted (claim_jobs' ``max_held``): its slots, or what its
        handlers finish in ``PREFETCH_SECONDS`` when that is more and the bound allows it.
        Jobs of a capped type held beyond what the slots start at once take a cap's room
        that another worker could run them in; fast handlers start them within the window,
        slow ones would leave them waiting a whole run."""
        return max(self.slots, min(self._queue_bound(), int(self._rate * PREFETCH_SECONDS)))

    def _mean_handler_time(self) -> float:
        """The handlers' mean run time since the rate's last sample, or over the last sample
        that had any (a sum per job, not a mean per job: it runs on every job's path)."""
        finished = self._finished - self._rate_finished
        if finished <= 0:
            return self._handler_time
        return (self._handler_seconds - self._rate_handler_seconds) / finished

    def _dispatch(self) -> None:
        """Start queued jobs while slots are free (none before the definitions are registered,
        none once the worker is stopping: the queued ones are handed back). A job whose lease
        was lost or that was asked to cancel while it waited is not started (the heartbeat
        took it out of the queue)."""
        if not self._registered.is_set():
            return
        while self._queue and len(self._handlers) < self.slots and not self._stopping:
            running = self._queue.popleft()
            running.waiting = False
            task = asyncio.create_task(self._execute(running))
            self._handlers[task] = running
            task.add_done_callback(self._handler_done)

    def _handler_done(self, task: asyncio.Task[None]) -> None:
        del self._handlers[task]
        self._finished += 1
        self._dispatch()
        self._check_drained()
        self._wake.set()  # room in the local queue; claims again if the last claim was full

    # -- running a handler ---------------------------------------------------------------

    async def _execute(self, running: _Running) -> None:
        job = running.job
        spec = self.app.job_types.get(job.job_type)
        timeout = job.timeout_seconds
        outcome: _Outcome
        undecodable = _undecodable_input(job)
        if undecodable is not None:
            # The handler never sees it; retrying would hand it the same undecodable value.
            log.error("job %s (%s): not run, %s", job.job_id, job.job_type, undecodable)
            self._buffer.append(self._failure(running, "payload_invalid", undecodable, retryable=False))
            self._buffered.set()
            return
        started = time.perf_counter()
        try:
            if spec is None:  # claim_jobs only hands out registered types; be safe anyway
                raise Fail(f"no handler for job type {job.job_type!r} in this worker", retryable=True)
            if spec.is_async:
                context = JobContext(job, self, running.cancelled)
                call = cast(AsyncHandler, spec.handler)(context)
            else:
                loop = asyncio.get_running_loop()
                sync_context = SyncJobContext(job, self, running.cancelled, loop)
                call = self._threads.run(
                    cast(SyncHandler, spec.handler), sync_context, f"pgrun-job-{job.job_id}"
                )
            # In this task (no task of its own per job, as asyncio.wait_for would make); no
            # timer at all for a job without a timeout
            if timeout is None:
                result = await call
            else:
                async with asyncio.timeout(timeout):
                    result = await call
            if isinstance(result, Continue):
                refusal, state_text = _continue_problem(result)
                if refusal is None:  # the state's JSON text, dumped by the check, goes as it is
                    outcome = _Outcome("continue", running, result=state_text, follow_up=result)
                else:
                    outcome = self._failure(running, *refusal, retryable=False)
            else:
                problem, text = _json_checked(result)
                if problem is None:
                    outcome = _Outcome("complete", running, result=text)
                else:
                    message = f"the handler's result cannot be stored: {problem}"
                    outcome = self._failure(running, "result_invalid", message, retryable=False)
        except TimeoutError:
            running.cancelled.set()
            message = f"the handler ran longer than its timeout of {timeout} s"
            outcome = self._failure(running, "timeout", message, retryable=True)
        except Retry as retry:
            outcome = self._failure(
                running, "retry", str(retry.message), retryable=True, delay=retry.delay, error=retry
            )
        except Fail as fail:
            outcome = self._failure(
                running, str(fail.code), str(fail.message), retryable=fail.retryable, error=fail
            )
        except LeaseLostError:
            self._metrics.handled(job, time.perf_counter() - started)
            self._lose(running)
            self._forget(running, "a write under its lease was refused (job.lease_lost)")
            return
        except asyncio.CancelledError:
            # Abandoned at shutdown: write nothing, the lease expires and the reaper retries.
            self._leases.pop(job.job_id, None)
            raise
        except Exception as exc:
            log.error(
                "job %s (%s) attempt %d: the handler raised",
                job.job_id,
                job.job_type,
                job.attempt,
                exc_info=exc,
            )
            message = _crash_message(exc, full=self.config.store_tracebacks)
            outcome = self._failure(running, "crashed", message, retryable=True, error=exc)
        elapsed = time.perf_counter() - started
        self._metrics.handled(job, elapsed)
        self._handler_seconds += elapsed
        if running.lost:
            self._forget(running, "its lease was lost while the handler ran; dropping its outcome")
            return
        self._buffer.append(outcome)
        self._buffered.set()

    def _failure(
        self,
        running: _Running,
        code: str,
        message: str,
        *,
        retryable: bool,
        delay: Seconds | None = None,
        error: BaseException | None = None,
    ) -> _Outcome:
        """A failure outcome, its code and message made storable, the message redacted."""
        job = running.job
        text = _storable(self._redacted(message, error))
        failure = Failure(job.job_id, job.lease_token, _storable(code), text, retryable, _interval(delay))
        return _Outcome("fail", running, failure=failure)

    def _redacted(self, message: str, error: BaseException | None) -> str:
        """``message`` through the app's redact hook; if the hook fails, the error's type only."""
        hook = self.app.redactor
        if hook is None:
            return message
        try:
            redacted = hook(message, error)
            if not isinstance(redacted, str):
                raise TypeError(f"the redact hook returned {type(redacted).__name__}, not str")
        except Exception:
            log.exception("the redact hook failed; storing only the error's type")
            return (
                _exception_type(error) if error is not None else "(message withheld: the redact hook failed)"
            )
        return redacted

    def _lose(self, running: _Running) -> None:
        """Mark the lease lost (counted once, however many writes learn of it)."""
        if not running.lost:
            running.lost = True
            self._metrics.outcome("lease_lost", running.job)

    def _forget(self, running: _Running, why: str) -> None:
        self._leases.pop(running.job.job_id, None)
        log.warning("job %s (%s): %s", running.job.job_id, running.job.job_type, why)

    # the context's writes (JobContext.progress / log) -------------------------------------

    async def progress(self, job: ClaimedJob, data: JsonObject) -> bool:
        return await self.client.report_progress(job.job_id, job.lease_token, data)

    async def log(self, job: ClaimedJob, message: str, level: str, fields: JsonObject | None) -> None:
        """Buffer the line (``log_now``), then wait while LOG_LINES_MAX lines wait for the writes."""
        self.log_now(job, message, level, fields)
        while len(self._log_lines) >= LOG_LINES_MAX:  # as far ahead of the writes as lines go
            self._lines_written.clear()
            await self._lines_written.wait()

    def log_now(self, job: ClaimedJob, message: str, level: str, fields: JsonObject | None) -> None:
        """Buffer the line: the next flush writes it (append_job_logs), before its outcomes, so
        a job's lines are stored before its outcome is. A call per line, each waiting for its
        durable commit, left a handler that logs a line a job a tenth of the worker's
        throughput. A line is never refused to the handler: free text is kept (a NUL or lone
        surrogate becomes U+FFFD, the SQL clips an over-long line); one the server does not
        take (a level or fields it refuses, a lease lost meanwhile) is dropped with a warning
        in the worker's log (``_write_log_lines``). On the loop's thread (a sync handler's
        context hands it over with ``call_soon_threadsafe``)."""
        problem, text = _json_checked(fields)
        if problem is not None:
            log.warning("job %s (%s): log line dropped, its fields: %s", job.job_id, job.job_type, problem)
            self._metrics.log_lines({"dropped": 1})
            return
        self._log_lines.append(LogLine(job.job_id, job.lease_token, _as_text(message), level, text))
        self._buffered.set()

    def log_room(self) -> bool:
        """Whether a line may be buffered without waiting for the writes (read from any thread:
        a sync handler that finds none waits through ``log``)."""
        return len(self._log_lines) < LOG_LINES_MAX

    # -- writing outcomes ----------------------------------------------------------------

    async def _flush_loop(self) -> None:
        while True:
            await self._buffered.wait()
            if len(self._buffer) < FLUSH_MAX and not self._stopping:
                await self._gather_outcomes()
            await self._flush_once()

    async def _gather_outcomes(self) -> None:
        """Wait ``FLUSH_DELAY`` for more outcomes to write with the buffered ones, or less
        once none can come (``_check_drained``: no handler running, no job queued, no claim
        out). A batch costs a round trip and a durable commit whatever its size, so busy
        handlers share one; but the last outcomes of a burst gain nothing from the wait, and
        while they are unwritten their jobs count as running: against their type's cap
        (the next claim's room), and for the workflow steps they release."""
        self._drained.clear()
        self._check_drained()
        if self._drained.is_set():
            return
        with suppress(TimeoutError):
            async with asyncio.timeout(FLUSH_DELAY):
                await self._drained.wait()

    def _check_drained(self) -> None:
        """Set ``_drained`` when nothing this worker holds can still end in an outcome."""
        if not self._handlers and not self._queue and not self._claiming:
            self._drained.set()

    async def _flush_once(self) -> None:
        """Write everything buffered; what the server did not take waits as ``_split`` says."""
        batch, self._buffer = self._buffer, []
        lines, self._log_lines = self._log_lines, []
        self._buffered.clear()
        # The outcomes of a run whose release is blocked wait with that run's parked ones.
        batch = [o for o in batch if not self._park_if_waiting(o)]
        if not batch and not lines:
            return
        self._flush_idle.clear()
        started = time.perf_counter()
        try:
            # A job's log lines before its outcome (written, or back in the buffer to be)
            lines_written = await self._write_log_lines(lines)
            pending = await self._write(batch) if lines_written else _Pending(retry=batch)
        except Exception:
            # A bug of ours, not a refusal: never let it stop the flusher; drop the batch
            # (its leases expire and the reaper decides).
            log.exception("writing %d outcome(s) failed; dropping them", len(batch))
            for outcome in batch:
                self._leases.pop(outcome.running.job.job_id, None)
            pending = _Pending()
        finally:
            self._flush_idle.set()
            self._lines_written.set()
            self._metrics.flushed(time.perf_counter() - started)
        self._park(pending.conflicted)
        if pending.retry:
            self._buffer[:0] = pending.retry
            self._buffered.set()
        # Written outcomes end claims, which frees room under a job type's cap
        # (max_concurrency counts running jobs, these too until now): news, like a NOTIFY.
        # A claim that comes back short because of the cap, sent before or while this was
        # written, does not then leave the worker asleep until its poll.
        self.poke()

    async def _write_log_lines(self, lines: list[LogLine]) -> bool:
        """Write the buffered log lines (append_job_logs, LOG_LINES_MAX a call); whether the
        outcomes may follow. A failure the server's weather explains puts the lines back in
        front of the buffer (the outcomes wait with them, ``_flush_once``); any other drops
        them with the reason, as the server's per-line refusals are (the outcomes follow)."""
        for start in range(0, len(lines), LOG_LINES_MAX):
            chunk = lines[start : start + LOG_LINES_MAX]
            try:
                # Not waiting for the WAL flush: the outcomes written next are durable commits,
                # and the WAL is flushed in order (a server crash before them loses the attempt
                # as well; lines of a job still running are flushed by the next one).
                # Only the lines not logged come back: the others are counted, not read.
                answers = await self._writes.append_job_logs(chunk, durable=False, logged_rows=False)
            except Exception as exc:
                if _transient(exc):
                    log.warning("writing %d log line(s) failed (%s); retrying", len(lines) - start, exc)
                    self._log_lines[:0] = lines[start:]
                    await asyncio.sleep(RETRY_MIN)
                    return False
                why = (
                    schema_mismatch(exc, "worker")
                    if isinstance(exc, psycopg.errors.UndefinedFunction)
                    else _describe(exc)
                )
                log.error("writing %d log line(s) failed; dropping them: %s", len(chunk), why)
                self._metrics.log_lines({"dropped": len(chunk)})
                continue
            outcomes = Counter(a.outcome for a in answers)
            outcomes["logged"] = len(chunk) - len(answers)
            self._metrics.log_lines(outcomes)
            if outcomes["invalid"]:
                log.warning(
                    "%d log line(s) dropped: a level or fields the server refuses", outcomes["invalid"]
                )
            if outcomes["lease_lost"]:
                log.debug("%d log line(s) of jobs no longer held dropped", outcomes["lease_lost"])
        return True

    async def _write(self, batch: list[_Outcome]) -> _Pending:
        """Write a batch: completions, continuations, then failures (with the failures that
        replace refused outcomes). Returns what is left to do."""
        pending = _Pending()
        completions = [o for o in batch if o.kind == "complete"]
        failures = [o for o in batch if o.kind == "fail"]
        continuations = [o for o in batch if o.kind == "continue"]
        if completions:
            await self._complete(completions, pending)
        if continuations:
            await self._continue(continuations, pending)
        failures += pending.take_follow_ups()
        while failures:  # ends: a rewritten failure that is refused again is dropped
            await self._fail(failures, pending)
            failures = pending.take_follow_ups()
        if pending.retry:
            await asyncio.sleep(RETRY_MIN)
        return pending

    async def _complete(self, outcomes: list[_Outcome], pending: _Pending) -> None:
        triples = [(o.running.job.job_id, o.running.job.lease_token, o.result) for o in outcomes]
        try:
            # Only the jobs that did not succeed come back (complete_jobs answers each job)
            rows = await self._writes.complete_jobs(triples, succeeded_rows=False)
        except Exception as exc:
            await self._split(self._complete, outcomes, exc, pending, self._completion_refused)
            return
        self._settle(rows, outcomes, pending, unlisted="succeeded")

    async def _fail(self, outcomes: list[_Outcome], pending: _Pending) -> None:
        try:
            rows = await self._writes.fail_jobs([o.failure for o in outcomes if o.failure])
        except Exception as exc:
            await self._split(self._fail, outcomes, exc, pending, self._failure_refused)
            return
        self._settle(rows, outcomes, pending)

    async def _split(
        self,
        write: Callable[[list[_Outcome], _Pending], Any],
        outcomes: list[_Outcome],
        exc: Exception,
        pending: _Pending,
        refused: Callable[[_Outcome, Exception, _Pending], None],
    ) -> None:
        """A batch write raised ``exc``: retry it as it is, write it run by run, or halve it."""
        if _timed_out(exc):
            # One blocked row (a lock held elsewhere) times out the whole statement: halve the
            # batch so the others are written now; an outcome that times out alone is tried
            # again, MAX_TIMEOUTS times at most, then dropped (its lease expires, the reaper
            # decides), so a write that can never finish in time does not loop for ever.
            if len(outcomes) > 1:
                middle = len(outcomes) // 2
                await write(outcomes[:middle], pending)
                await write(outcomes[middle:], pending)
                return
            outcome = outcomes[0]
            outcome.timeouts += 1
            if outcome.timeouts >= MAX_TIMEOUTS:
                job = outcome.running.job
                log.error(
                    "job %s (%s): its outcome timed out %d times (%s); dropping it, the lease expires",
                    job.job_id,
                    job.job_type,
                    outcome.timeouts,
                    exc,
                )
                self._leases.pop(job.job_id, None)
                return
        if _transient(exc):
            log.warning("writing %d outcome(s) failed (%s); will retry", len(outcomes), exc)
            pending.retry += outcomes
            return
        if _release_conflict(exc):
            held = [o for o in outcomes if o.running.job.workflow_run_id is not None]
            if not held:  # not expected: only a workflow job's release takes a run's lock
                pending.retry += outcomes
                return
            plain = [o for o in outcomes if o.running.job.workflow_run_id is None]
            log.info(
                "workflow.release_conflict: %d outcome(s) of workflow jobs wait with their run; "
                "writing the %d other(s) now",
                len(held),
                len(plain),
            )
            pending.conflicted += held
            if plain:
                await write(plain, pending)
            return
        if len(outcomes) == 1:
            refused(outcomes[0], exc, pending)
            return
        log.warning(
            "the server refused a batch of %d outcome(s) (%s); splitting it to write the others",
            len(outcomes),
            _describe(exc),
        )
        middle = len(outcomes) // 2
        await write(outcomes[:middle], pending)
        await write(outcomes[middle:], pending)

    def _completion_refused(self, outcome: _Outcome, exc: Exception, pending: _Pending) -> None:
        if not _content_error(exc):
            self._drop(outcome, exc)
            return
        message = f"PostgreSQL refused the result ({_describe(exc)})"
        pending.follow_ups.append(self._failure(outcome.running, "result_invalid", message, retryable=False))

    def _failure_refused(self, outcome: _Outcome, exc: Exception, pending: _Pending) -> None:
        failure = outcome.failure
        if outcome.rewritten or failure is None or not _content_error(exc):
            self._drop(outcome, exc)
            return
        job = outcome.running.job
        # the original code and message were storable and redacted already
        was = f"{failure.error_code}: {failure.message}"
        message = _storable(f"fail_jobs refused this failure ({_describe(exc)}); it was {was}")
        replacement = Failure(
            job.job_id, job.lease_token, "failure_invalid", message, failure.retryable, None
        )
        pending.follow_ups.append(_Outcome("fail", outcome.running, failure=replacement, rewritten=True))

    def _drop(self, outcome: _Outcome, exc: Exception) -> None:
        job = outcome.running.job
        self._leases.pop(job.job_id, None)
        log.error(
            "job %s (%s): the server refused its outcome (%s); dropping it, its lease will expire",
            job.job_id,
            job.job_type,
            _describe(exc),
            exc_info=exc,
        )

    async def _continue(self, outcomes: list[_Outcome], pending: _Pending) -> None:
        """Write a flush's continuations in one call (continue_jobs), one durable commit for
        them all: a call each held a worker whose handlers continue to a commit a job."""
        continuations = []
        for outcome in outcomes:
            job, follow_up = outcome.running.job, outcome.follow_up
            assert follow_up is not None
            continuations.append(
                Continuation(
                    job.job_id,
                    job.lease_token,
                    follow_up.step,
                    outcome.result,  # the state's JSON text (None: keep the job's state)
                    _interval(follow_up.delay),
                    follow_up.max_attempts,
                    _interval(follow_up.retry_delay),
                )
            )
        try:
            if self._continue_one_by_one:
                rows = [await self._continue_job(c) for c in continuations]
            else:
                rows = await self._writes.continue_jobs(continuations)
        except psycopg.errors.UndefinedFunction as exc:
            if self._continue_one_by_one:
                raise
            # A schema migrated before continue_jobs: a call each, as workers before it wrote them
            log.warning("writing continuations one by one: %s", schema_mismatch(exc, "worker"))
            self._continue_one_by_one = True
            await self._continue(outcomes, pending)
            return
        except Exception as exc:
            await self._split(self._continue, outcomes, exc, pending, self._continuation_refused)
            return
        self._settle(rows, outcomes, pending, call="continue_jobs")

    async def _continue_job(self, c: Continuation) -> BatchOutcome:
        """One continuation by continue_job, answered as continue_jobs answers it (the worker's
        job ids are UUIDs, from its claims)."""
        try:
            answer = await self._writes.continue_job(
                c.job_id,
                c.lease_token,
                c.next_step,
                state=c.state,
                delay=c.delay,
                max_attempts=c.max_attempts,
                retry_delay=c.retry_delay,
            )
        except LeaseLostError as exc:
            return BatchOutcome(cast(UUID, c.job_id), "lease_lost", None, exc.detail)
        return BatchOutcome(cast(UUID, c.job_id), answer.outcome, answer.run_at, None)

    def _continuation_refused(self, outcome: _Outcome, exc: Exception, pending: _Pending) -> None:
        """A continuation the server refused on its own (a step, delay or max_attempts it does
        not take; a value PostgreSQL cannot store): the job fails with the reason, not retried."""
        code = _continue_refusal_code(exc)
        if code is None:
            self._drop(outcome, exc)
            return
        assert outcome.follow_up is not None
        message = f"continue_jobs refused the step {outcome.follow_up.step!r} ({_describe(exc)})"
        pending.follow_ups.append(self._failure(outcome.running, code, message, retryable=False))

    def _settle(
        self,
        rows: list[BatchOutcome],
        outcomes: list[_Outcome],
        pending: _Pending,
        unlisted: str | None = None,
        call: str = "complete_jobs",
    ) -> None:
        """What the server answered for ``outcomes`` (``call``'s rows); ``unlisted``, when
        given, is the outcome of every job ``rows`` leave out (a write that returns only the
        exceptions)."""
        if unlisted is not None:
            listed = {row.job_id for row in rows}
            for sent_outcome in outcomes:
                job = sent_outcome.running.job
                if job.job_id not in listed:
                    self._leases.pop(job.job_id, None)
                    self._metrics.outcome(unlisted, job)
            if not rows:
                return
        sent = {o.running.job.job_id: o for o in outcomes}
        for row in rows:
            outcome = sent.get(row.job_id)
            refused = _REFUSED_RESULTS.get(row.outcome)
            if refused is not None and outcome is not None:
                # nothing was written for this job and its lease still holds: fail it
                why = f": {row.lost_reason}" if row.lost_reason else ""
                message = f"{refused} ({call}: {row.outcome}{why})"
                failure = self._failure(outcome.running, row.outcome, message, retryable=False)
                pending.follow_ups.append(failure)
                continue
            running = self._leases.pop(row.job_id, None)
            if row.outcome == "lease_lost":
                if outcome is not None:
                    self._lose(outcome.running)
                job_type = running.job.job_type if running else "?"
                log.warning(
                    "job %s (%s): outcome not written, lease lost (%s)", row.job_id, job_type, row.lost_reason
                )
                continue
            if outcome is not None:  # what the SQL answered: succeeded, retry_scheduled, dead, ...
                self._metrics.outcome(row.outcome, outcome.running.job)
            if row.outcome in ("retry_scheduled", "continued"):
                self._wake_at(row.run_at)

    # -- outcomes waiting for a workflow run ------------------------------------------------

    def _park_if_waiting(self, outcome: _Outcome) -> bool:
        """Park ``outcome`` with its run's when that run's release is blocked."""
        run_id = outcome.running.job.workflow_run_id
        if run_id is None or run_id not in self._parked:
            return False
        self._parked[run_id].append(outcome)
        return True

    def _park(self, outcomes: list[_Outcome]) -> None:
        for outcome in outcomes:
            if self._park_if_waiting(outcome):
                continue
            run_id = outcome.running.job.workflow_run_id
            assert run_id is not None  # only a workflow job's outcome conflicts
            self._parked[run_id] = [outcome]
            task = asyncio.create_task(self._retry_run(run_id), name=f"pgrun-run-{run_id}")
            self._parked_tasks.add(task)
            task.add_done_callback(self._parked_tasks.discard)

    async def _retry_run(self, run_id: UUID) -> None:
        """Write a run's parked outcomes again, with back-off, until none is left."""
        delay = RETRY_MIN
        while True:
            await asyncio.sleep(delay)
            async with self._parked_writes:
                batch, self._parked[run_id] = self._parked[run_id], []
                try:
                    pending = await self._write(batch)
                except Exception:
                    log.exception(
                        "writing %d outcome(s) of workflow run %s failed; dropping them", len(batch), run_id
                    )
                    for outcome in batch:
                        self._leases.pop(outcome.running.job.job_id, None)
                    pending = _Pending()
            self._parked[run_id] += pending.conflicted + pending.retry
            if not self._parked[run_id]:
                del self._parked[run_id]
                return
            delay = min(delay * 2, RETRY_MAX)

    def _wake_at(self, run_at: datetime | None) -> float | None:
        """Claim when a known job comes due: a delayed enqueue (its NOTIFY carries the time), a
        retry or a next step. Times are the database's; the wait runs on this host's clock.
        Returns the wait's end (``time.monotonic()``; None: no time, due already and claimed
        now, or too many waits already)."""
        if run_at is None:
            return None
        delay = (run_at - datetime.now(UTC)).total_seconds()
        if delay <= 0:
            self.poke()
            return None
        when = None
        if len(self._due) < MAX_DUE_TIMES:  # beyond it, the poll finds the rest
            when = time.monotonic() + delay
            heapq.heappush(self._due, when)
        self._arm_due_timer(asyncio.get_running_loop())
        return when

    def _arm_due_timer(self, loop: asyncio.AbstractEventLoop) -> None:
        """One timer, for the earliest due time. The times are time.monotonic()'s, not the
        loop's: uvloop's loop clock counts whole milliseconds."""
        if not self._due:
            return
        first = self._due[0]
        if self._due_timer is not None:
            if self._due_timer_at <= first:
                return
            self._due_timer.cancel()
        slack = UVLOOP_TIMER_SLACK if loop_kind(loop) == "uvloop" else 0.0
        self._due_timer_at = first
        self._due_timer = loop.call_later(max(0.0, first - time.monotonic()) + slack, self._came_due, loop)

    def _came_due(self, loop: asyncio.AbstractEventLoop) -> None:
        self._due_timer = None
        now = time.monotonic()
        came = False
        while self._due and self._due[0] <= now:
            heapq.heappop(self._due)
            came = True
        if came:  # a timer that fired early claims nothing yet: it is armed again below
            self.poke()
        self._arm_due_timer(loop)
        if self._asked_at is not None and self._asked_at <= now:
            self._asked_at = None
            self._ask_next_run()

    # -- leases --------------------------------------------------------------------------

    async def _heartbeat_loop(self) -> None:
        interval = self.config.heartbeat_interval
        while True:
            await asyncio.sleep(interval)
            held = [r for r in self._leases.values() if not r.lost]
            if not held:
                continue
            try:
                rows = await self._claims.heartbeat_jobs(
                    self.config.worker_id,
                    [(r.job.job_id, r.job.lease_token) for r in held],
                    lease_seconds=self.config.lease_ttl_seconds,
                )
            except (psycopg.OperationalError, TimeoutError) as exc:
                log.warning("heartbeat failed (%s); retrying in 1s", exc)
                interval = min(1.0, self.config.heartbeat_interval)
                continue
            interval = self.config.heartbeat_interval
            cancelled_waiting: list[_Running] = []
            for row in rows:
                running = self._leases.get(row.job_id)
                if running is None:
                    continue
                if running.waiting and (not row.renewed or row.cancel_requested):
                    # Not started: take it out of the local queue; never run it.
                    with suppress(ValueError):
                        self._queue.remove(running)
                    running.waiting = False
                    if not row.renewed:
                        self._lose(running)
                        self._forget(running, "lease lost before its handler started; not running it")
                    else:
                        log.info(
                            "job %s (%s): cancel requested before it started",
                            row.job_id,
                            running.job.job_type,
                        )
                        cancelled_waiting.append(running)
                    continue
                if not row.renewed:
                    self._lose(running)
                    running.cancelled.set()
                    log.warning(
                        "job %s (%s): lease lost; the handler is told to stop and its writes are dropped",
                        row.job_id,
                        running.job.job_type,
                    )
                elif row.cancel_requested and not running.cancelled.is_set():
                    log.info("job %s (%s): cancel requested", row.job_id, running.job.job_type)
                    running.cancelled.set()
            # release_jobs ends a job with a cancel request cancelled, as the SQL says.
            await self._hand_back(cancelled_waiting)
            self._wake.set()  # room in the local queue

    async def _hand_back(self, waiting: list[_Running]) -> None:
        """Hand claimed jobs whose handlers never started back (``release_jobs``): queued again
        without spending an attempt, or cancelled when a cancel was requested. A call the
        server did not answer is sent again for a while; then their leases are let go (they
        expire, and the reaper decides), so nothing keeps renewing a job no one will run."""
        if not waiting:
            return
        leases = [(r.job.job_id, r.job.lease_token) for r in waiting]
        deadline = time.monotonic() + max(5.0, self.config.heartbeat_interval)
        delay = RETRY_MIN
        while True:
            try:
                rows = await self.client.release_jobs(leases)
                break
            except Exception as exc:
                if not _transient(exc) or time.monotonic() + delay > deadline:
                    log.warning(
                        "could not hand back %d job(s) not started (%s); their leases will expire",
                        len(waiting),
                        _describe(exc),
                    )
                    for job_id, _token in leases:
                        self._leases.pop(job_id, None)
                    return
                await asyncio.sleep(delay)
                delay = min(delay * 2, RETRY_MAX)
        released = 0
        for row in rows:
            running = self._leases.pop(row.job_id, None)
            if running is None:
                continue
            if row.outcome == "lease_lost":
                self._lose(running)
                log.warning(
                    "job %s (%s): not handed back, lease lost (%s)",
                    row.job_id,
                    running.job.job_type,
                    row.lost_reason,
                )
            else:  # released, or cancelled (a cancel was requested)
                released += row.outcome == "released"
                self._metrics.outcome(row.outcome, running.job)
        if released:
            log.info("handed %d job(s) not started back to the queue", released)

    # -- the NOTIFY listener ---------------------------------------------------------------

    async def _listen(self) -> None:
        # after the definitions: at a start, the first claim and the registration go first
        await self._registered.wait()
        delay = RETRY_MIN
        while True:
            try:
                tcp: dict[str, Any] = self.config.tcp_settings
                async with await psycopg.AsyncConnection.connect(
                    self.config.database_url, autocommit=True, **tcp
                ) as conn:
                    await conn.execute(q.LISTEN)
                    delay = RETRY_MIN
                    self.poke()  # anything enqueued while we were not listening
                    self._asked_run_at = None
                    # and what comes due later, asked beside the notifications, not before them
                    self._ask_next_run()
                    async for note in conn.notifies():
                        # "<queue>": jobs ready now; "<queue> <unix ms>": delayed jobs due then
                        queue, _, due = note.payload.partition(" ")
                        if self.queues is not None and queue not in self.queues:
                            continue
                        if due.isdigit():
                            self._wake_at(datetime.fromtimestamp(int(due) / 1000, UTC))
                        else:
                            self.poke()
                            # let the claim the poke started go out before the next read
                            # (notifies() sets up its wait first: ~0.1 ms on an idle worker)
                            await asyncio.sleep(0)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning("listener connection lost (%s); reconnecting in %.1fs", exc, delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, RETRY_MAX)

    def _ask_next_run(self) -> None:
        """Ask pgrun.next_run_at in a task of its own (``_wake_at_next_run``), kept in
        ``_asks`` until it ends."""
        task = asyncio.create_task(self._wake_at_next_run())
        self._asks.add(task)
        task.add_done_callback(self._asks.discard)

    async def _wake_at_next_run(self) -> None:
        """A timer for the earliest delayed job this worker may claim (pgrun.next_run_at), asked
        for when the listener (re)connects: the notifications that carried the due times of
        jobs enqueued while it was not listening never reached it. When that timer fires, the
        next one is asked for, until none is left. Each answer must be later than the last
        (a database clock behind this host's would otherwise have it ask again and again for
        a job this host thinks due); a failed call, or one that is not, leaves the rest to
        the poll."""
        while True:
            try:
                due = await self.client.next_run_at(queues=self.queues, job_types=sorted(self.app.job_types))
            except (psycopg.Error, PgrunError, TimeoutError) as exc:
                log.warning("cannot read when the next delayed job is due (%s); the poll will find it", exc)
                return
            if due is None or (self._asked_run_at is not None and due <= self._asked_run_at):
                return
            self._asked_run_at = due
            self._asked_at = self._wake_at(due)
            if self._asked_at is not None or len(self._due) >= MAX_DUE_TIMES:
                return
            # due already (claimed now): the next one

    # -- shutdown ------------------------------------------------------------------------

    async def _shutdown(self) -> None:
        self._stopping = True
        # Claims in flight are not cancelled (a claim the server committed would leave its
        # jobs leased to no one): they finish, and their jobs join the queue handed back.
        while self._claiming:
            await asyncio.wait(set(self._claiming))
            for task in [task for task in self._claiming if task.done()]:
                # only a claim task cancelled before it ever ran is still listed
                self._asked -= self._claiming.pop(task).wanted
            self._release_held()
        # Jobs claimed ahead and not started go back to the queue at once (another worker may
        # take them now), not when their leases would have expired.
        waiting = list(self._queue)
        self._queue.clear()
        for running in waiting:
            running.waiting = False
        await self._hand_back(waiting)
        grace = self.config.shutdown_grace_seconds
        if self._handlers:
            log.info("stopping: waiting up to %s s for %d running job(s)", grace, len(self._handlers))
            _done, pending = await asyncio.wait(set(self._handlers), timeout=grace)
            for task in pending:
                job = self._handlers[task].job
                log.warning(
                    "abandoning job %s (%s) after the grace period; its lease will expire",
                    job.job_id,
                    job.job_type,
                )
                task.cancel()
            if pending:
                await asyncio.wait(pending, timeout=1)
        deadline = time.monotonic() + max(5.0, self.config.heartbeat_interval)
        while (
            self._buffer or self._log_lines or self._parked or not self._flush_idle.is_set()
        ) and time.monotonic() < deadline:
            if (self._buffer or self._log_lines) and self._flush_idle.is_set():
                await self._flush_once()
            elif not self._flush_idle.is_set():
                # the flush in flight ends first (polling for it cost up to 10 ms a stop)
                with suppress(TimeoutError):
                    await asyncio.wait_for(self._flush_idle.wait(), max(0.0, deadline - time.monotonic()))
            else:
                await asyncio.sleep(0.01)  # parked outcomes: their run's retries write them
        unwritten = len(self._buffer) + sum(len(parked) for parked in self._parked.values())
        if unwritten:
            log.warning("exiting with %d unwritten outcome(s); their leases will expire", unwritten)
        if self._log_lines:
            log.warning("exiting with %d unwritten log line(s)", len(self._log_lines))


def async_commit_pool(pool: Any, claims_in_flight: int = 1) -> AsyncConnectionPool | None:
    """A pool like ``pool`` (same server, user and settings) whose sessions start with
    ``synchronous_commit = off`` (a startup option, so no statement is sent for it and it
    cannot leak into another client's session through a pooler); None when ``pool`` is not
    an AsyncConnectionPool with a static conninfo (the worker then claims on it, durably).
    Its connections: one per claim in flight, the heartbeat loop's, and one spare."""
    if not isinstance(pool, AsyncConnectionPool) or callable(pool.conninfo) or callable(pool.kwargs):
        return None
    kwargs = dict(pool.kwargs or {})
    options = kwargs.get("options") or conninfo_to_dict(pool.conninfo or "").get("options") or ""
    kwargs["options"] = f"{options} -c synchronous_commit=off".strip()
    kwargs["autocommit"] = True
    return AsyncConnectionPool(
        pool.conninfo,
        min_size=1,
        max_size=claims_in_flight + 2,
        kwargs=kwargs,
        configure=configure_async_connection,
        timeout=10,
        name="pgrun-claims",
        open=False,
    )


def _claim_order(running: _Running) -> tuple[int, datetime, UUID]:
    """The order claim_jobs hands jobs out in (PostgreSQL orders uuids as Python does)."""
    job = running.job
    return (job.priority, job.run_at, job.job_id)


def _transient(exc: BaseException) -> bool:
    """A write worth sending again as it is: the server went away or asked for a retry."""
    if isinstance(exc, TimeoutError):
        return True
    if isinstance(exc, psycopg.OperationalError):
        state = exc.sqlstate
        return state is None or state[:2] in _TRANSIENT_CLASSES or state in _TRANSIENT_STATES
    return False


def _timed_out(exc: BaseException) -> bool:
    """The statement ran out of time: statement_timeout (57014) or lock_timeout (55P03)."""
    return isinstance(exc, psycopg.OperationalError) and exc.sqlstate in ("57014", "55P03")


def _release_conflict(exc: BaseException) -> bool:
    return isinstance(exc, ConflictError) and exc.code == "workflow.release_conflict"


def _content_error(exc: BaseException) -> bool:
    """A refusal that one outcome's content can cause: bad data (22xxx, or refused by psycopg
    before sending), a program limit (54xxx: a value too big), or invalid input (RQ003)."""
    if isinstance(exc, (psycopg.DataError, InvalidInputError, UnicodeError)):
        return True
    return isinstance(exc, psycopg.OperationalError) and (exc.sqlstate or "").startswith("54")


# The complete_jobs and continue_jobs outcomes that refuse a result or a state (nothing
# written, the lease still held): the worker fails the job with the outcome as its error code,
# not retried.
_REFUSED_RESULTS = {
    "result_too_large": "the result is larger than its job type allows",
    "result_invalid": "the result is nested deeper than pgrun stores",
    "state_too_large": "the Continue's state is larger than its job type allows",
    "state_invalid": "the Continue's state is nested deeper than pgrun stores",
}


def _undecodable_input(job: ClaimedJob) -> str | None:
    """Why the job's input cannot reach a handler (a stored value the client could not
    decode, see UndecodableJson); None when it can."""
    for name in ("payload", "state", "progress"):
        value = getattr(job, name)
        if isinstance(value, UndecodableJson):
            return f"its {name} ({value.size} bytes) is {value.reason}"
    return None


def _continue_refusal_code(exc: BaseException) -> str | None:
    """The error code of the failure that replaces a continuation continue_jobs refused."""
    if isinstance(exc, PgrunError):
        if exc.code == "job.state_too_large":
            return "state_too_large"
        if exc.code in ("job.invalid_step", "job.invalid_delay", "job.invalid_max_attempts"):
            return "continue_invalid"
    return "state_invalid" if _content_error(exc) else None


def _describe(exc: BaseException) -> str:
    """A short account of a refusal, without the refused value (no DETAIL from PostgreSQL)."""
    if isinstance(exc, PgrunError):
        text = exc.code if not exc.detail else f"{exc.code}: {exc.detail}"
    elif isinstance(exc, psycopg.Error) and exc.sqlstate:
        text = f"{exc.sqlstate} {exc.diag.message_primary or type(exc).__name__}"
    else:
        lines = str(exc).splitlines()
        text = f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__
    return _clip(text, CRASH_MESSAGE_CHARS)


def _json_checked(value: Any) -> tuple[str | None, JsonText | None]:
    """Why PostgreSQL's jsonb would refuse ``value`` (None when it takes it), and its JSON
    text when it takes it (None for None, what most handlers return): the check dumps it, and
    the batch of results is sent as those texts rather than dumped again."""
    if value is None:
        return None, None
    try:
        text = _JSON_ENCODER.encode(value)
    except ValueError as exc:
        if "Out of range float" in str(exc):
            return "a number is NaN or infinite, which JSON cannot hold", None
        return f"not JSON ({_clip(str(exc), CRASH_MESSAGE_CHARS)})", None
    except (TypeError, RecursionError) as exc:
        return f"not JSON ({type(exc).__name__}: {_clip(str(exc), CRASH_MESSAGE_CHARS)})", None
    if "\\u0000" in text and any(len(match.group(1)) % 2 for match in _NUL_ESCAPE.finditer(text)):
        return "a string holds a NUL character (\\u0000), which jsonb cannot store", None
    if not text.isascii() and not _encodable(text):
        return "a string holds a surrogate code point (\\ud800-\\udfff), which jsonb cannot store", None
    return None, JsonText(text)


def _continue_problem(follow_up: Continue) -> tuple[tuple[str, str] | None, JsonText | None]:
    """The error code and message that fail a ``Continue`` PostgreSQL could not store (None
    when it can), and its state's JSON text (None for no state)."""
    step = follow_up.step
    if not isinstance(step, str) or "\x00" in step or not _encodable(step):
        return ("continue_invalid", "the Continue's step is not text that PostgreSQL can store"), None
    for name in ("delay", "retry_delay"):
        try:
            _interval(getattr(follow_up, name))
        except (TypeError, ValueError, OverflowError):
            return (
                "continue_invalid",
                f"the Continue's {name} is not a number of seconds or a timedelta",
            ), None
    attempts = follow_up.max_attempts
    if attempts is not None and (
        isinstance(attempts, bool) or not isinstance(attempts, int) or not -(2**31) <= attempts < 2**31
    ):
        return ("continue_invalid", "the Continue's max_attempts is not an integer PostgreSQL can take"), None
    problem, text = _json_checked(follow_up.state)
    if problem is not None:
        return ("state_invalid", f"the Continue's state cannot be stored: {problem}"), None
    return None, text


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _as_text(text: str) -> str:
    """``text`` as PostgreSQL text can hold it: NUL and lone surrogates become U+FFFD."""
    text = text.replace("\x00", "\ufffd")
    if not _encodable(text):
        text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def _storable(text: str) -> str:
    """``text`` as PostgreSQL text (_as_text), at most MAX_ERROR_MESSAGE characters."""
    return _clip(_as_text(text), MAX_ERROR_MESSAGE - len(_TRUNCATED))


def _clip(text: str, limit: int) -> str:
    """``text``, or its first ``limit`` characters and " [truncated]"."""
    return text if len(text) <= limit else text[:limit] + _TRUNCATED


def _exception_type(error: BaseException) -> str:
    """The exception's class as a traceback names it: ``ValueError``, ``httpx.ReadTimeout``."""
    cls = type(error)
    module = getattr(cls, "__module__", "builtins")
    return cls.__qualname__ if module in ("builtins", "__main__") else f"{module}.{cls.__qualname__}"


def _crash_message(error: BaseException, *, full: bool) -> str:
    """What a crash stores: the type and clipped text, or (``full``) the traceback's last
    MAX_ERROR_MESSAGE characters."""
    if full:
        text = "".join(traceback.format_exception(error))
        limit = MAX_ERROR_MESSAGE - len(_TRUNCATED)  # what _storable keeps whole
        head = _TRUNCATED.strip() + " "
        return text if len(text) <= limit else head + text[len(text) - (limit - len(head)) :]
    try:
        detail = str(error)
    except Exception:  # a broken __str__ must not lose the failure
        detail = ""
    name = _exception_type(error)
    return f"{name}: {_clip(detail, CRASH_MESSAGE_CHARS)}" if detail else name


async def _sleep_or_stop(stop: asyncio.Event, seconds: float) -> None:
    with suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), seconds)
