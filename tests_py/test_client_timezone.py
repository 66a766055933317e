"""Timestamps from a pgrun pool (client.py, configure_connection): a session in UTC under
another name (Etc/UTC, initdb's usual pick) is renamed UTC when the pool opens it, so psycopg
attaches datetime.timezone.utc without a per-value conversion; any other zone is left alone.
Either way the instants are the database's."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import psycopg
from psycopg.conninfo import make_conninfo

from pgrun.client import AsyncClient, Client, configure_connection


def _in_zone(db: str, zone: str) -> str:
    return make_conninfo(db, options=f"-c TimeZone={zone}")


def _db_run_at(db: str, job_id: object) -> datetime:
    with psycopg.connect(db) as conn:
        row = conn.execute("SELECT run_at FROM pgrun.jobs WHERE id = %s", (job_id,)).fetchone()
    assert row is not None
    value: datetime = row[0]
    return value


def test_a_utc_alias_becomes_utc(db: str) -> None:
    with Client.connect(_in_zone(db, "Etc/UTC"), max_size=1) as client:
        job = client.enqueue_job("tz.job")
        with client.pool.connection() as conn:
            assert conn.execute("SHOW TimeZone").fetchone() == ("UTC",)
    assert job.run_at.tzinfo is UTC
    assert job.run_at == _db_run_at(db, job.job_id)


def test_another_zone_is_left_as_it_is(db: str) -> None:
    with Client.connect(_in_zone(db, "Europe/Paris"), max_size=1) as client:
        job = client.enqueue_job("tz.job")
        with client.pool.connection() as conn:
            assert conn.execute("SHOW TimeZone").fetchone() == ("Europe/Paris",)
    assert job.run_at.tzinfo == ZoneInfo("Europe/Paris")
    assert job.run_at == _db_run_at(db, job.job_id)


def test_the_async_pool_does_the_same(db: str) -> None:
    async def main() -> datetime:
        async with await AsyncClient.connect(_in_zone(db, "Zulu"), max_size=1) as client:
            job = await client.enqueue_job("tz.job")
            async with client.pool.connection() as conn:
                cur = await conn.execute("SHOW TimeZone")
                assert await cur.fetchone() == ("UTC",)
            return job.run_at

    assert asyncio.run(main()).tzinfo is UTC


def test_a_connection_in_transaction_mode_is_left_idle(db: str) -> None:
    with psycopg.connect(_in_zone(db, "Etc/UTC")) as conn:
        assert not conn.autocommit
        configure_connection(conn)
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        assert conn.execute("SHOW TimeZone").fetchone() == ("UTC",)
