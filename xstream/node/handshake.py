"""The replication handshake in plain terms: what a replica says first (both roles use it).

A replica's link sends a Hello (replica/link.py builds the message from `Replica.hello()`);
the primary's Replication service decodes it (primary/replication.py) and the primary judges
it (peers.check_hello, Primary.resume_point, Primary.check_replica_behind).
"""

from __future__ import annotations

from dataclasses import dataclass

from xstream.node.epochs import History


@dataclass(frozen=True)
class Hello:
    name: str
    address: str = ""  # HOST:PORT clients dial, "" while it serves no reads
    replid: str = ""  # the history it follows ("": none, it needs a full sync)
    offset: int = 0  # the end of the last whole record it applied
    log_start: int = 0  # where its log starts (its snapshot): it can cut back down to there
    epoch: int = 0  # the highest epoch it has seen
    history: History = ()  # its epoch history (empty: a node older than epochs)
