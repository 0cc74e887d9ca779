"""DUMP payloads: one value in Redis's RDB serialization, as DUMP writes and RESTORE reads it.

    +-----------+-----------------------------+----------------+--------------------------+
    | type byte | the value, as rdbSaveObject | RDB version    | CRC64 of everything      |
    | (1 byte)  | writes it                   | u16 LE (14)    | before it, u64 LE        |
    +-----------+-----------------------------+----------------+--------------------------+

Types: 0 (a string) and the stream types 15, 19, 21, 26, 27 (rdbstream.py draws those). DUMP
writes what Redis 8.8 writes: RDB version 14, streams as type 27 (STREAM_LISTPACKS_5). Lists
and sets are dumped in the plain types 1 and 2 (Redis 8.8 loads them); RESTORE also reads the
compact encodings Redis 7.0 and later dump them in:

    18 LIST_QUICKLIST_2   <nodes> then per node <container: 1 plain, 2 packed> <string>: a
                          plain node is one element, a packed one a listpack of elements
    11 SET_INTSET         <string>: an intset, <encoding u32 LE: 2, 4 or 8> <count u32 LE>
                          then the members, ascending, signed little-endian of that width
    20 SET_LISTPACK       <string>: a listpack of the members, no two alike

(checked deeply as Redis does: every listpack whole, an intset ascending, no member twice, no
empty value).
RESTORE reads any version up to 14 (a newer one, or a checksum that does not match, is
"DUMP payload version or checksum are wrong"; a zero checksum means "none", as Redis allows)
and anything else wrong is "Bad data format": checked deeply, as Redis with
sanitize-dump-payload yes, so a value that loads keeps every engine invariant.

The RDB primitives (rdb.c), all used inside the value:

    length   00xxxxxx                        6-bit length
             01xxxxxx xxxxxxxx               14-bit length, big-endian
             10000000 <u32 BE>               32-bit length
             10000001 <u64 BE>               64-bit length
    string   <length> <bytes>                raw
             11000000 <i8>                   an integer (canonical decimal, -128..127)
             11000001 <i16 LE>  11000010 <i32 LE>   wider integers
             11000011 <clen> <len> <LZF>     LZF-compressed (lzf.py); written for strings
                                             longer than 20 bytes when compression saves >= 4
    millis   <i64 LE>                        delivery, seen and active times

Strings are written as rdbSaveRawString writes them (rdbcompression yes, the default), so a
payload is byte for byte what Redis 8.8 dumps for the same value (see lzf.py for the one
caveat).
"""

from __future__ import annotations

import struct
from collections import deque
from itertools import pairwise
from typing import Final

from . import listpack as lp_
from . import rdbstream
from .crc64 import crc64
from .keyspace import Value
from .rdbio import RdbError, Reader, Writer
from .stream import Stream

RDB_VERSION: Final = 14  # Redis 8.8's rdb.h
TYPE_STRING: Final = 0
TYPE_LIST: Final = 1  # RDB_TYPE_LIST: the plain encoding every Redis still loads
TYPE_SET: Final = 2  # RDB_TYPE_SET: likewise, a count then the members
TYPE_SET_INTSET: Final = 11
TYPE_LIST_QUICKLIST_2: Final = 18
TYPE_SET_LISTPACK: Final = 20
_PLAIN, _PACKED = 1, 2  # a quicklist node's container
_FOOTER: Final = struct.Struct("<HQ")  # RDB version, CRC64
_VERSION: Final = struct.Struct("<H")

__all__ = ["RDB_VERSION", "RdbError", "dump", "load", "verify"]


def dump(value: Value, now_ms: int) -> bytes:
    """DUMP's payload for `value`. `now_ms` decides which IDMP records have expired (Redis
    leaves them out of the payload)."""
    w = Writer()
    if isinstance(value, Stream):
        w.raw(bytes((rdbstream.TYPE_STREAM_LISTPACKS_5,)))
        rdbstream.save(w, value, now_ms)
    elif isinstance(value, deque):  # RDB_TYPE_LIST: a count, then the elements as strings
        w.raw(bytes((TYPE_LIST,)))
        w.length(len(value))
        for item in value:
            w.string(item)
    elif isinstance(value, set):  # RDB_TYPE_SET: a count, then the members (sorted: a
        w.raw(bytes((TYPE_SET,)))  # deterministic payload)
        w.length(len(value))
        for member in sorted(value):
            w.string(member)
    else:
        w.raw(bytes((TYPE_STRING,)))
        w.string(value)
    return seal(b"".join(w.parts))


def seal(body: bytes) -> bytes:
    """Append the footer: RDB version and the CRC64 of everything before the checksum."""
    body += _VERSION.pack(RDB_VERSION)
    return body + crc64(body).to_bytes(8, "little")


def verify(payload: bytes) -> bool:
    """verifyDumpPayload: long enough, a version we read, and the checksum (0 = none)."""
    if len(payload) < 10:
        return False
    version: int
    crc: int
    version, crc = _FOOTER.unpack_from(payload, len(payload) - 10)
    if version > RDB_VERSION:
        return False
    return crc == 0 or crc64(memoryview(payload)[:-8]) == crc


def load(payload: bytes, now_ms: int | None) -> tuple[Value, bool]:
    """The value of a payload `verify` accepted: (value, whether IDMP records were dropped).

    `now_ms` None loads every IDMP record (a replayed effect); otherwise the expired ones
    are left out, as Redis's loader does. RdbError for anything malformed.
    """
    r = Reader(payload[:-10])
    kind = r.byte()
    if kind == TYPE_STRING:
        return r.string(), False
    if kind == TYPE_LIST:
        return deque(r.string() for _ in range(r.length())), False
    if kind == TYPE_SET:
        return {r.string() for _ in range(r.length())}, False
    if kind == TYPE_LIST_QUICKLIST_2:
        return _quicklist(r), False
    if kind == TYPE_SET_INTSET:
        return _members(_intset(r.string())), False
    if kind == TYPE_SET_LISTPACK:
        return _members(_listpack(r.string())), False
    if kind in rdbstream.STREAM_TYPES:
        return rdbstream.load(r, kind, now_ms)
    raise RdbError(f"RDB type {kind} is not a type this engine holds")


def _quicklist(r: Reader) -> deque[bytes]:
    out: deque[bytes] = deque()
    for _ in range(r.length()):
        container = r.length()
        data = r.string()
        if container == _PLAIN:
            out.append(data)
        elif container == _PACKED:
            out += _listpack(data)  # an empty node is skipped, as Redis's loader does
        else:
            raise RdbError(f"quicklist container {container} is neither plain nor packed")
    if not out:
        raise RdbError("empty list")
    return out


def _listpack(data: bytes) -> list[bytes]:
    try:
        lp_.validate(data)
        elements = lp_.decode_all(data)
    except (ValueError, IndexError) as e:
        raise RdbError(f"listpack integrity check failed: {e}") from None
    return [lp_.decimal(e) if isinstance(e, int) else e for e in elements]


def _intset(data: bytes) -> list[bytes]:
    if len(data) < 8:
        raise RdbError("intset shorter than its header")
    width, count = struct.unpack_from("<II", data)
    if width not in (2, 4, 8) or len(data) != 8 + width * count:
        raise RdbError("intset encoding or size is wrong")
    fmt = {2: "h", 4: "i", 8: "q"}[width]
    values = struct.unpack_from(f"<{count}{fmt}", data, 8)
    if any(a >= b for a, b in pairwise(values)):
        raise RdbError("intset members are not ascending")
    return [b"%d" % v for v in values]


def _members(items: list[bytes]) -> set[bytes]:
    members = set(items)
    if not members or len(members) != len(items):
        raise RdbError("empty set or a member twice")
    return members
