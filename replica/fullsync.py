"""A full sync as it arrives: each snapshot piece is loaded and written to disk on arrival.

    FullSync(replid, offset, epoch, history, users)     Replica.on_full_sync -> Receiving
    SnapshotChunk(data) ...                              Receiving.feed: the Loader parses
                                                         what the piece completes; the
                                                         piece goes to the new snapshot file
    SnapshotEnd                                          Replica.on_snapshot(receiving):
                                                         checksum compared (the CRC-32
                                                         the file's writer thread summed
                                                         as it wrote), file made
                                                         durable, the data set replaced

So loading overlaps the transfer, and nothing holds the whole snapshot in memory: the pieces
are dropped once parsed and written. The loaded keyspaces are nobody's until the checksum
matched (Loader.finish); a snapshot that does not load leaves the engine and the store as
they were (the temporary file is removed: `discard`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from xstream.engine.snapload import Loader
from xstream.node import epochs, users
from xstream.node.store import SnapshotWriter


@dataclass
class Receiving:
    replid: str  # the primary's replication id ...
    offset: int  # ... and the offset the snapshot is the state at
    epoch: int  # the primary's epoch and history, adopted once the snapshot is in
    history: epochs.History
    users: users.Users | None  # the primary's users (None: an older primary; ours stay)
    loader: Loader  # the snapshot's pieces, parsed as they come
    file: SnapshotWriter  # the snapshot file at `offset`, written as the pieces come
    started: float = field(default_factory=time.monotonic)
    pieces: int = 0  # SnapshotChunk messages so far

    def feed(self, data: bytes | memoryview) -> None:
        """One piece: queued for the file's writer thread, then parsed (SnapshotError if the
        snapshot is damaged; OSError if the disk refused an earlier piece)."""
        self.file.write(data)
        self.loader.feed(data)
        self.pieces += 1

    def discard(self) -> None:
        self.file.discard()
