"""A delayed job starts when it comes due, not at the worker's next poll: the enqueue's
NOTIFY carries the earliest due time of each queue's delayed jobs, and an idle worker sets a
timer for it (issue 13 item 8). Here the poll is one minute, so only the timer can start the
job in time."""

from __future__ import annotations

import asyncio
import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from pgrun.app import App, JobContext
from pgrun.client import AsyncClient
from pgrun.config import Config
from pgrun.eventloop import run_until_complete
from pgrun.worker import Worker
from worker_support import fast_config, run_worker_until


def noting_app(job_type: str, started: dict[str, datetime]) -> App:
    """An app whose one handler notes when the job named payload["name"] started."""
    app = App()

    @app.job(job_type)
    async def note(ctx: JobContext) -> Any:
        started[ctx.payload["name"]] = datetime.now(UTC)
        return None

    return app


def enqueue_delayed(db: str, job_type: str, delays: dict[str, str], due: dict[str, datetime]) -> None:
    """Enqueue a job per name, delayed as given (an interval); note each one's run_at in due."""
    with psycopg.connect(db, autocommit=True) as conn:
        for name, delay in delays.items():
            row = conn.execute(
                "SELECT run_at FROM pgrun.enqueue_job(%s, jsonb_build_object('name', %s::text),"
                " delay => %s::interval)",
                (job_type, name, delay),
            ).fetchone()
            assert row is not None
            due[name] = row[0]


def test_a_delayed_job_enqueued_elsewhere_starts_at_its_run_at(db: str) -> None:
    started: dict[str, datetime] = {}
    app = noting_app("t.later", started)
    due: dict[str, datetime] = {}

    def producer() -> None:
        time.sleep(1.0)  # the worker is up and idle
        enqueue_delayed(db, "t.later", {"b": "3 seconds", "a": "1.5 seconds"}, due)

    thread = threading.Thread(target=producer)
    thread.start()
    try:
        run_worker_until(
            app, fast_config(db, poll_interval_ms=60_000), lambda _c: len(started) == 2, timeout=20
        )
    finally:
        thread.join(30)
    for name in ("a", "b"):
        late = (started[name] - due[name]).total_seconds()
        assert 0 <= late < 0.5, f"job {name} started {late:.3f} s after its run_at"


def test_a_delayed_job_enqueued_before_the_worker_started_starts_at_its_run_at(db: str) -> None:
    """No notification reached the worker for a job enqueued before it listened: it asks
    pgrun.next_run_at once it listens and sets its timer from the answer (the poll is a
    minute, so only that timer can start the job in time)."""
    started: dict[str, datetime] = {}
    app = noting_app("t.before", started)
    due: dict[str, datetime] = {}
    enqueue_delayed(db, "t.before", {"late": "4 seconds", "early": "2 seconds"}, due)
    run_worker_until(app, fast_config(db, poll_interval_ms=60_000), lambda _c: len(started) == 2, timeout=20)
    for name in ("early", "late"):
        late = (started[name] - due[name]).total_seconds()
        assert 0 <= late < 0.5, f"job {name} started {late:.3f} s after its run_at"


def test_notifications_are_read_while_next_run_at_is_asked(db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The listener asks pgrun.next_run_at beside its notifications, not before them: with the
    answer 3 s slow, a job enqueued once the worker listens starts within a second (the poll
    is a minute)."""
    started: dict[str, datetime] = {}
    app = noting_app("t.now", started)
    asked = AsyncClient.next_run_at

    async def slow_answer(self: AsyncClient, *args: Any, **kwargs: Any) -> Any:
        await asyncio.sleep(3)
        return await asked(self, *args, **kwargs)

    monkeypatch.setattr(AsyncClient, "next_run_at", slow_answer)
    enqueued: list[datetime] = []

    def producer() -> None:
        time.sleep(1.0)  # the worker is up, listening, its next_run_at still out
        with psycopg.connect(db, autocommit=True) as conn:
            conn.execute("SELECT pgrun.enqueue_job('t.now', '{\"name\": \"now\"}')")
        enqueued.append(datetime.now(UTC))

    thread = threading.Thread(target=producer)
    thread.start()
    try:
        run_worker_until(
            app, fast_config(db, poll_interval_ms=60_000), lambda _c: "now" in started, timeout=20
        )
    finally:
        thread.join(30)
    waited = (started["now"] - enqueued[0]).total_seconds()
    assert waited < 1.0, f"the job started {waited:.3f} s after its enqueue"


@pytest.mark.parametrize("event_loop", ["uvloop", "asyncio"])
def test_a_due_time_timer_never_fires_before_the_job_is_due(event_loop: str) -> None:
    """A job's run_at is on the wall clock; uvloop's timers count whole milliseconds and fire up
    to ~1.3 ms early by it. The claim a due-time timer starts must not come before run_at (the
    job would then wait for the poll): each of 60 due times, one at a time, 1-23 ms ahead, is
    claimed for at or after it, once, on both loops."""
    late: list[float] = []

    async def main() -> None:
        worker = Worker(App(), AsyncClient.__new__(AsyncClient), Config())
        poked = asyncio.Event()
        pokes: list[datetime] = []

        def poke() -> None:
            pokes.append(datetime.now(UTC))
            poked.set()

        worker.poke = poke  # type: ignore[method-assign]
        for i in range(60):
            poked.clear()
            pokes.clear()
            target = datetime.now(UTC) + timedelta(milliseconds=1 + (i * 7) % 23)
            worker._wake_at(target)
            await asyncio.wait_for(poked.wait(), 5)
            await asyncio.sleep(0.005)  # a second poke for the same time would come by now
            assert len(pokes) == 1
            late.append((pokes[0] - target).total_seconds())

    run_until_complete(main(), Config(event_loop=event_loop))
    early = [t for t in late if t < 0]
    assert not early, f"{len(early)} of {len(late)} claimed early, by up to {-min(early) * 1000:.2f} ms"
    assert max(late) < 0.05


def test_a_reconnected_listener_leaves_no_ask_running_at_shutdown(
    db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each (re)connect of the listener asks pgrun.next_run_at; an ask still out from an
    earlier connection is stopped with the worker, not left running past it."""
    app = noting_app("t.asks", {})
    asks: list[asyncio.Task[Any]] = []

    async def hanging_answer(self: AsyncClient, *args: Any, **kwargs: Any) -> Any:
        task = asyncio.current_task()
        assert task is not None
        asks.append(task)
        await asyncio.Event().wait()  # never answers

    monkeypatch.setattr(AsyncClient, "next_run_at", hanging_answer)
    ended_when_run_ended: list[bool] = []
    run = Worker.run

    async def noting_run(self: Worker, stop: asyncio.Event) -> None:
        await run(self, stop)
        ended_when_run_ended.extend(task.done() for task in asks)

    monkeypatch.setattr(Worker, "run", noting_run)

    def reconnected(_client: Any) -> bool:
        if len(asks) == 1:  # listening, its ask out: drop the listener's connection
            with psycopg.connect(db, autocommit=True) as conn:
                conn.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                    " WHERE query = 'LISTEN pgrun_jobs' AND datname = current_database()"
                    " AND pid <> pg_backend_pid()"
                )
        return len(asks) >= 2

    run_worker_until(app, fast_config(db, poll_interval_ms=60_000), reconnected, timeout=20)
    assert len(asks) == 2
    # (the event loop cancels what is left when it closes: this is what Worker.run left)
    assert ended_when_run_ended == [True, True]
