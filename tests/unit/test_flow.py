"""primary/flow.py's rules, on plain links: who holds a write, when a laggard is let go, when
a sender asks for an ack. (The loop around them: tests/integration/test_flow_control.py.)"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass

from xstream.node.pacing import Window
from xstream.primary.flow import Pacer


@dataclass
class Link:
    name: str = "r"
    ack_offset: int = 0
    ack_time: float = 0.0
    sent: int = 0
    connected: bool = True
    state: str = "online"
    paced: bool = False
    progress_at: float = 0.0
    held_since: float = 0.0


def lag_of(ages: dict[int, int]) -> Callable[[int], int]:
    """A primary whose first record past each offset was committed ages[offset] ms ago."""
    return lambda offset: ages.get(offset, 0)


def test_a_replica_is_paced_once_within_the_window_and_then_holds_writes() -> None:
    pacer = Pacer(Window(lag_ms=100, timeout_ms=500))
    link = Link(ack_offset=10)
    pacer.on_ack(link, moved=True, lag=lag_of({10: 5000}))  # far behind: catches up freely
    assert not link.paced
    assert pacer.blocking([link], 50, lag_of({10: 5000})) is None
    pacer.on_ack(link, moved=True, lag=lag_of({10: 40}))
    assert link.paced
    assert pacer.blocking([link], 50, lag_of({10: 40})) is None  # within the window
    assert pacer.blocking([link], 50, lag_of({10: 101})) is link  # lagging: holds
    assert pacer.blocking([link], 10, lag_of({10: 101})) is None  # acked everything


def test_an_idle_replica_is_not_a_stalled_one() -> None:
    """The timeout counts from when it began to hold writers, not from its last ack move."""
    pacer = Pacer(Window(lag_ms=100, timeout_ms=500))
    link = Link(paced=True, progress_at=time.monotonic() - 60)  # idle for a minute
    assert pacer.stalled(link, 50) > 0.4
    assert link.paced
    link.held_since = time.monotonic() - 0.6  # held writers for longer than the timeout
    assert pacer.stalled(link, 50) <= 0
    assert not link.paced and link.held_since == 0


def test_an_ack_that_moves_restarts_the_timeout_and_wakes_writers() -> None:
    pacer = Pacer(Window(lag_ms=100, timeout_ms=500))
    link = Link(paced=True, held_since=time.monotonic() - 0.45)

    async def held_writer() -> None:
        pacer.waiting = 1
        writer = asyncio.create_task(pacer.moved.wait(30))
        await asyncio.sleep(0)
        pacer.on_ack(link, moved=True, lag=lag_of({}))
        await asyncio.wait_for(writer, 5)

    asyncio.run(held_writer())
    assert link.held_since == 0
    assert pacer.stalled(link, 50) > 0.4


def test_no_pacing_when_the_window_is_zero() -> None:
    pacer = Pacer(Window(lag_ms=0, timeout_ms=500))
    link = Link()
    pacer.on_ack(link, moved=True, lag=lag_of({}))
    assert not link.paced
    assert not pacer.wants_ack(Link(sent=10, ack_time=0.0))


def test_a_sender_asks_for_an_ack_once_the_last_is_older_than_half_the_window() -> None:
    pacer = Pacer(Window(lag_ms=100, timeout_ms=500))
    now = time.monotonic()
    assert not pacer.wants_ack(Link(sent=10, ack_offset=0, ack_time=now))
    assert pacer.wants_ack(Link(sent=10, ack_offset=0, ack_time=now - 0.06))
    assert not pacer.wants_ack(Link(sent=10, ack_offset=10, ack_time=now - 0.06))  # all acked
