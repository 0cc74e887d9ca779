"""Active expiry: the primary deletes keys past their time on its own, as Redis's
activeExpireCycle, so a key nobody looks up again still goes (and its DEL reaches replicas,
which never expire keys themselves).

`run_active_expiry(node_of)` ticks every `every` seconds (Redis's hz 10: 100 ms) and asks the
node of the moment (`node_of()`: roles change in place) to run one cycle; the primary's
`Node.active_expire` runs the engine's `expire_cycle` (at most `limit` keys per tick, so a
tick never holds the loop long) and commits its DELs as one record; a replica's does nothing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING

from .logs import slog

if TYPE_CHECKING:
    from .base import Node

EVERY_SECONDS = 0.1  # Redis's hz 10
LIMIT = 200  # keys deleted per tick at most


async def run_active_expiry(node_of: Callable[[], Node], every: float = EVERY_SECONDS) -> None:
    while True:
        await asyncio.sleep(every)
        try:
            await node_of().active_expire(LIMIT)
        except Exception as e:  # a refused or failed cycle is retried at the next tick
            slog("active_expire_failed", level="warning", error=str(e))
