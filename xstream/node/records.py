"""Replication log records: the unit that is logged, persisted, shipped and applied whole.

One record holds the effects of one write (a command, an EXEC, a RESP pipeline's run of
writes, an ingest batch), so a replica or a restart applies a write entirely or not at all.
The replication stream, the backlog and the append-only file are the same bytes, records
back to back; a replication offset is a byte position in that stream (as Redis's
master_repl_offset).

    record   +-------------+-------------+--------------------------------------+
             | length u32  | crc32 u32   | payload (length bytes)               |
             +-------------+-------------+--------------------------------------+
    payload  argv argv ...
    argv     +-----------+------------------------+--------------------------+
             | argc u32  | argc x element len u32 | the elements, concatenated|
             +-----------+------------------------+--------------------------+

Integers are little-endian. The crc32 covers the payload; a payload is never empty (a write
with no effects has no record), so a zero-filled region is not a run of valid records. A short
header or payload is an incomplete record; a checksum mismatch or an impossible length is a
corrupt one. Neither is ever applied; which of them recovery may cut is store.py's rule.
The engine's argvs.py encodes and decodes payloads (compiled with the engine).
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator

from xstream.engine.argvs import decode as decode_argvs
from xstream.engine.argvs import encode as encode_argvs
from xstream.engine.argvs import split as split_argvs
from xstream.engine.errors import CoreError

Argv = list[bytes]

HEADER = struct.Struct("<II")
MAX_RECORD = 1 << 31  # a length above this is corruption, not a record


class CorruptRecordError(CoreError):
    """A record whose checksum or structure is wrong (not merely incomplete).

    `pos` is where the bad record starts in the buffer scanned and `stop` where its header says
    it ends (-1 when the header itself is impossible), so recovery can tell a torn last record
    from damage with data after it."""

    def __init__(self, message: str, pos: int = -1, stop: int = -1) -> None:
        super().__init__(message)
        self.pos = pos
        self.stop = stop


def encode(effects: list[Argv]) -> bytes:
    """One record: the header (length, crc32) and the payload of `effects` (engine/argvs.py
    draws the payload's form and encodes it, compiled with the engine)."""
    payload = encode_argvs(effects)
    return HEADER.pack(len(payload), zlib.crc32(payload)) + payload


def decode_payload(payload: bytes | memoryview) -> list[Argv]:
    """The argvs of one record's payload (already checksummed). The payload is copied once
    (none if it is bytes already) and each element sliced from it, by the engine's compiled
    decoder of this form (xstream/engine/argvs.py)."""
    argvs = decode_argvs(payload if type(payload) is bytes else bytes(payload))
    if argvs is None:
        raise CorruptRecordError("argv runs past its record")
    return argvs


def scan(buf: bytes | bytearray | memoryview, pos: int = 0) -> Iterator[tuple[int, int]]:
    """(start, end) of each whole, valid record from `pos`; stops at the first incomplete one.

    Raises CorruptRecordError on a checksum mismatch or an impossible length.
    """
    mv = memoryview(buf)
    end = len(mv)
    while end - pos >= HEADER.size:
        length, crc = HEADER.unpack_from(mv, pos)
        if length > MAX_RECORD or length == 0:
            raise CorruptRecordError(f"record at {pos} claims {length} bytes", pos)
        stop = pos + HEADER.size + length
        if stop > end:
            return
        if zlib.crc32(mv[pos + HEADER.size : stop]) != crc:
            raise CorruptRecordError(f"record at {pos}: checksum mismatch", pos, stop)
        yield pos, stop
        pos = stop


def split(buf: bytes, out: list[bytes]) -> tuple[int, CorruptRecordError | None]:
    """`scan`'s records as their payloads (one copy each, appended to `out`), by the
    engine's compiled reader (argvs.split): the position after the last whole, valid record,
    and the error `scan` raises at the first corrupt one (None if none), returned rather than
    raised so that the caller applies those before it first, as it does with `scan`'s."""
    end, bad = split_argvs(buf, out)
    if bad < 0:
        return end, None
    try:
        for _ in scan(buf, bad):
            break
    except CorruptRecordError as e:
        return end, e
    raise AssertionError(f"argvs.split and scan disagree at {bad}")  # pragma: no cover


def payload(buf: bytes | bytearray | memoryview, start: int, stop: int) -> memoryview:
    return memoryview(buf)[start + HEADER.size : stop]
