"""The binary form of a list of argvs: how a replication record's payload holds its effects.

    argvs    argv argv ...
    argv     +-----------+------------------------+----------------------------+
             | argc u32  | argc x element len u32 | the elements, concatenated |
             +-----------+------------------------+----------------------------+

Integers are little-endian. xstream/node/records.py frames payloads (length, crc32) and owns
the format; its encoder and decoder live here only to be compiled with the engine: a replica
decodes every record it applies, and compiled, reading the lengths byte by byte and slicing
each element costs a fraction of the struct-based loop run as Python; the primary encodes
every record it logs, and compiled, joining prebuilt 4-byte lengths, a record of one XADD
effect (9 elements) costs ~7,500 instructions to frame (records.encode) against ~10,500
with `Struct.pack(n, *map(len, argv))` run as Python (callgrind).
`split` reads records.py's frames (length u32, crc32 u32, payload) for a replica's
on_records, compiled for the same reason (records.scan, a generator over a memoryview, costs
a replica ~9k instructions per record besides the checksum).
WARNING: `encode` and `decode` change together, and records.py's framing with `split`.
"""

from __future__ import annotations

import zlib
from typing import Final

Argv = list[bytes]
MAX_RECORD = 1 << 31  # records.MAX_RECORD: a longer record is corruption
_U32_CACHED: Final = 1024  # lengths below this take a prebuilt u32 (elements are mostly short)
_U32: Final = [n.to_bytes(4, "little") for n in range(_U32_CACHED)]


def encode(argvs: list[Argv]) -> bytes:
    """The payload of `argvs` (the form above); OverflowError for a length past u32."""
    parts: list[bytes] = []
    for argv in argvs:
        parts.append(_u32_bytes(len(argv)))
        for arg in argv:
            parts.append(_u32_bytes(len(arg)))
        parts.extend(argv)
    return b"".join(parts)


def _u32_bytes(n: int) -> bytes:
    return _U32[n] if n < _U32_CACHED else n.to_bytes(4, "little")


def decode(buf: bytes) -> list[Argv] | None:
    """The argvs of `buf`, each element a slice of it; None if one runs past its end."""
    out: list[Argv] = []
    pos, end = 0, len(buf)
    while pos < end:
        if end - pos < 4:
            return None
        argc = _u32(buf, pos)
        lens = pos + 4
        pos = lens + 4 * argc
        if pos > end:
            return None
        argv: Argv = []
        for k in range(lens, lens + 4 * argc, 4):  # _u32 inlined: called per element
            n = buf[k] | buf[k + 1] << 8 | buf[k + 2] << 16 | buf[k + 3] << 24
            argv.append(buf[pos : pos + n])
            pos += n
        if pos > end:
            return None
        out.append(argv)
    return out


def _u32(buf: bytes, pos: int) -> int:
    return buf[pos] | buf[pos + 1] << 8 | buf[pos + 2] << 16 | buf[pos + 3] << 24


def split(buf: bytes, out: list[bytes]) -> tuple[int, int]:
    """Append to `out` the payload of each whole record of `buf` (records.py's frame) whose
    checksum matches, in order, up to the first incomplete or corrupt one: (the position
    after the last appended, the position of a corrupt record or -1 if none)."""
    pos, end = 0, len(buf)
    while end - pos >= 8:
        length = _u32(buf, pos)
        if length > MAX_RECORD or length == 0:
            return pos, pos
        stop = pos + 8 + length
        if stop > end:
            break
        payload = buf[pos + 8 : stop]
        if zlib.crc32(payload) != _u32(buf, pos + 4):
            return pos, pos
        out.append(payload)
        pos = stop
    return pos, -1
