"""ctx.cancelled (pgrun.app.CancelEvent): threading.Event's is_set / set / wait from any
thread, its lock made only when a thread first waits. A set never goes unseen by a waiter,
whichever of the two comes first."""

from __future__ import annotations

import threading
import time

from pgrun.app import CancelEvent


def test_set_is_seen_by_is_set_and_by_a_later_wait() -> None:
    event = CancelEvent()
    assert not event.is_set()
    assert event.wait(0.01) is False, "not set: the wait times out"
    event.set()
    assert event.is_set()
    assert event.wait(0) is True


def test_a_set_from_another_thread_wakes_a_waiting_thread_at_once() -> None:
    event = CancelEvent()
    woke: list[float] = []

    def waiter() -> None:
        event.wait(30)
        woke.append(time.monotonic())

    thread = threading.Thread(target=waiter)
    thread.start()
    time.sleep(0.1)  # the waiter is blocked in wait()
    set_at = time.monotonic()
    event.set()
    thread.join(10)
    assert woke and woke[0] - set_at < 5, "woken by the set, not by its 30 s timeout"


def test_no_set_is_lost_when_wait_and_set_race() -> None:
    """Many pairs started together: every waiter returns True long before its timeout."""
    for _ in range(300):
        event = CancelEvent()
        results: list[bool] = []
        barrier = threading.Barrier(2)

        def waiter(
            event: CancelEvent = event, results: list[bool] = results, barrier: threading.Barrier = barrier
        ) -> None:
            barrier.wait()
            results.append(event.wait(10))

        thread = threading.Thread(target=waiter)
        thread.start()
        barrier.wait()
        event.set()
        thread.join(15)
        assert results == [True]
