"""Enqueue inside the caller's own transaction (pgrun.tx): the job commits or rolls back with
the caller's writes, sync and async, and a worker wakes for it when, and only when, it commits."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import psycopg
import pytest

from pgrun import tx
from pgrun.app import App, JobContext
from pgrun.errors import InvalidInputError
from pgrun.workflow import Workflow
from worker_support import fast_config, run_worker_until


def _counts(db: str) -> tuple[int, int, int]:
    with psycopg.connect(db) as conn:
        row = conn.execute(
            "SELECT (SELECT count(*) FROM orders), (SELECT count(*) FROM pgrun.jobs),"
            " (SELECT count(*) FROM pgrun.workflow_runs)"
        ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1]), int(row[2])


def _fulfil() -> Workflow:
    flow = Workflow("fulfil")
    flow.job("a", "order.pack")
    return flow


@pytest.fixture
def shop(db: str) -> str:
    with psycopg.connect(db, autocommit=True) as conn:
        conn.execute("CREATE TABLE orders (id int PRIMARY KEY)")
    return db


def test_a_job_rolls_back_and_commits_with_the_callers_writes(shop: str) -> None:
    with psycopg.connect(shop) as conn:
        conn.execute("INSERT INTO orders VALUES (1)")
        job = tx.enqueue_job(conn, "order.confirm", {"order": 1}, priority=5)
        batch = tx.enqueue_jobs(conn, [{"job_type": "order.mail"}, {"job_type": "order.ship"}])
        run = tx.enqueue_workflow(conn, _fulfil())
        assert job.created and len(batch) == 2 and run.created
        conn.rollback()
    assert _counts(shop) == (0, 0, 0), "a rollback leaves neither the order nor the work"

    with psycopg.connect(shop) as conn:  # the block commits on exit
        conn.execute("INSERT INTO orders VALUES (1)")
        job = tx.enqueue_job(conn, "order.confirm", {"order": 1}, priority=5)
        tx.enqueue_workflow(conn, _fulfil())
    assert _counts(shop) == (1, 2, 1)
    with psycopg.connect(shop) as conn:
        assert conn.execute("SELECT priority FROM pgrun.jobs WHERE id = %s", (job.job_id,)).fetchone() == (5,)


def test_async_connections_too(shop: str) -> None:
    async def scenario() -> None:
        async with await psycopg.AsyncConnection.connect(shop) as conn:
            await conn.execute("INSERT INTO orders VALUES (2)")
            await tx.enqueue_job_async(conn, "order.confirm", {"order": 2})
            await tx.enqueue_jobs_async(conn, [{"job_type": "order.mail"}])
            await tx.enqueue_workflow_async(conn, _fulfil())
            await conn.rollback()
        assert _counts(shop) == (0, 0, 0)
        async with await psycopg.AsyncConnection.connect(shop) as conn:
            await conn.execute("INSERT INTO orders VALUES (2)")
            await tx.enqueue_job_async(conn, "order.confirm", {"order": 2})
        assert _counts(shop) == (1, 1, 0)

    asyncio.run(scenario())


def test_a_refusal_is_the_pgrun_exception_and_an_unknown_option_a_type_error(shop: str) -> None:
    with psycopg.connect(shop) as conn:
        with pytest.raises(InvalidInputError) as refused:
            tx.enqueue_job(conn, "Not A Type")
        assert refused.value.code == "job.invalid_type"
        conn.rollback()
        with pytest.raises(TypeError, match="priorty"):
            tx.enqueue_job(conn, "order.confirm", priorty=5)


def test_a_worker_wakes_for_the_job_when_the_transaction_commits(shop: str) -> None:
    """Poll interval one minute: only the commit's NOTIFY can start the job in time."""
    ran: list[float] = []
    app = App()

    @app.job("order.confirm")
    async def confirm(ctx: JobContext) -> Any:
        ran.append(time.monotonic())
        return None

    committed: list[float] = []
    early: list[bool] = []

    def producer() -> None:
        time.sleep(1.0)  # the worker is up and idle
        with psycopg.connect(shop) as conn:
            conn.execute("INSERT INTO orders VALUES (3)")
            tx.enqueue_job(conn, "order.confirm", {"order": 3})
            time.sleep(1.0)  # open transaction: the job must not run yet
            early.append(bool(ran))
            committed.append(time.monotonic())

    thread = threading.Thread(target=producer)
    thread.start()
    try:
        run_worker_until(app, fast_config(shop, poll_interval_ms=60_000), lambda _c: bool(ran), timeout=20)
    finally:
        thread.join(30)
    assert early == [False], "the job ran before its transaction committed"
    assert committed and ran[0] >= committed[0]
    assert ran[0] - committed[0] < 5, "the commit's NOTIFY woke the idle worker"
