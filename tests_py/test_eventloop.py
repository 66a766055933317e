"""The event loop the command-line runners run on (Config.event_loop, JOBS_EVENT_LOOP): uvloop's
by default, asyncio's when named or when uvloop cannot be imported (with a warning)."""

from __future__ import annotations

import asyncio
import logging
import sys
import threading

import pytest
import uvloop

from pgrun.config import Config
from pgrun.eventloop import loop_kind, new_event_loop, run_until_complete


async def _running_kind() -> str:
    return loop_kind(asyncio.get_running_loop())


@pytest.mark.parametrize(
    ("choice", "loop_class"), [("uvloop", uvloop.Loop), ("asyncio", asyncio.BaseEventLoop)]
)
def test_the_named_loop_is_made(choice: str, loop_class: type) -> None:
    loop = new_event_loop(choice)
    try:
        assert isinstance(loop, loop_class)
        assert loop_kind(loop) == choice
    finally:
        loop.close()


@pytest.mark.parametrize("choice", ["uvloop", "asyncio"])
def test_run_until_complete_runs_on_the_configured_loop_and_returns_its_result(choice: str) -> None:
    assert run_until_complete(_running_kind(), Config(event_loop=choice)) == choice


def test_without_uvloop_asyncio_runs_it_with_a_warning(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setitem(sys.modules, "uvloop", None)  # `import uvloop` raises ImportError
    with caplog.at_level(logging.WARNING, logger="pgrun.eventloop"):
        kind = run_until_complete(_running_kind(), Config(event_loop="uvloop"))
    assert kind == "asyncio"
    assert "uvloop is not installed" in caplog.text


@pytest.mark.parametrize("choice", ["uvloop", "asyncio"])
def test_timers_threads_and_errors_behave_alike_on_both_loops(choice: str) -> None:
    """What the worker asks of its loop: call_at timers that fire at or after their time,
    thread-safe calls from a sync handler's thread, to_thread, and an error raised out of run."""

    async def main() -> tuple[float, int, int]:
        loop = asyncio.get_running_loop()
        fired = asyncio.Event()
        when = loop.time() + 0.05
        late: list[float] = []

        def on_time() -> None:
            late.append(loop.time() - when)
            fired.set()

        loop.call_at(when, on_time)
        await asyncio.wait_for(fired.wait(), 5)

        async def double(value: int) -> int:
            return value * 2

        def from_a_thread() -> int:
            assert threading.current_thread() is not threading.main_thread()
            return asyncio.run_coroutine_threadsafe(double(21), loop).result(5)

        return late[0], await asyncio.to_thread(from_a_thread), await asyncio.wait_for(double(1), 1)

    late, doubled, two = run_until_complete(main(), Config(event_loop=choice))
    assert late >= -0.001  # libuv's clock counts whole milliseconds
    assert (doubled, two) == (42, 2)

    async def fails() -> None:
        raise LookupError("from the loop")

    with pytest.raises(LookupError, match="from the loop"):
        run_until_complete(fails(), Config(event_loop=choice))
