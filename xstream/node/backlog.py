"""The replication backlog: the latest `capacity` bytes of the replication stream in memory.

A list of chunks (one per commit, so whole records) with their start offsets, consumed from a
head index (compacted now and then) so that a lookup is a bisect.
`read(pos)` serves partial resyncs and the per-replica senders; a position before `start` has
been dropped: the same bytes are in the log on disk until a snapshot supersedes them
(Store.read_log; Primary.stream_from picks the source). Chunks are only dropped whole, from
the left, once the rest still holds `capacity` bytes, and a dropped chunk's slot is emptied
at once, so the chunks referenced hold less than `capacity` bytes plus the oldest of them.

The capacity (--backlog-bytes, default 1 MiB as Redis's repl-backlog-size) is a cache size,
not how far back a replica can resume: it decides which senders read memory and which read
the disk (a replica that was away or is behind by more than it). A primary that never had a
replica keeps nothing in it (`skip`), as Redis has no backlog until a replica attaches; one
whose replicas are all gone, or that restarted with a history, keeps it for an hour (Redis's
repl-backlog-ttl; primary.BACKLOG_TTL), so a replica back after a snapshot cut the log still
resumes from memory.

Primaries and replicas both keep one (a replica appends each run of whole records it
applies), so a promoted replica serves its siblings' partial resyncs from what it received.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence


class Backlog:
    def __init__(self, capacity: int, offset: int = 0) -> None:
        self.capacity = capacity
        self.start = offset  # offset of the first byte held
        self.end = offset  # offset after the last byte held (the stream's offset)
        self._chunks: list[bytes] = []
        self._starts: list[int] = []
        self._head = 0  # chunks before it are dropped
        self._size = 0

    @classmethod
    def holding(cls, capacity: int, end: int, tail: Sequence[bytes]) -> Backlog:
        """A backlog ending at `end` that holds the last `capacity` bytes of `tail` (the log
        bytes recovered before `end`, whole records, in pieces: only the last are joined)."""
        parts: list[bytes] = []
        size = 0
        for part in reversed(tail):
            if size >= capacity:
                break
            parts.append(part)
            size += len(part)
        joined = b"".join(reversed(parts))
        kept = joined[len(joined) - capacity :] if capacity < len(joined) else joined
        backlog = cls(capacity, end - len(kept))
        backlog.append(kept)
        return backlog

    def append(self, data: bytes) -> None:
        if not data:
            return
        self._chunks.append(data)
        self._starts.append(self.end)
        self.end += len(data)
        self._size += len(data)
        chunks = self._chunks
        while (
            self._size - len(chunks[self._head]) >= self.capacity and self._head < len(chunks) - 1
        ):
            dropped = len(chunks[self._head])
            chunks[self._head] = b""  # its bytes go now, not when the list is compacted
            self._head += 1
            self._size -= dropped
            self.start += dropped
        if self._head > 1024 and self._head * 2 > len(chunks):
            del chunks[: self._head]
            del self._starts[: self._head]
            self._head = 0

    def skip(self, n: int) -> None:
        """The stream moved on by `n` bytes that are not kept here (no replica to serve them
        from memory; the log on disk has them): it holds nothing, from the new end on."""
        self.end += n
        self.start = self.end
        if self._chunks:
            self._chunks.clear()
            self._starts.clear()
            self._head = self._size = 0

    def held_bytes(self) -> int:
        """Bytes of the chunks it references: less than `capacity` plus its oldest chunk."""
        return sum(map(len, self._chunks))

    def holds(self, pos: int) -> bool:
        return self.start <= pos <= self.end

    def read(self, pos: int, max_bytes: int = 1 << 20, end: int | None = None) -> bytes:
        """Bytes from `pos` (at least one chunk's worth, up to about max_bytes), none at or
        past `end` (what may be shipped yet; default the backlog's end)."""
        assert self.holds(pos), (pos, self.start, self.end)
        stop = self.end if end is None else min(end, self.end)
        if pos >= stop:
            return b""
        i = bisect_right(self._starts, pos, self._head) - 1
        parts = [self._chunks[i][pos - self._starts[i] : stop - self._starts[i]]]
        size = len(parts[0])
        i += 1
        while i < len(self._chunks) and size < max_bytes and self._starts[i] < stop:
            parts.append(self._chunks[i][: stop - self._starts[i]])
            size += len(parts[-1])
            i += 1
        return parts[0] if len(parts) == 1 else b"".join(parts)
