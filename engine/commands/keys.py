"""The small keyspace of the selected database: DEL (and UNLINK, the same here), EXISTS, TYPE,
KEYS, SCAN, DBSIZE, MEMORY USAGE. Commands across keys and databases are in databases.py,
SET and GET in strings.py, expiry in expire.py.

KEYS and SCAN leave out keys past their time (as Redis's); DBSIZE counts them until they are
deleted (as Redis's).

SCAN's cursor is a position in the order of a fixed 63-bit hash of each key (never 0), so a
key present for the whole scan is returned at least once whatever is added or removed
meanwhile, as Redis guarantees; a cursor never splits keys sharing a hash.
"""

from __future__ import annotations

import hashlib
from collections import deque
from typing import Final

from .. import glob
from ..context import Ctx
from ..errors import StreamError, syntax_error
from ..ids import string2ull
from ..keyspace import Value, type_name
from ..reply import Reply, Status
from .args import parse_ll, word


def delete(ctx: Ctx) -> Reply:
    gone = [k for k in dict.fromkeys(ctx.argv[1:]) if ctx.keyspace.delete(k)]
    if gone:
        ctx.propagate([b"DEL", *gone])
        for k in gone:
            ctx.signal(k)
            ctx.touch(k)
    return len(gone)


def exists(ctx: Ctx) -> Reply:
    return sum(1 for k in ctx.argv[1:] if k in ctx.keyspace)


def type_(ctx: Ctx) -> Reply:
    return Status(type_name(ctx.keyspace.get(ctx.argv[1])))


def keys(ctx: Ctx) -> Reply:
    pattern = ctx.argv[1]
    everything = pattern == b"*"
    ks = ctx.keyspace
    return [k for k in list(ks) if (everything or glob.match(pattern, k)) and ks.alive(k)]


def dbsize(ctx: Ctx) -> Reply:
    return len(ctx.keyspace)


def scan_hash(key: bytes) -> int:
    h = int.from_bytes(hashlib.blake2b(key, digest_size=8).digest(), "big") >> 1
    return h or 1


def scan(ctx: Ctx) -> Reply:
    argv = ctx.argv
    cursor = _parse_cursor(argv[1])
    count = 10
    pattern: bytes | None = None
    want_type: str | None = None
    i = 2
    while i < len(argv):
        w = word(argv[i])
        if i + 1 >= len(argv):
            raise syntax_error()
        if w == b"count":
            count = parse_ll(argv[i + 1])
            if count < 1:
                raise syntax_error()
        elif w == b"match":
            pattern = None if argv[i + 1] == b"*" else argv[i + 1]  # "*" disables MATCH
        elif w == b"type":
            want_type = word(argv[i + 1]).decode("utf-8", "replace")  # strcasecmp
        else:
            raise syntax_error()
        i += 2
    order = sorted((scan_hash(k), k) for k in ctx.keyspace)
    start = _bisect(order, cursor)
    page = order[start : start + count]
    end = start + len(page)
    while end < len(order) and page and order[end][0] == page[-1][0]:
        page.append(order[end])
        end += 1
    next_cursor = order[end][0] if end < len(order) else 0
    found = []
    for _, k in page:
        if not ctx.keyspace.alive(k):
            continue
        if pattern is not None and not glob.match(pattern, k):
            continue
        if want_type is not None and type_name(ctx.keyspace.peek(k)) != want_type:
            continue
        found.append(k)
    return [b"%d" % next_cursor, found]  # type: ignore[list-item]


def _bisect(order: list[tuple[int, bytes]], cursor: int) -> int:
    lo, hi = 0, len(order)
    while lo < hi:
        mid = (lo + hi) // 2
        if order[mid][0] < cursor:
            lo = mid + 1
        else:
            hi = mid
    return lo


def _parse_cursor(arg: bytes) -> int:
    """parseScanCursorOrReply: string2ull, so `+5`, ` 5` and `05` are cursors, `-1` is not."""
    cursor = string2ull(arg.split(b"\0", 1)[0])
    if cursor is None:
        raise StreamError("invalid cursor")
    return cursor


ROBJ_OVERHEAD: Final = 16  # Redis object header
STREAM_OVERHEAD: Final = 96  # stream struct plus its rax struct, 64-bit


def memory_usage(key: bytes, value: Value) -> int:
    """MEMORY USAGE: object header, key, and for a stream its listpack bytes plus rax nodes."""
    size = ROBJ_OVERHEAD + len(key) + 3
    if isinstance(value, bytes):
        return size + len(value) + 3
    if isinstance(value, deque):  # a listpack's header and end, an entry of about len + 2
        return size + 7 + sum(len(item) + 2 for item in value)
    if isinstance(value, set):  # a listpack-encoded set, sized as a list's
        return size + 7 + sum(len(member) + 2 for member in value)
    return size + STREAM_OVERHEAD + sum(len(lp) for _, lp in value.nodes()) + value.rax.node_bytes()


def memory(ctx: Ctx) -> Reply:
    argv = ctx.argv
    if word(argv[1]) != b"usage":
        raise StreamError(
            f"unknown subcommand '{argv[1].decode('utf-8', 'replace')}'. Try MEMORY HELP."
        )
    if len(argv) not in (3, 5) or (len(argv) == 5 and word(argv[3]) != b"samples"):
        raise syntax_error()
    if len(argv) == 5:
        parse_ll(argv[4])
    v = ctx.keyspace.peek(argv[2])
    return None if v is None else memory_usage(argv[2], v)
