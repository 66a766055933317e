"""A delayed job starts when it comes due, not at the worker's next poll: the enqueue's
NOTIFY carries the earliest due time of each queue's delayed jobs, and an idle worker sets a
timer for it (issue 13 item 8). Here the poll is one minute, so only the timer can start the
job in time."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime
from typing import Any

import psycopg

from pgrun.app import App, JobContext
from worker_support import fast_config, run_worker_until


def test_a_delayed_job_enqueued_elsewhere_starts_at_its_run_at(db: str) -> None:
    started: dict[str, datetime] = {}
    app = App()

    @app.job("t.later")
    async def later(ctx: JobContext) -> Any:
        started[ctx.payload["name"]] = datetime.now(UTC)
        return None

    due: dict[str, datetime] = {}

    def producer() -> None:
        time.sleep(1.0)  # the worker is up and idle
        with psycopg.connect(db, autocommit=True) as conn:
            for name, delay in (("b", "3 seconds"), ("a", "1.5 seconds")):
                row = conn.execute(
                    "SELECT run_at FROM pgrun.enqueue_job('t.later', jsonb_build_object('name', %s::text),"
                    " delay => %s::interval)",
                    (name, delay),
                ).fetchone()
                assert row is not None
                due[name] = row[0]

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
