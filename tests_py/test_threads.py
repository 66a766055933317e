"""The daemon threads sync handlers run in (pgrun.threads.HandlerThreads): one is reused for the
next handler once its own returned; a handler that does not return never keeps another from
starting; no handler's task is ever left without a thread, however the idle threads' ends meet
new handlers; idle threads end."""

from __future__ import annotations

import asyncio
import queue
import threading
import time
from typing import Any

import pytest

from pgrun.threads import HandlerThreads


def test_handlers_one_after_another_reuse_one_daemon_thread() -> None:
    async def main() -> tuple[list[Any], set[int], list[bool]]:
        threads = HandlerThreads()
        results, idents, daemons = [], set(), []

        def handler(n: int) -> int:
            idents.add(threading.get_ident())
            daemons.append(threading.current_thread().daemon)
            return n * 2

        for n in range(50):
            results.append(await threads.run(handler, n, f"reuse-{n}"))
        assert threads.started == 1
        return results, idents, daemons

    results, idents, daemons = asyncio.run(main())
    assert results == [n * 2 for n in range(50)]
    assert len(idents) == 1 and all(daemons)


def test_handlers_side_by_side_each_get_a_thread_and_run_at_once() -> None:
    """Eight handlers that each wait for all eight to arrive: they only return if they run
    side by side (a barrier with a timeout)."""

    async def main() -> int:
        threads = HandlerThreads()
        barrier = threading.Barrier(8, timeout=10)
        futures = [threads.run(lambda _: barrier.wait(), None, f"side-{n}") for n in range(8)]
        await asyncio.gather(*futures)
        # the eight are idle now: eight more side by side start no new thread
        barrier = threading.Barrier(8, timeout=10)
        await asyncio.gather(*[threads.run(lambda _: barrier.wait(), None, "again") for _ in range(8)])
        return threads.started

    assert asyncio.run(main()) == 8


def test_a_handler_that_never_returns_does_not_hold_up_the_next() -> None:
    stuck = threading.Event()

    async def main() -> tuple[str, int]:
        threads = HandlerThreads()
        threads.run(lambda _: stuck.wait(30), None, "stuck")  # never awaited, like a timed-out handler
        got = await asyncio.wait_for(threads.run(lambda x: x, "next", "next"), 10)
        return got, threads.started

    try:
        assert asyncio.run(main()) == ("next", 2)
    finally:
        stuck.set()


def test_a_handlers_exception_reaches_its_awaiter_and_the_thread_serves_on() -> None:
    class Interrupted(BaseException):
        pass

    def raising(kind: type[BaseException]) -> None:
        raise kind("from the handler")

    async def main() -> int:
        threads = HandlerThreads()
        with pytest.raises(ValueError, match="from the handler"):
            await threads.run(raising, ValueError, "value-error")
        with pytest.raises(Interrupted):
            await threads.run(raising, Interrupted, "base-exception")
        assert await threads.run(lambda x: x + 1, 1, "after") == 2
        return threads.started

    assert asyncio.run(main()) == 1


def test_idle_threads_end() -> None:
    threads = HandlerThreads(idle_seconds=0.05)

    async def main() -> None:
        barrier = threading.Barrier(4, timeout=10)
        await asyncio.gather(*[threads.run(lambda _: barrier.wait(), None, "idle-end") for _ in range(4)])

    asyncio.run(main())
    assert threads.started == 4
    deadline = time.monotonic() + 10
    while threads.alive and time.monotonic() < deadline:
        time.sleep(0.01)
    assert threads.alive == 0


class _TimesOutOnCue:
    """The threads' task queue, whose first wait with a timeout ends in a timeout when the test
    says so, whatever was queued meanwhile: the moment an idle thread's wait ends just as a
    handler counted on that thread."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self.cue = threading.Event()
        self.cued = False

    def put(self, item: Any) -> None:
        self.real.put(item)

    def get(self, timeout: float | None = None) -> Any:
        if timeout is not None and not self.cued:
            self.cued = True
            assert self.cue.wait(10)
            raise queue.Empty
        return self.real.get() if timeout is None else self.real.get(timeout=timeout)


def test_a_handler_counted_on_an_idle_thread_whose_wait_ends_still_runs() -> None:
    """An idle thread's wait ends (its idle time is up) after a handler counted on it and
    queued its task: the thread stays for that task instead of ending (the task would wait
    for a thread forever)."""

    async def main() -> tuple[str, int]:
        threads = HandlerThreads()
        tasks = _TimesOutOnCue(threads._tasks)
        threads._tasks = tasks  # type: ignore[assignment]
        assert await threads.run(lambda x: x, "first", "cue") == "first"
        second = threads.run(lambda x: x, "second", "cue")  # counts on the idle thread
        tasks.cue.set()  # ... whose wait ends now
        return await asyncio.wait_for(second, 10), threads.started

    assert asyncio.run(main()) == ("second", 1)


def test_a_thread_that_cannot_be_started_fails_that_handler_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """No thread to be had (the process's limit): run() raises for that handler (the worker
    fails its job as crashed), counts nothing, and the next handler gets a thread."""
    real_start = threading.Thread.start

    def refuse(self: threading.Thread) -> None:
        raise RuntimeError("can't start new thread")

    async def main() -> tuple[int, int, str]:
        threads = HandlerThreads()
        monkeypatch.setattr(threading.Thread, "start", refuse)
        with pytest.raises(RuntimeError, match="can't start new thread"):
            threads.run(lambda x: x, "lost", "refused")
        counted = (threads.started, threads.alive)
        monkeypatch.setattr(threading.Thread, "start", real_start)
        return (*counted, await asyncio.wait_for(threads.run(lambda x: x, "next", "next"), 10))

    assert asyncio.run(main()) == (0, 0, "next")
