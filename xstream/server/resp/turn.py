"""One record per turn of the event loop: the pipelined write batches that every connection
read in one turn run as one batch, at the turn's end.

    poll -> data_received(c1) -> c1's batch parsed, held here  -+
         -> data_received(c2) -> c2's batch parsed, held here   |  one call_soon
         -> ...                                                -+
    turn's end -> node.write_batch_now(c1's + c2's + ..., db)    one apply, one record,
                                                                 one log write, one commit
               -> each connection's replies written (its slice), then it goes on with
                  whatever it read after its batch

Why: under many pipelining clients a primary wrote one record per connection per read: one
log write (a system call), one commit and one record for each replica to apply for every 16
XADDs of `redis-benchmark -c 8 -P 16`. Redis writes its AOF once per turn of its loop
(beforeSleep), for every client it served in it; so does this, for the batches it holds.
Replies still go out only after their record is in the log (the node's write_batch_now).

Invariants:
* a connection has at most one batch held here; while it has, it only buffers what it reads
  (its task waits), so its commands run in the order it sent them;
* a batch runs only on the node it was checked for (`batchable`), against the users it was
  checked with (ACL: `Acl.users` is replaced whole on any change), on a node that takes
  writes now; else it goes back to its connection's task, which checks and runs each command
  as if nothing had been held: the same replies;
* a connection gone before the turn's end has its batch dropped, never run nor answered (as
  Redis frees a client's unprocessed input with it); nothing of it was acknowledged;
* batches of different databases run apart; a run takes whole batches, at most MAX_BATCH
  commands unless one batch alone is longer (the loop serves others between runs).
Batches of different connections are independent (each connection's order is kept, and no
client can see the order between clients); the record holds them in the order they arrived.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Protocol

from xstream.engine.errors import StreamError
from xstream.engine.reply import Reply
from xstream.node.base import Node
from xstream.node.logs import slog

Argv = list[bytes]


class Grouping(Protocol):
    """What a turn needs from a connection that handed it a batch."""

    def group_answered(self, batch: list[Argv], replies: list[Reply | StreamError]) -> None:
        """Write the replies, then go on with what it read after the batch."""

    def group_returned(self, batch: list[Argv]) -> None:
        """Run the batch on its own task instead, command by command (none of it ran)."""

    def group_dropped(self) -> None:
        """The connection is gone: nothing of the batch ran."""

    def group_failed(self, error: Exception) -> None:
        """A bug: log it and drop the connection."""

    @property
    def gone(self) -> bool: ...


@dataclass(slots=True)
class Held:
    conn: Grouping
    batch: list[Argv]
    db: int
    node: Node  # the node the batch was checked for
    users: object  # Acl.users when it was checked (identity)


class Turn:
    """The batches held for the end of this turn of the loop."""

    def __init__(self, node: Callable[[], Node], users: Callable[[], object], limit: int) -> None:
        self._node = node  # the node of the moment
        self._users = users  # the users of the moment
        self.limit = limit  # commands per run (whole batches)
        self._held: list[Held] = []

    def hold(self, conn: Grouping, batch: list[Argv], db: int, node: Node) -> None:
        """Run `batch` at the end of this turn, with the others held by then."""
        if not self._held:
            asyncio.get_running_loop().call_soon(self._run)
        self._held.append(Held(conn, batch, db, node, self._users()))

    def _run(self) -> None:
        held, self._held = self._held, []
        node, users = self._node(), self._users()
        by_db: dict[int, list[Held]] = {}
        for h in held:
            if h.conn.gone:
                h.conn.group_dropped()
            elif h.node is not node or h.users is not users:
                h.conn.group_returned(h.batch)
            else:
                by_db.setdefault(h.db, []).append(h)
        for db, group in by_db.items():
            for run in _runs(group, self.limit):
                _run_one(node, db, run)


def _runs(group: list[Held], limit: int) -> Iterator[list[Held]]:
    """Whole batches, at most `limit` commands a run (a longer batch runs alone)."""
    run: list[Held] = []
    size = 0
    for h in group:
        if run and size + len(h.batch) > limit:
            yield run
            run, size = [], 0
        run.append(h)
        size += len(h.batch)
    if run:
        yield run


def _run_one(node: Node, db: int, run: list[Held]) -> None:
    """One batch of the run's commands on `node`; each connection answered its slice."""
    if not node.takes_writes_now():  # an earlier run filled the flow window, say
        for h in run:
            h.conn.group_returned(h.batch)
        return
    argvs = run[0].batch if len(run) == 1 else [argv for h in run for argv in h.batch]
    try:
        replies = node.write_batch_now(argvs, db)
    except Exception as e:  # a bug: the connections of the run are dropped, others go on
        slog("resp_group_failed", level="error", error=repr(e))
        for h in run:
            h.conn.group_failed(e)
        return
    start = 0
    for h in run:
        end = start + len(h.batch)
        h.conn.group_answered(h.batch, replies[start:end])
        start = end


__all__ = ["Grouping", "Turn"]
