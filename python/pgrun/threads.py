"""The daemon threads that run the worker's plain-function (sync) handlers.

A thread is reused for the next handler once its handler returned, instead of a new thread per
job: starting a thread cost more than a fast handler itself. What a thread per job gave stays:

* a handler stuck past its timeout, or still running at the end of the shutdown grace period,
  never keeps the process alive (the threads are daemons) and never takes a slot from the next
  job (a handler finds an idle thread or starts a new one; a busy thread is never waited for);
* no bound on the threads: as many run as handlers run, stuck ones included.

A thread idle for ``IDLE_SECONDS`` ends, so a burst of handlers leaves no threads behind.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Callable
from contextlib import suppress
from typing import Any

#: An idle thread ends after this long without a handler to run.
IDLE_SECONDS = 30.0
#: An idle thread's name (a thread running a handler is named after its job).
IDLE_NAME = "pgrun-handler-idle"

_Task = tuple[Callable[[Any], Any], Any, str, asyncio.AbstractEventLoop, "asyncio.Future[Any]"]


class HandlerThreads:
    """Runs ``function(argument)`` in a daemon thread of its own for as long as it runs: an
    idle one when there is one, else a new one. ``run`` returns an awaitable of the result."""

    def __init__(self, idle_seconds: float = IDLE_SECONDS) -> None:
        self._idle_seconds = idle_seconds
        self._tasks: queue.SimpleQueue[_Task] = queue.SimpleQueue()
        self._lock = threading.Lock()
        #: Threads waiting for a task that no ``run`` has counted on yet. ``run`` takes one
        #: (and puts its task) or starts a thread; so every task put has one thread to take it.
        self._idle = 0
        self.started = 0  # threads started so far
        self.alive = 0  # threads not ended (running a handler or idle)

    def run(self, function: Callable[[Any], Any], argument: Any, name: str) -> asyncio.Future[Any]:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        with self._lock:
            spare = self._idle > 0
            if spare:
                self._idle -= 1
            else:
                self.started += 1
                self.alive += 1
        task = (function, argument, name, loop, future)
        if spare:
            self._tasks.put(task)
            return future
        try:
            threading.Thread(target=self._serve, args=(task,), name=name, daemon=True).start()
        except BaseException:  # no thread to be had (the handler's job fails as crashed)
            with self._lock:
                self.started -= 1
                self.alive -= 1
            raise
        return future

    def _serve(self, task: _Task) -> None:
        while True:
            function, argument, name, loop, future = task
            threading.current_thread().name = name
            value: Any = None
            error: BaseException | None = None
            try:
                value = function(argument)
            except BaseException as exc:
                error = exc
            # Idle before the result is handed over: the worker's next handler, started as
            # this one's result arrives, finds this thread instead of starting one.
            with self._lock:
                self._idle += 1
            threading.current_thread().name = IDLE_NAME
            with suppress(RuntimeError):  # the loop is closed: the worker left without us
                loop.call_soon_threadsafe(_settle, future, value, error)
            del task, function, argument, value, error  # nothing of the job kept while idle
            try:
                task = self._tasks.get(timeout=self._idle_seconds)
            except queue.Empty:
                with self._lock:
                    if self._idle > 0:  # no run() counted on this thread: it ends
                        self._idle -= 1
                        self.alive -= 1
                        return
                # a run() counted on an idle thread and its task is (about to be) queued
                task = self._tasks.get()


def _settle(future: asyncio.Future[Any], value: Any, error: BaseException | None) -> None:
    if future.done():  # timed out or abandoned meanwhile
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(value)
