"""Flow control: the primary admits a write only while its paced replicas lag less than a window.

    commits    ---c1----c2----c3----c4----c5----c6---->  time
                        ^ oldest record a paced replica has not acked
                        |<--------- its lag ---------->| now
    a write is admitted while every paced replica's lag <= window (ms); else it waits,
    before it is applied, until acks move (or the laggard times out, below)

A replica's lag is the age of the oldest record it has not acked (Primary.lag_ms: the commit
time of the first record past its ack offset; 0 when it acked everything). A write
(Primary.write, write_batch, ingest_batch) awaits `Primary.admit` before it is applied, so a
writer faster than its replicas is slowed to their pace instead of letting their lag grow:
the records not yet acked by a paced replica are those of the last `window` ms plus the
writes admitted together (one per concurrent writer). The reply, and the reading of the
writer's next request, wait with it; nothing already admitted is delayed. The window is a
time, not a byte count, because what it bounds is how stale a replica's reads are and what
a failover loses: a byte window would mean more time on a slower (or busier) machine.

Which replicas are paced (`PacedLink.paced`): a connected, online replica whose lag is within
the window at an ack. It stops being paced when it disconnects, or when a writer has waited
on it and its acks have not moved for the timeout (dead, partitioned, stopped, busy with a
snapshot): from then on it is ignored for admission (logged, `replica_unpaced`) until an ack
brings it within the window again (`replica_paced`). So a dead replica stalls writes for at
most the timeout, once, and a replica that is slow but moving keeps the primary at its pace.
A replica that comes back far behind (a resync from the log on disk, a full sync) catches up
without holding writes.

Acks: while a writer waits, every sender asks its replica for an ack at once (GETACK), and
while records flow a sender asks for one (Records.ack_now) when the last ack is older than
half the window, so the primary learns of progress in time rather than at the replica's own
periodic ack (every 100 ms).

Settings: --repl-flow-lag-ms (default 25; 0 = off; CONFIG SET repl-flow-lag-ms) and
--repl-flow-timeout-ms (default 500; CONFIG SET repl-flow-timeout-ms). The window bounds the
lag at admission; a replica then still has to apply what was admitted, which on a busy
machine (a replica slower than its primary) takes about as long again, plus the ack's round
trip: measured on 2 shared cores (benchmarks/service_bench.py --quick, load average 6-8),
a 100 ms window gave an apply lag p99 of 160-225 ms, 50 ms gave 95-152 ms (Redis: 80-140)
at the same throughput. On an idle 2-core machine at ~550k entries/s (service_bench.py,
16000x1, alternated runs), the lag polled from outside (issue 15's row) had a p99 of 138 and
222 ms with 50, 111 and 105 with 25, at the same ingest rate (554-579k/s either way) and the
same -c8 -P16 RESP rate (resp_bench.py: 0.56-0.63x of redis-server either way): hence 25.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Protocol

from xstream.node.base import Signal
from xstream.node.logs import slog
from xstream.node.pacing import Window


class PacedLink(Protocol):
    name: str
    ack_offset: int
    ack_time: float  # monotonic time of its last ack
    sent: int
    connected: bool
    state: str
    paced: bool
    progress_at: float  # monotonic time its ack_offset last moved
    held_since: float  # monotonic time it began to hold writers since it last moved (0: not)


Lag = Callable[[int], int]  # ms since the commit of the first record past an offset (0: none)


class Pacer:
    def __init__(self, window: Window) -> None:
        self.window = window
        self.moved = Signal()  # fired when a paced replica's ack moves and writers wait
        self.waiting = 0  # writers waiting for room (the senders ask for acks meanwhile)

    def blocking(self, links: Iterable[PacedLink], offset: int, lag: Lag) -> PacedLink | None:
        """A paced replica that lags more than the window, if any."""
        limit = self.window.lag_ms
        for link in links:
            if link.paced and link.ack_offset < offset and lag(link.ack_offset) > limit:
                return link
        return None

    def on_ack(self, link: PacedLink, moved: bool, lag: Lag) -> None:
        """An ack of `link` was counted; `moved`: its ack_offset grew."""
        if moved:
            link.progress_at, link.held_since = time.monotonic(), 0.0
        if link.paced:
            if moved and self.waiting:
                self.moved.fire()
        elif (
            self.window.lag_ms
            and link.connected
            and link.state == "online"
            and lag(link.ack_offset) <= self.window.lag_ms
        ):
            link.paced = True
            link.progress_at, link.held_since = time.monotonic(), 0.0
            slog("replica_paced", replica=link.name, ack_offset=link.ack_offset)

    def stalled(self, link: PacedLink, offset: int) -> float:
        """Seconds left before `link`, which holds a writer, is unpaced (<= 0: it is unpaced
        now, and logged): its acks must move within the timeout, counted from when they last
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

    def wants_ack(self, link: PacedLink) -> bool:
        """The sender should ask for an ack with its message: the replica holds records it
        has not acked and its last ack is older than half the window."""
        return (
            self.window.lag_ms > 0
            and link.sent > link.ack_offset
            and (time.monotonic() - link.ack_time) * 2000 > self.window.lag_ms
        )
