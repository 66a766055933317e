"""The event loop the command-line runners run on (``Config.event_loop``, ``JOBS_EVENT_LOOP``).

``pgrun worker`` and ``python -m pgrun.scheduler`` run their loops on uvloop's event loop by
default: the same asyncio code, with the loop's own work (waiting on sockets, scheduling
callbacks and tasks) done in libuv instead of Python, which takes ~12 % off a busy worker's CPU
a job (docs/performance.md). ``JOBS_EVENT_LOOP=asyncio`` runs them on the standard library's.
Code that runs pgrun's loops itself (``run_loops`` under its own ``asyncio.run``) keeps the loop
it chose.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from pgrun.config import Config

log = logging.getLogger("pgrun.eventloop")

T = TypeVar("T")


def new_event_loop(choice: str) -> asyncio.AbstractEventLoop:
    """A new event loop of the kind ``Config.event_loop`` names: uvloop's for "uvloop" (asyncio's,
    with a warning, where uvloop is not installed), asyncio's for "asyncio"."""
    if choice == "uvloop":
        try:
            import uvloop
        except ImportError:
            log.warning("JOBS_EVENT_LOOP=uvloop, but uvloop is not installed: running on asyncio's loop")
        else:
            return uvloop.new_event_loop()
    return asyncio.new_event_loop()


def loop_kind(loop: asyncio.AbstractEventLoop) -> str:
    """The package whose loop this is: uvloop or asyncio."""
    return type(loop).__module__.partition(".")[0]


def run_until_complete(main: Coroutine[Any, Any, T], config: Config) -> T:
    """``asyncio.run(main)`` on the event loop ``config.event_loop`` names (the command-line
    runners' entry point)."""
    with asyncio.Runner(loop_factory=lambda: new_event_loop(config.event_loop)) as runner:
        return runner.run(main)
