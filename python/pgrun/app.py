"""Handlers: ``App``, ``@app.job``, the job context, and what a handler may return or raise.

    app = App()

    @app.job("email.send", max_attempts=5, timeout=30)
    async def send(ctx: JobContext) -> dict:
        await ctx.progress({"stage": "sending"})
        if not ctx.payload.get("to"):
            raise Fail("no recipient")              # dead at once
        ...
        return {"sent": True}                        # the job's result

A handler is called with one argument, its context. It may be ``async def`` (run on the
worker's event loop) or a plain ``def`` (run in its own thread, given a ``SyncJobContext``
whose methods block). What it does next is up to the SQL functions the worker calls:

* return a value → ``complete_jobs`` (the result must be JSON-serialisable);
* return ``Continue(step, state, delay)`` → ``continue_job``: the same job runs again at
  ``step`` with ``state``, with a fresh attempt budget (resumable multi-step jobs);
  ``max_attempts`` and ``retry_delay`` give that step its own budget and retry delay;
* raise ``Retry(delay)`` → ``fail_jobs`` retryable, after ``delay`` (None = the type's backoff);
* raise ``Fail(message, retryable=False)`` → ``fail_jobs``; dead at once unless retryable;
* raise anything else → ``fail_jobs`` with error code ``crashed``; the message is the
  exception's type and its text clipped to 200 characters (the whole traceback goes to the
  worker's log; ``JOBS_STORE_TRACEBACKS`` stores it instead);
* run past the job's ``timeout_seconds`` → ``fail_jobs`` with error code ``timeout``.

Whether a failure is retried or dead is decided by ``fail_jobs`` (attempts left, backoff).

Every error message the worker sends passes through ``App.redact``'s hook first, if one is
set: the place to strip secrets (tokens in URLs, say) before they reach the database.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar
from uuid import UUID

# Loop and LoopFactory live in pgrun.loops (the scheduler implements them without importing
# this module); they stay importable from here.
from pgrun.loops import Loop as Loop
from pgrun.loops import LoopFactory
from pgrun.results import ClaimedJob, Json, JsonObject
from pgrun.results import Seconds as Seconds  # pgrun.app.Seconds, as before

if TYPE_CHECKING:
    from pgrun.scheduler import ScheduleDeclaration

_T = TypeVar("_T")


class Retry(Exception):
    """Raise to fail this attempt and retry after ``delay`` (None = the job type's backoff)."""

    def __init__(self, delay: Seconds | None = None, message: str = "retry requested") -> None:
        super().__init__(message)
        self.delay = delay
        self.message = message


class Fail(Exception):
    """Raise to fail the job: dead at once unless ``retryable`` (then the retry policy applies)."""

    def __init__(self, message: str = "failed", *, retryable: bool = False, code: str = "failed") -> None:
        super().__init__(message)
        self.message = message
        self.retryable = retryable
        self.code = code


@dataclass(frozen=True)
class Continue:
    """Return to end this step and run the same job again at ``step`` with ``state``.

    ``delay``: when the next step runs (None = now). ``max_attempts`` (1..1000) and
    ``retry_delay``: the next step's attempt budget and the delay before each of its retries
    (None = the job's max_attempts and its type's backoff; ``Retry(delay)`` still wins). They
    hold for that step only: a later ``Continue`` without them gives the job's settings back.
    """

    step: str
    state: Json = None
    delay: Seconds | None = None
    max_attempts: int | None = None
    retry_delay: Seconds | None = None


class _JobIO(Protocol):
    """What a context needs from the worker: writes under the job's lease."""

    async def progress(self, job: ClaimedJob, data: JsonObject) -> bool: ...

    async def log(self, job: ClaimedJob, message: str, level: str, fields: JsonObject | None) -> None: ...

    def log_room(self) -> bool: ...

    def log_now(self, job: ClaimedJob, message: str, level: str, fields: JsonObject | None) -> None: ...


_CANCEL_EVENT_LOCK = threading.Lock()


class CancelEvent:
    """``ctx.cancelled``: ``threading.Event``'s ``is_set`` / ``set`` / ``wait``, safe from any
    thread, without the Event's lock and condition until a thread first waits on it (a worker
    running thousands of jobs a second made one per job: a tenth of its time)."""

    __slots__ = ("_event", "_flag")

    def __init__(self) -> None:
        self._flag = False
        self._event: threading.Event | None = None

    def is_set(self) -> bool:
        return self._flag

    def set(self) -> None:
        self._flag = True
        with _CANCEL_EVENT_LOCK:  # a wait() making its Event now sees the flag, or we see it
            event = self._event
        if event is not None:
            event.set()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until set (or ``timeout`` seconds); returns whether it is set."""
        if self._flag:
            return True
        with _CANCEL_EVENT_LOCK:
            if self._event is None:
                self._event = threading.Event()
                if self._flag:
                    self._event.set()
            event = self._event
        return event.wait(timeout)


class _ContextBase:
    def __init__(self, job: ClaimedJob, io: _JobIO, cancelled: CancelEvent) -> None:
        self.job = job
        self._io = io
        #: Set when the job should stop: cancel_job was called, the lease was lost, the
        #: handler ran out of time, or the worker is shutting down past its grace period.
        self.cancelled = cancelled

    @property
    def job_id(self) -> UUID:
        return self.job.job_id

    @property
    def job_type(self) -> str:
        return self.job.job_type

    @property
    def attempt(self) -> int:
        return self.job.attempt

    @property
    def max_attempts(self) -> int:
        return self.job.max_attempts

    @property
    def step(self) -> str | None:
        """The resumable step this run is at (None on a job's first step)."""
        return self.job.step

    @property
    def state(self) -> Json:
        """The state the previous step stored with ``Continue`` (None at first)."""
        return self.job.state

    @property
    def payload(self) -> JsonObject:
        return self.job.payload

    @property
    def is_cancelled(self) -> bool:
        return self.cancelled.is_set()


class JobContext(_ContextBase):
    """The context an ``async def`` handler gets."""

    async def progress(self, data: JsonObject) -> bool:
        """Store progress (a small JSON object); returns True when a cancel was requested."""
        requested = await self._io.progress(self.job, data)
        if requested:
            self.cancelled.set()
        return requested

    async def log(self, message: str, level: str = "info", **fields: Any) -> None:
        """Append a line to this attempt's log (pgrun.job_logs)."""
        await self._io.log(self.job, message, level, fields or None)

    async def wait_cancelled(self, timeout: float | None = None) -> bool:
        """Sleep until the job is asked to stop (or ``timeout``); returns whether it was."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while not self.cancelled.is_set():
            if deadline is not None and loop.time() >= deadline:
                return False
            await asyncio.sleep(0.05)
        return True


class SyncJobContext(_ContextBase):
    """The context a plain ``def`` handler gets: the same calls, blocking."""

    def __init__(
        self, job: ClaimedJob, io: _JobIO, cancelled: CancelEvent, loop: asyncio.AbstractEventLoop
    ) -> None:
        super().__init__(job, io, cancelled)
        self._loop = loop

    def progress(self, data: JsonObject) -> bool:
        requested = asyncio.run_coroutine_threadsafe(self._io.progress(self.job, data), self._loop).result()
        if requested:
            self.cancelled.set()
        return requested

    def log(self, message: str, level: str = "info", **fields: Any) -> None:
        # Handed to the loop without waiting for it (the loop buffers lines, then the handler's
        # outcome, in the order this thread sent them), unless the worker's buffer is full: then
        # this thread waits for the writes as an async handler does. Waiting for the loop on
        # every line cost a sync handler logging a line a job three quarters of its throughput.
        if self._io.log_room():
            self._loop.call_soon_threadsafe(self._io.log_now, self.job, message, level, fields or None)
            return
        asyncio.run_coroutine_threadsafe(
            self._io.log(self.job, message, level, fields or None), self._loop
        ).result()


#: ``redact(message, error)``: the text to store for an error message the worker is about to
#: send (``error`` is the exception it came from, None when there is none).
Redactor = Callable[[str, BaseException | None], str]

AsyncHandler = Callable[[JobContext], Awaitable[Any]]
SyncHandler = Callable[[SyncJobContext], Any]
Handler = AsyncHandler | SyncHandler


@dataclass(frozen=True)
class JobType:
    """A registered handler and the definition the worker upserts for its type at start."""

    job_type: str
    handler: Handler
    is_async: bool
    queue: str | None = None
    priority: int | None = None
    max_attempts: int | None = None
    timeout: int | None = None
    backoff_base_seconds: float | None = None
    backoff_max_seconds: float | None = None
    backoff_jitter: float | None = None
    max_result_bytes: int | None = None


@dataclass
class App:
    """A registry of job handlers (and of extra loops, e.g. the scheduler's)."""

    name: str = "pgrun"
    job_types: dict[str, JobType] = field(default_factory=dict)
    #: Extra loops ``pgrun worker`` starts next to worker and reaper, by name.
    loops: dict[str, LoopFactory] = field(default_factory=dict)
    #: Cron schedules declared with ``@app.periodic`` (upserted when the scheduler loop starts).
    schedules: list[ScheduleDeclaration] = field(default_factory=list)
    #: The hook every error message passes through before the worker sends it (``redact``).
    redactor: Redactor | None = None

    def job(
        self,
        job_type: str,
        *,
        queue: str | None = None,
        priority: int | None = None,
        max_attempts: int | None = None,
        timeout: int | None = None,
        backoff_base_seconds: float | None = None,
        backoff_max_seconds: float | None = None,
        backoff_jitter: float | None = None,
        max_result_bytes: int | None = None,
    ) -> Callable[[Handler], Handler]:
        """Register the decorated function as the handler of ``job_type``.

        The keyword arguments are the type's definition (upsert_job_definition at worker
        start): jobs enqueued without their own values take them. ``timeout`` is in seconds.
        ``max_result_bytes`` caps a result and a ``Continue`` state (bytes of jsonb, 1 KiB ..
        16 MiB; None = 1 MiB): over it the job fails with ``result_too_large`` /
        ``state_too_large``, not retried.
        """

        def register(handler: Handler) -> Handler:
            if job_type in self.job_types:
                raise ValueError(f"job type {job_type!r} already has a handler")
            self.job_types[job_type] = JobType(
                job_type=job_type,
                handler=handler,
                is_async=inspect.iscoroutinefunction(handler),
                queue=queue,
                priority=priority,
                max_attempts=max_attempts,
                timeout=timeout,
                backoff_base_seconds=backoff_base_seconds,
                backoff_max_seconds=backoff_max_seconds,
                backoff_jitter=backoff_jitter,
                max_result_bytes=max_result_bytes,
            )
            return handler

        return register

    def periodic(
        self, cron: str, *, job_type: str, name: str | None = None, **settings: Any
    ) -> Callable[[_T], _T]:
        """Declare a cron schedule making ``job_type`` jobs (pgrun.scheduler.ScheduleDeclaration:
        payload, timezone, catch_up, backfill_limit, scopes, ...; ``name`` defaults to the job
        type). The expression is checked with croniter now; the scheduler loop of ``pgrun worker``
        upserts the declarations when it starts. Usable as a decorator (on the handler, say),
        which returns the decorated object unchanged, or as a plain call."""
        # Imported here, not at the top: pgrun.scheduler imports croniter, which must not be
        # imported before `pgrun worker` has taken the working directory off sys.path
        # (cli.load_app; a croniter.py planted there would run instead).
        from pgrun.scheduler import ScheduleDeclaration, loop_factory

        declaration = ScheduleDeclaration(name=name or job_type, cron=cron, job_type=job_type, **settings)
        if any(d.name == declaration.name for d in self.schedules):
            raise ValueError(f"schedule {declaration.name!r} is already declared")
        self.schedules.append(declaration)
        self.loops.setdefault("scheduler", loop_factory(self.schedules))

        def keep(obj: _T) -> _T:
            return obj

        return keep

    def redact(self, function: Redactor) -> Redactor:
        """Set the hook that filters every error message before it is stored (a decorator).

        ``function(message, error)`` gets the text the worker would send — a crash's type and
        clipped message (or its traceback with ``JOBS_STORE_TRACEBACKS``), a ``Fail`` or
        ``Retry`` message, a timeout notice — and the exception it came from (None when there
        is none), and returns the text to store. It runs on the worker's event loop, so keep it
        quick. If it raises, the worker stores only the exception's type (or nothing for a
        message without one) and logs the hook's error.
        """
        self.redactor = function
        return function

    def add_loop(self, name: str, factory: LoopFactory) -> None:
        """Run another loop in ``pgrun worker`` (the hook the cron scheduler uses)."""
        self.loops[name] = factory
