"""What a loop of ``pgrun worker`` is: the protocol the worker, the reaper and the cron
scheduler implement, and the factory ``App.add_loop`` takes.

A module of its own so that ``pgrun.app`` (which registers loops) and the loops' modules
(``pgrun.scheduler``) both depend on it and neither on the other.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from pgrun.client import AsyncClient
    from pgrun.config import Config


class Loop(Protocol):
    """A long-running loop ``pgrun worker`` runs beside the others on one pool."""

    name: str

    async def run(self, stop: asyncio.Event) -> None: ...


#: Builds a loop from the shared client and configuration (see pgrun.runner).
LoopFactory = Callable[["AsyncClient", "Config"], Loop]
