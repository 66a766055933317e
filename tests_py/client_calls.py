"""One scenario, both clients: a test writes its scenario once against ``call(name, *args,
**kwargs)`` (awaited) and runs it through ``Client`` and through ``AsyncClient``."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from pgrun.client import AsyncClient, Client

Invoke = Callable[..., Awaitable[Any]]
Scenario = Callable[[Invoke], Awaitable[None]]


def run_with_client(dsn: str, scenario: Scenario) -> None:
    with Client.connect(dsn) as client:

        async def call(name: str, *args: Any, **kwargs: Any) -> Any:
            return getattr(client, name)(*args, **kwargs)

        asyncio.run(scenario(call))


def run_with_async_client(dsn: str, scenario: Scenario) -> None:
    async def main() -> None:
        async with await AsyncClient.connect(dsn) as client:

            async def call(name: str, *args: Any, **kwargs: Any) -> Any:
                return await getattr(client, name)(*args, **kwargs)

            await scenario(call)

    asyncio.run(main())
