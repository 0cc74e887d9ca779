"""The event loop a node runs on (xstream/server/loops.py) and what INFO says of it."""

from __future__ import annotations

import asyncio

import pytest
import uvloop

from xstream.node.infotext import event_loop
from xstream.server import loops


def test_auto_and_uvloop_run_on_uvloop() -> None:
    for kind in ("auto", "uvloop"):
        assert loops.run(_loop_seen(), kind) == ("uvloop", True)


def test_asyncio_runs_on_the_standard_loop() -> None:
    assert loops.loop_factory("asyncio") is None
    assert loops.run(_loop_seen(), "asyncio") == ("asyncio", False)


def test_an_unknown_loop_is_refused() -> None:
    with pytest.raises(loops.EventLoopError, match="unknown event loop 'trio'"):
        loops.loop_factory("trio")


def test_uvloop_asked_for_but_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(loops.importlib.util, "find_spec", lambda name: None)
    assert loops.loop_factory("auto") is None  # auto falls back to asyncio's
    with pytest.raises(loops.EventLoopError, match="uvloop is not installed"):
        loops.loop_factory("uvloop")


async def _loop_seen() -> tuple[str, bool]:
    return event_loop(), isinstance(asyncio.get_running_loop(), uvloop.Loop)
