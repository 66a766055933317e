"""Asynchronous claims (JOBS_ASYNC_CLAIMS): claims and heartbeats skip the WAL flush, and a
server crashing again and again loses no acknowledged enqueue or completion.
"""

from __future__ import annotations

import asyncio

from psycopg_pool import AsyncConnectionPool

from pgrun.client import configure_async_connection
from pgrun.config import from_env
from pgrun.worker import async_commit_pool


def test_async_claims_is_on_by_default_and_can_be_turned_off() -> None:
    assert from_env({}).async_claims is True
    assert from_env({"JOBS_ASYNC_CLAIMS": "0"}).async_claims is False
    assert from_env({"JOBS_ASYNC_CLAIMS": "off"}).async_claims is False
    assert from_env({"JOBS_ASYNC_CLAIMS": "maybe"}).async_claims is True  # a bad value: the default


def test_the_claims_pool_commits_asynchronously_and_the_durable_pool_does_not(db: str) -> None:
    async def main() -> tuple[str, str, str]:
        durable = AsyncConnectionPool(
            db,
            min_size=1,
            max_size=2,
            kwargs={"autocommit": True, "options": "-c application_name=pgrun-test"},
            configure=configure_async_connection,
            open=False,
        )
        await durable.open(wait=True)
        claims = async_commit_pool(durable)
        assert claims is not None
        await claims.open(wait=True)
        try:
            async with claims.connection() as conn:
                cursor = await conn.execute(
                    "SELECT current_setting('synchronous_commit'), current_setting('application_name')"
                )
                row = await cursor.fetchone()
                assert row is not None
                claim_setting, name = row
            async with durable.connection() as conn:
                cursor = await conn.execute("SELECT current_setting('synchronous_commit')")
                row = await cursor.fetchone()
                assert row is not None
                durable_setting = row[0]
        finally:
            await claims.close()
            await durable.close()
        return claim_setting, name, durable_setting

    claim_setting, name, durable_setting = asyncio.run(main())
    assert claim_setting == "off"
    # the pool's own startup options are kept beside the new one
    assert name == "pgrun-test"
    assert durable_setting == "on"


def test_no_claims_pool_for_a_pool_it_cannot_copy() -> None:
    assert async_commit_pool(object()) is None
