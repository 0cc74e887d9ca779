"""What recovery found wrong in a data directory, and the one rule for what it may cut.

A torn tail is the only damage a node repairs by itself: the last record of the last log
segment, incomplete (the process or the machine stopped mid-write) or, after a power loss,
unreadable with nothing behind it (a record whose header reaches exactly the end of the file,
or a tail of zero bytes the file system extended the file with). Such a record was never
acknowledged (a write is answered only once its record is whole in the log), so cutting it
loses nothing.

Everything else is *damage* and is never cut silently: a checksum mismatch with more data after
it, a record whose length field reaches past the end although its checksum matches a shorter
run of its own argvs (a damaged length, not a torn write), a record in a segment that is not
the last, a gap between segments, an unreadable snapshot. Acknowledged records may lie past it.
The node then refuses to serve as primary on that data; a replica keeps the good prefix, sets
the rest aside and takes what it lacks from its primary; `xstream check-log` shows the damage
and cuts it only when an operator says so.

    Damage(file, at, offset, reason)
      file     the file's name in the data directory
      at       byte position in that file where the damage starts
      offset   the replication offset there (the state recovered is the log up to it)
      reason   what is wrong, in words
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

from xstream.engine.errors import CoreError
from xstream.node import records

_U32 = struct.Struct("<I")


@dataclass(frozen=True)
class Damage:
    file: str  # the damaged file's name in the data directory
    at: int  # byte position in that file where the damage starts
    offset: int  # replication offset there: the log is whole up to it
    reason: str  # what is wrong

    def describe(self) -> str:
        return f"{self.file} at byte {self.at} (replication offset {self.offset}): {self.reason}"


class CorruptLog(CoreError):  # noqa: N818 (a state, as StreamError's kin)
    """Recovery found damage that is not a torn tail; nothing on disk was changed."""

    def __init__(self, directory: Path, damage: Damage) -> None:
        self.directory = directory
        self.damage = damage
        super().__init__(
            f"the data in {directory} is damaged: {damage.describe()}. Records acknowledged "
            "to clients may lie past it, so this node will not serve it as a primary. Recover "
            "it from a healthy copy: start it as a replica of a node that has the data "
            "(`xstream replica --primary HOST:PORT`, or `xstream node`, which follows the "
            "elected primary); it keeps the good part, sets the rest aside and resyncs. With "
            f"no healthy copy anywhere, `xstream check-log --data-dir {directory}` shows what "
            "a repair would cut and, with --repair, cuts it (keeping the cut bytes)."
        )


def torn_tail(data: bytes, good: int, error: records.CorruptRecordError | None) -> bool:
    """May the bytes of the LAST segment from `good` on be cut as a torn tail? `error` is why
    the scan stopped there (None: an incomplete record)."""
    if error is None:
        return misread_length(data, good) is None
    if error.stop == len(data):  # the bad record is the last thing written
        return True
    return data.count(b"\0", good) == len(data) - good  # zeros a file system extended it with


def misread_length(data: bytes, good: int) -> int | None:
    """Where a whole record starting at `good` really ends, if its header's length is wrong
    but its checksum matches a run of whole argvs (a damaged length field: it looks like an
    incomplete record, yet acknowledged records may follow); None if no prefix checks out.

    The payload's own structure (argc, element lengths) says where each argv ends; a torn
    record's partial payload matching its checksum at one of those ends has a chance of
    about 2**-32 per argv."""
    if len(data) - good < records.HEADER.size:
        return None
    _, crc = records.HEADER.unpack_from(data, good)
    start = pos = good + records.HEADER.size
    end = len(data)
    while pos + 4 <= end:
        argc: int = _U32.unpack_from(data, pos)[0]
        if argc == 0 or pos + 4 + 4 * argc > end:
            return None
        lens: tuple[int, ...] = struct.unpack_from(f"<{argc}I", data, pos + 4)
        pos += 4 + 4 * argc + sum(lens)
        if pos > end:
            return None
        if zlib.crc32(data[start:pos]) == crc:
            return pos
    return None


def stop_reason(data: bytes, good: int, error: records.CorruptRecordError | None) -> str:
    follow = len(data) - good
    if error is None:
        real = misread_length(data, good)
        if real is not None:
            return (
                f"record at {good}: its length field is wrong (its checksum matches "
                f"{real - good} bytes) with {follow} bytes from it to the end of the file"
            )
        return f"incomplete record ({follow} bytes)"
    return f"{error} with {follow} bytes from it to the end of the file"
