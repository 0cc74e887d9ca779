"""Flow control: the primary admits a write only while its paced replicas are within a window.

    primary offset  ......|<------------- window (bytes) ------------->|
                          ^ offset - window                            ^ offset
    paced replica acks    must be at or past `offset - window` before the next write is
                          admitted; otherwise the write waits (before it is applied)

A write (Primary.write, write_batch, ingest_batch) awaits `Pacer.admit` before it is applied,
so a writer faster than its replicas is slowed to their pace instead of letting their lag
grow: the replication stream not yet acked by a paced replica stays below the window plus
the writes admitted together (one per concurrent writer). The reply, and the reading of the
writer's next request, wait with it; nothing already admitted is delayed.

Which replicas are paced (`PacedLink.paced`): a connected, online replica whose ack came
within the window of the primary's offset. It stops being paced when it disconnects, or when
a writer has waited on it and its acks have not moved for `timeout` seconds (dead,
partitioned, stopped, or busy with something else): from then on it is ignored for admission
(logged, `replica_unpaced`) until an ack brings it within the window again
(`replica_paced`). So a dead replica stalls writes for at most `timeout` once, and a replica
that is slow but moving keeps the primary at its pace. A replica that comes back far behind
(a resync from the log on disk, a full sync) catches up without holding writes.

While a writer waits, the senders ask the replicas for an ack at once (Ping/Records ack_now),
and a sender that has handed a replica more than half a window it has not acked asks for one
with that message, so the primary learns of progress within a round trip rather than at the
replica's periodic ack.

The window is a setting: --repl-flow-window (bytes, 0 = off; CONFIG SET repl-flow-window) and
--repl-flow-timeout-ms (CONFIG SET repl-flow-timeout-ms). The default window, 1 MiB, is about
80 ms of the stream at 200k small entries a second, so the apply lag stays well below 150 ms
with room for the write in flight and the ack's round trip.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Protocol

from xstream.node.base import Signal
from xstream.node.logs import slog
from xstream.node.pacing import Window


class PacedLink(Protocol):
    name: str
    ack_offset: int
    connected: bool
    state: str
    paced: bool
    progress_at: float  # monotonic time its ack_offset last moved
    held_since: float  # monotonic time it first held a writer since it last moved (0: never)


class Pacer:
    def __init__(self, window: Window) -> None:
        self.window = window
        self.moved = Signal()  # fired when a paced replica's ack moves and writers wait
        self.waiting = 0  # writers waiting for room (the senders ask for acks meanwhile)

    def blocking(self, links: Iterable[PacedLink], offset: int) -> PacedLink | None:
        """A paced replica that leaves no room for a write at `offset`, if any."""
        floor = offset - self.window.bytes
        for link in links:
            if link.paced and link.ack_offset < floor:
                return link
        return None

    def on_ack(self, link: PacedLink, offset: int, moved: bool) -> None:
        """An ack of `link` at `offset` (the primary's offset); `moved`: its ack_offset grew."""
        if moved:
            link.progress_at, link.held_since = time.monotonic(), 0.0
        if link.paced:
            if moved and self.waiting:
                self.moved.fire()
        elif (
            self.window.bytes
            and link.connected
            and link.state == "online"
            and link.ack_offset >= offset - self.window.bytes
        ):
            link.paced = True
            link.progress_at = time.monotonic()
            slog("replica_paced", replica=link.name, ack_offset=link.ack_offset, offset=offset)

    def stalled(self, link: PacedLink, offset: int) -> float:
        """Seconds left before `link`, which holds a writer, is unpaced (<= 0: it is unpaced
        now, and logged): its acks must move within the timeout, counted from when it last
        moved or, if later, from when it began to hold writers (an idle replica's acks do
        not move, and that is no stall)."""
        now = time.monotonic()
        if not link.held_since:
            link.held_since = now
        left = max(link.progress_at, link.held_since) + self.window.timeout_ms / 1000 - now
        if left <= 0:
            link.paced, link.held_since = False, 0.0
            slog("replica_unpaced", level="warning", replica=link.name,
                 ack_offset=link.ack_offset, offset=offset,
                 timeout_ms=self.window.timeout_ms)  # fmt: skip
        return left

    def wants_ack(self, link: PacedLink, sent: int) -> bool:
        """The sender should ask for an ack with its message: `link` would hold more than half
        a window it has not acked once `sent` is handed over."""
        return bool(self.window.bytes) and sent - link.ack_offset > self.window.bytes // 2
