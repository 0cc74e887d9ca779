"""Commands across keys and databases: MOVE, SWAPDB, COPY, RENAME, RENAMENX, FLUSHDB,
FLUSHALL, RANDOMKEY.

Errors and their order are Redis's (src/db.c): a database argument is an integer first (`value
is not an integer or out of range`, SWAPDB's own `invalid first|second DB index`), then an
index below `databases` (`DB index is out of range`); only then are keys looked at.

Effects are the commands themselves in a canonical form (FLUSHDB/FLUSHALL without ASYNC,
COPY with REPLACE only when it replaced something, RENAMENX as RENAME): each replays exactly
from the database it ran in, which the engine's SELECT effect gives. A command that changed
nothing ships nothing, except FLUSHDB, FLUSHALL and SWAPDB, which Redis always propagates.

Expiry goes with the value: MOVE, RENAME and COPY keep the source's time (COPY gives the copy
the same one), SWAPDB swaps it with its database, FLUSHDB/FLUSHALL drop it.

Signals: every key a command creates, replaces or removes is signaled in its database, so
blocked XREADs and XREADGROUPs re-check it (a stream MOVEd into db 3 serves an XREAD blocked
there; its old db's XREADGROUP hears it is gone).
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import islice

from .. import snapshot
from ..context import Ctx
from ..errors import StreamError, syntax_error
from ..keyspace import Keyspace
from ..reply import OK, Reply
from .args import parse_ll, word


def _same_objects() -> StreamError:
    return StreamError("source and destination objects are the same")


def _db_index(ctx: Ctx, arg: bytes, message: str | None = None) -> int:
    """A database argument: an integer (or `message`), then a database that exists."""
    return _in_range(ctx, parse_ll(arg, message))


def _in_range(ctx: Ctx, n: int) -> int:
    if not 0 <= n < len(ctx.dbs):
        raise StreamError("DB index is out of range")
    return n


def move(ctx: Ctx) -> Reply:
    key = ctx.argv[1]
    dst = _db_index(ctx, ctx.argv[2])
    if dst == ctx.db:
        raise _same_objects()
    value = ctx.keyspace.get(key)
    if value is None or key in ctx.dbs[dst]:
        return 0
    ctx.dbs[dst].set(key, value, ctx.keyspace.expire_at(key))
    ctx.keyspace.delete(key)
    ctx.signal(key)
    ctx.touch(key)
    ctx.signal(key, dst)
    ctx.touch(key, dst)
    ctx.propagate([b"MOVE", key, b"%d" % dst])
    return 1


def swapdb(ctx: Ctx) -> Reply:
    first = parse_ll(ctx.argv[1], "invalid first DB index")
    second = parse_ll(ctx.argv[2], "invalid second DB index")
    a, b = _in_range(ctx, first), _in_range(ctx, second)
    dbs = ctx.dbs
    if a != b:
        keys = set(dbs[a]) | set(dbs[b])
        dbs[a], dbs[b] = dbs[b], dbs[a]
        for key in sorted(keys):
            ctx.signal(key, a)
            ctx.touch(key, a)
            ctx.signal(key, b)
            ctx.touch(key, b)
    ctx.propagate([b"SWAPDB", b"%d" % a, b"%d" % b])
    return OK


def copy(ctx: Ctx) -> Reply:
    argv = ctx.argv
    key, newkey = argv[1], argv[2]
    replace, dst = False, ctx.db
    j = 3
    while j < len(argv):
        w = word(argv[j])
        if w == b"replace":
            replace = True
        elif w == b"db" and j + 1 < len(argv):
            dst = _db_index(ctx, argv[j + 1])
            j += 1
        else:
            raise syntax_error()
        j += 1
    if dst == ctx.db and key == newkey:
        raise _same_objects()
    value = ctx.keyspace.get(key)
    ctx.keyspace.note_read(value is not None)  # COPY reads its source (lookupKeyRead)
    if value is None:
        return 0
    target = ctx.dbs[dst]
    replaced = newkey in target
    if replaced and not replace:
        return 0
    target.set(newkey, snapshot.copy_value(value), ctx.keyspace.expire_at(key))
    ctx.signal(newkey, dst)
    ctx.touch(newkey, dst)
    effect = [b"COPY", key, newkey, b"DB", b"%d" % dst]
    ctx.propagate([*effect, b"REPLACE"] if replaced else effect)
    return 1


def rename(ctx: Ctx) -> Reply:
    return _rename(ctx, nx=False)


def renamenx(ctx: Ctx) -> Reply:
    return _rename(ctx, nx=True)


def _rename(ctx: Ctx, nx: bool) -> Reply:
    key, newkey = ctx.argv[1], ctx.argv[2]
    ks = ctx.keyspace
    value = ks.get(key)
    if value is None:
        raise StreamError("no such key")
    if key == newkey:  # nothing changes, nothing ships
        return 0 if nx else OK
    if newkey in ks and nx:
        return 0
    when = ks.expire_at(key)
    ks.delete(newkey)
    ks.set(newkey, value, when)
    ks.delete(key)
    ctx.signal(key)
    ctx.touch(key)
    ctx.signal(newkey)
    ctx.touch(newkey)
    ctx.propagate([b"RENAME", key, newkey])
    return 1 if nx else OK


def _check_flush_args(ctx: Ctx) -> None:
    """FLUSHDB|FLUSHALL [ASYNC|SYNC] (getFlushCommandFlags): anything else is a syntax error.
    Both free memory at once here: ASYNC and SYNC do the same."""
    argv = ctx.argv
    if len(argv) > 2 or (len(argv) == 2 and word(argv[1]) not in (b"async", b"sync")):
        raise syntax_error()


def _flush(ctx: Ctx, db: int, keyspace: Keyspace) -> None:
    for key in keyspace:
        ctx.signal(key, db)
        ctx.touch(key, db)
    keyspace.clear()


def flushdb(ctx: Ctx) -> Reply:
    _check_flush_args(ctx)
    _flush(ctx, ctx.db, ctx.keyspace)
    ctx.propagate([b"FLUSHDB"])
    return OK


def flushall(ctx: Ctx) -> Reply:
    _check_flush_args(ctx)
    for db, keyspace in enumerate(ctx.dbs):
        _flush(ctx, db, keyspace)
    ctx.propagate([b"FLUSHALL"])
    return OK


def randomkey(ctx: Ctx) -> Reply:
    """A key of the selected database drawn from the engine's sequence (engine.py); nil if the
    database is empty: the draw modulo the live keys picks one in the keyspace's order. Only
    keys with a time can be gone, so only those are looked up; the pick walks the keys in C
    (O(N), where Redis's is O(1): ~4 ms at 1M keys; a stream service holds few)."""
    ks = ctx.keyspace
    gone = ks.gone_keys()
    live = len(ks.data) - len(gone)
    if live <= 0:
        return None
    keys: Iterable[bytes] = ks.data if not gone else (k for k in ks.data if k not in gone)
    return next(islice(keys, ctx.draw() % live, None))
