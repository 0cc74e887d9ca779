"""Which asyncio event loop a node runs on, and running a node's main coroutine on it.

    auto      uvloop when it is installed (the server extra installs it), else asyncio's own
    uvloop    libuv's loop (uvloop); an error if it is not installed
    asyncio   the standard library's selector loop

Everything in a node is plain asyncio (grpc.aio, the RESP protocol, the replication link), so
either loop runs it; uvloop's C transports and scheduler cost less per request (measured on
the RESP port: ~15% less server CPU per unary XADD, benchmarks/resp_bench.py). The loop in
use is what INFO server's multiplexing_api says (node/infotext.event_loop).
"""

from __future__ import annotations

import asyncio
import importlib.util
from collections.abc import Callable, Coroutine
from typing import Any, Final, TypeVar

from xstream.engine.errors import CoreError

EVENT_LOOPS: Final = ("auto", "uvloop", "asyncio")
T = TypeVar("T")


class EventLoopError(CoreError):
    """`--event-loop uvloop` on a machine without uvloop."""


def loop_factory(kind: str) -> Callable[[], asyncio.AbstractEventLoop] | None:
    """The factory of the loop `kind` names (None: asyncio's default). Raises EventLoopError."""
    if kind not in EVENT_LOOPS:
        raise EventLoopError(f"unknown event loop {kind!r}: one of {', '.join(EVENT_LOOPS)}")
    if kind == "asyncio":
        return None
    if importlib.util.find_spec("uvloop") is None:
        if kind == "uvloop":
            raise EventLoopError("--event-loop uvloop: uvloop is not installed")
        return None
    import uvloop  # noqa: PLC0415 (optional)

    return uvloop.new_event_loop


def run(main: Coroutine[Any, Any, T], kind: str = "auto") -> T:
    """Run `main` to its end on a new loop of `kind` (as asyncio.run)."""
    with asyncio.Runner(loop_factory=loop_factory(kind)) as runner:
        return runner.run(main)


__all__ = ["EVENT_LOOPS", "EventLoopError", "loop_factory", "run"]
