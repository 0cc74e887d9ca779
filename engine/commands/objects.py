"""OBJECT ENCODING and OBJECT FREQ: what Redis 8.8 answers of a key's representation.

    stream   stream
    string   int (up to 20 bytes that parse as a 64-bit integer), embstr (up to 44 bytes,
             and Redis 8's key object, its 16-byte header, the key and the value with their
             7 bytes of headers, within a 64-byte cache line: key + value <= 41 bytes), raw
             (longer): tryObjectEncoding's choice for the value SET stores, then kvobjSet's
    set      intset (integers only, at most set-max-intset-entries: 512), listpack (at most
             set-max-listpack-entries members: 128, each at most set-max-listpack-value
             bytes: 64), hashtable (larger)
    list     listpack while the members' listpack fits list-max-listpack-size (-2: 8 KiB),
             quicklist beyond

Redis converts a set or list as it grows and never back on its own (a list: only when it
shrinks under half the limit in one quicklist node), so its encoding can depend on the
value's history; here it is the encoding of the key's present contents, which is Redis's for
a value built by additions (the common case) and may differ where Redis kept an earlier
choice: after removals (a set that held a non-integer, a list that crossed 8 KiB), a raw
string renamed to a shorter key, a single LPUSH or RPUSH whose elements overshoot 8 KiB once
encoded (Redis tests the elements' own lengths: such a list stays a listpack there).

FREQ: a key's LFU counter exists only under an LFU maxmemory-policy, which xstream does not
have (noeviction, no maxmemory): Redis's error, as its noeviction servers answer. IDLETIME
and REFCOUNT are not kept (unknown subcommands, Redis's error).
"""

from __future__ import annotations

from collections import deque
from typing import Final

from ..context import Ctx
from ..errors import StreamError
from ..ids import string2ll
from ..listpack import encode_str
from ..reply import Reply
from ..stream import Stream
from .info import help_reply

EMBSTR_SIZE_LIMIT: Final = 44  # OBJ_ENCODING_EMBSTR_SIZE_LIMIT
EMBEDDED_KEY_AND_VALUE: Final = 64 - 16 - 3 - 4  # a cache line: header, key's and value's
SET_MAX_INTSET_ENTRIES: Final = 512
SET_MAX_LISTPACK_ENTRIES: Final = 128
SET_MAX_LISTPACK_VALUE: Final = 64
LIST_MAX_LISTPACK_BYTES: Final = 8192  # list-max-listpack-size -2
_LISTPACK_HEAD_AND_END: Final = 7
HELP_LINES: Final = (
    "ENCODING <key>",
    "    Return the kind of internal representation used in order to store the value",
    "    associated with a <key>.",
    "FREQ <key>",
    "    Return the access frequency index of the <key>. The returned integer is",
    "    proportional to the logarithm of the recent access frequency of the key.",
)
_NO_LFU: Final = (
    "An LFU maxmemory policy is not selected, access frequency not tracked. Please note "
    "that when switching between policies at runtime LRU and LFU data will take some time "
    "to adjust."
)


def object_encoding(ctx: Ctx) -> Reply:
    key = ctx.argv[2]
    value = ctx.keyspace.get(key)
    return None if value is None else encoding(key, value).encode()


def object_freq(ctx: Ctx) -> Reply:
    if ctx.keyspace.get(ctx.argv[2]) is None:
        return None
    raise StreamError(_NO_LFU)


def object_help(ctx: Ctx) -> Reply:
    return help_reply(ctx.argv[0], HELP_LINES)


def encoding(key: bytes, value: object) -> str:
    """OBJECT ENCODING's word for the keyspace value at `key`."""
    if isinstance(value, Stream):
        return "stream"
    if isinstance(value, bytes):
        if len(value) <= 20 and string2ll(value) is not None:
            return "int"
        embedded = len(value) <= EMBSTR_SIZE_LIMIT
        return "embstr" if embedded and len(key) + len(value) <= EMBEDDED_KEY_AND_VALUE else "raw"
    if isinstance(value, deque):
        size = _LISTPACK_HEAD_AND_END
        for item in value:
            size += len(encode_str(item))
        return "listpack" if size <= LIST_MAX_LISTPACK_BYTES else "quicklist"
    assert isinstance(value, set)
    if len(value) <= SET_MAX_INTSET_ENTRIES and all(string2ll(m) is not None for m in value):
        return "intset"
    if len(value) <= SET_MAX_LISTPACK_ENTRIES and all(
        len(m) <= SET_MAX_LISTPACK_VALUE for m in value
    ):
        return "listpack"
    return "hashtable"
