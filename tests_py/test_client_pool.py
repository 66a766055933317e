"""The Client's pool checks a connection on checkout only when it sat idle (client.py,
CHECK_IDLE_SECONDS): a call right after another skips the check's round trip, and a
connection the server dropped while it sat idle is replaced before a call uses it."""

from __future__ import annotations

import asyncio

import psycopg
import psycopg_pool
import pytest

from pgrun import client as pgrun_client
from pgrun.client import AsyncClient, Client


def _count_checks(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    counts = {"sync": 0, "async": 0}
    sync_check = psycopg_pool.ConnectionPool.check_connection
    async_check = psycopg_pool.AsyncConnectionPool.check_connection

    def counted(conn: psycopg.Connection[object]) -> None:
        counts["sync"] += 1
        sync_check(conn)

    async def counted_async(conn: psycopg.AsyncConnection[object]) -> None:
        counts["async"] += 1
        await async_check(conn)

    monkeypatch.setattr(psycopg_pool.ConnectionPool, "check_connection", staticmethod(counted))
    monkeypatch.setattr(psycopg_pool.AsyncConnectionPool, "check_connection", staticmethod(counted_async))
    return counts


def test_calls_in_a_row_are_not_checked_one_by_one(db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    counts = _count_checks(monkeypatch)
    with Client.connect(db, max_size=1) as client:
        for n in range(20):
            client.enqueue_job("pool.t", {"n": n})
    assert counts["sync"] == 1, "only the first checkout of the fresh connection is checked"

    async def main() -> None:
        async with await AsyncClient.connect(db, max_size=1) as client:
            for n in range(20):
                await client.enqueue_job("pool.t", {"n": n})

    asyncio.run(main())
    assert counts["async"] == 1


def test_a_call_hands_its_connection_back_before_it_returns(db: str) -> None:
    """No hand-off to a pool worker between calls (a ``reset`` callback would make one: the
    connection would be back only once a pool thread ran, and the next call would wait for it)."""
    with Client.connect(db, min_size=1, max_size=1) as client:
        available = []
        for n in range(200):
            client.enqueue_job("pool.t", {"n": n})
            available.append(client.pool.get_stats().get("pool_available", 0))
    assert available == [1] * 200

    async def main() -> list[int]:
        async with await AsyncClient.connect(db, min_size=1, max_size=1) as client:
            seen = []
            for n in range(200):
                await client.enqueue_job("pool.t", {"n": n})
                seen.append(client.pool.get_stats().get("pool_available", 0))
            return seen

    assert asyncio.run(main()) == [1] * 200


def _terminate_the_pools_connection(client: Client, db: str) -> None:
    with client.pool.connection() as conn:
        row = conn.execute("SELECT pg_backend_pid()").fetchone()
    assert row is not None
    with psycopg.connect(db, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", [row[0]])


def test_a_connection_dropped_while_idle_is_replaced_before_use(
    db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pgrun_client, "CHECK_IDLE_SECONDS", 0.0)  # every checkout counts as idle
    with Client.connect(db, max_size=1) as client:
        _terminate_the_pools_connection(client, db)
        job = client.enqueue_job("pool.t", {})
        assert client.get_job(job.job_id)["status"] == "queued"


def test_within_the_window_a_dropped_connection_fails_its_next_call_only(
    db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The trade the window makes: the call that meets the broken connection fails, and the
    pool discards it, so the next call works."""
    monkeypatch.setattr(pgrun_client, "CHECK_IDLE_SECONDS", 3600.0)
    with Client.connect(db, max_size=1) as client:
        client.enqueue_job("pool.t", {})
        _terminate_the_pools_connection(client, db)
        with pytest.raises(psycopg.OperationalError):
            client.enqueue_job("pool.t", {})
        job = client.enqueue_job("pool.t", {})
        assert client.get_job(job.job_id)["status"] == "queued"


def test_a_keeping_client_reuses_its_connection_and_gives_it_back_when_idle_or_failed(
    db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """KeepingAsyncClient: calls in a row run on one connection that stays out of the pool; a
    connection idle for CHECK_IDLE_SECONDS goes back before the next call (which takes one
    through the pool); one whose call failed goes back at once; of two calls at once, one
    connection is kept and the other goes back; release hands back the kept one."""

    async def main() -> None:
        pool = psycopg_pool.AsyncConnectionPool(
            db, min_size=2, max_size=2, kwargs={"autocommit": True}, open=False
        )
        await pool.open(wait=True)
        kept = pgrun_client.KeepingAsyncClient(pool)
        try:

            async def backend() -> int:
                return int(await kept._run(pgrun_client._scalar("SELECT pg_backend_pid()", {})))

            first = await backend()
            assert [await backend() for _ in range(5)] == [first] * 5, "one connection, kept"
            assert pool.get_stats()["pool_available"] == 1, "the kept one is not in the pool"

            with pytest.raises(psycopg.errors.DivisionByZero):
                await kept._run(pgrun_client._scalar("SELECT 1 / 0", {}))
            assert kept._kept is None and pool.get_stats()["pool_available"] == 2, "failed: given back"

            await backend()
            given_back: list[object] = []
            putconn = pool.putconn

            async def counted_putconn(conn: psycopg.AsyncConnection[object]) -> None:
                given_back.append(conn)
                await putconn(conn)

            monkeypatch.setattr(pool, "putconn", counted_putconn)
            await backend()
            assert given_back == [], "used within the window: kept"
            monkeypatch.setattr(pgrun_client, "CHECK_IDLE_SECONDS", 0.0)
            await backend()
            assert len(given_back) == 1, "idle past the window: given back before the call"
            assert kept._kept is not None and pool.get_stats()["pool_available"] == 1
            monkeypatch.setattr(pgrun_client, "CHECK_IDLE_SECONDS", 1.0)

            both = await asyncio.gather(backend(), backend())
            assert len(set(both)) == 2, "two calls at once: two connections"
            assert pool.get_stats()["pool_available"] == 1, "one kept, the other given back"
            await kept.release()
            assert kept._kept is None and pool.get_stats()["pool_available"] == 2
        finally:
            await kept.close()

    asyncio.run(main())
