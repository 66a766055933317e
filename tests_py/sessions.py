"""Helpers for tests that need several real sessions: see a backend wait on a lock, and run a
call that must wait while the test holds the lock it waits for."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import psycopg
import pytest

Conn = psycopg.Connection[tuple[Any, ...]]
T = TypeVar("T")


def wait_until_blocked(observer: Conn, pid: int, timeout: float = 10.0) -> None:
    """Return once backend `pid` waits on a lock (seen in pg_stat_activity)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        row = observer.execute(
            "SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s", (pid,)
        ).fetchone()
        if row and row[0] == "Lock":
            return
        time.sleep(0.01)
    pytest.fail(f"backend {pid} never waited on a lock")


@dataclass
class Outcome(Generic[T]):
    """What the blocked call returned, once the `blocked_call` block is left."""

    value: T | None = None
    error: BaseException | None = None


@contextmanager
def blocked_call(observer: Conn, session: Conn, call: Callable[[], T]) -> Iterator[Outcome[T]]:
    """Run `call` (statements on `session`) in a thread; enter the block once `session`'s
    backend waits on a lock, with the call not yet finished. The block releases the lock;
    leaving it waits for the call and raises what the call raised."""
    outcome: Outcome[T] = Outcome()
    finished = threading.Event()

    def run() -> None:
        try:
            outcome.value = call()
        except BaseException as exc:
            outcome.error = exc
        finally:
            finished.set()

    thread = threading.Thread(target=run)
    thread.start()
    try:
        wait_until_blocked(observer, session.info.backend_pid)
        assert not finished.is_set(), "the call did not wait for the lock"
        yield outcome
    finally:
        thread.join(30)
    assert not thread.is_alive(), "the call never finished after the lock was released"
    if outcome.error is not None:
        raise outcome.error
