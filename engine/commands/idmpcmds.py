"""XCFGSET, XIDMPRECORD and the internal IDMP effects XIDMPEXPIRE and XIDMPDUP.

XCFGSET key [IDMP-DURATION seconds] [IDMP-MAXSIZE n]   per-stream IDMP settings; a
    change clears the stream's IDMP records (as Redis); ships itself when it changed
XIDMPRECORD key pid iid stream-id                      remember a record (AOF rewrite form)
XIDMPEXPIRE key now-ms      (internal) forget records whose window ended by now-ms
XIDMPDUP key pid iid        (internal) count one duplicate IDMP append of a known record
"""

from __future__ import annotations

from .. import idmp
from ..context import Ctx
from ..errors import NO_SUCH_KEY, StreamError, syntax_error
from ..ids import parse_strict
from ..reply import OK, Reply
from ..stream import Stream
from .args import parse_ll, word


def _stream(ctx: Ctx, key: bytes) -> Stream:
    s = ctx.keyspace.stream(key)
    if s is None:
        raise StreamError(NO_SUCH_KEY)
    return s


def xcfgset(ctx: Ctx) -> Reply:
    argv = ctx.argv
    s = _stream(ctx, argv[1])  # the key first, then the arguments (as Redis 8.8)
    duration: int | None = None
    maxsize: int | None = None
    i = 2
    while i < len(argv):
        w = word(argv[i])
        if w == b"idmp-duration" and i + 1 < len(argv):
            if duration is not None:
                raise StreamError("IDMP-DURATION specified multiple times")
            duration = parse_ll(argv[i + 1])
            if not 1 <= duration <= 86400:
                raise StreamError("IDMP-DURATION must be between 1 and 86400 seconds")
        elif w == b"idmp-maxsize" and i + 1 < len(argv):
            if maxsize is not None:
                raise StreamError("IDMP-MAXSIZE specified multiple times")
            maxsize = parse_ll(argv[i + 1])
            if not 1 <= maxsize <= 10000:
                raise StreamError("IDMP-MAXSIZE must be between 1 and 10000 entries")
        else:
            raise syntax_error()
        i += 2
    if duration is None and maxsize is None:
        raise StreamError("At least one parameter must be specified")
    new = (
        duration if duration is not None else s.idmp_duration,
        maxsize if maxsize is not None else s.idmp_maxsize,
    )
    if new != (s.idmp_duration, s.idmp_maxsize):
        s.idmp_duration, s.idmp_maxsize = new
        idmp.clear(s)
        ctx.propagate(list(argv))
    return OK


def xidmprecord(ctx: Ctx) -> Reply:
    _, key, pid, iid, raw = ctx.argv
    if not pid:
        raise StreamError("producer ID must be non-empty")
    if not iid:
        raise StreamError("idempotent ID must be non-empty")
    entry_id = parse_strict(raw)
    s = _stream(ctx, key)
    if s.get(entry_id) is None:
        raise StreamError("No such message in stream")
    prior = idmp.lookup(s, pid, iid)
    if prior is not None:
        if prior != entry_id:
            raise StreamError("IID already exists for this producer with a different stream ID")
        return OK
    idmp.record(s, pid, iid, entry_id)
    ctx.propagate(list(ctx.argv))
    return OK


def xidmpexpire(ctx: Ctx) -> Reply:
    s = _stream(ctx, ctx.argv[1])
    gone = idmp.expire(s, parse_ll(ctx.argv[2]))
    if gone:
        ctx.propagate(list(ctx.argv))
    return gone


def xidmpdup(ctx: Ctx) -> Reply:
    _, key, pid, iid = ctx.argv
    s = _stream(ctx, key)
    if idmp.lookup(s, pid, iid) is None:
        raise StreamError("No such IDMP record")
    s.iids_duplicates += 1
    ctx.propagate(list(ctx.argv))
    return OK
