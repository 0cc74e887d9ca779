"""The server edge's translation between protobuf (xstream.v1) and the node.

What the client shares (metadata keys, `to_value` / `from_value`, write concerns) lives in
xstream.protocol; `ERROR_MARK` and `to_value` are named here too, for the servicers.

* `*_argv`: each typed request -> the argv Redis would receive, so typed calls go through
  the one argv dispatch (a typed call cannot mean something its argv does not);
* `entries` / `streams`: the entry-list replies of XRANGE and XREAD as typed messages;
* `status_code`: a Redis error line -> a gRPC status code (the details carry the line,
  `error_text` makes it valid UTF-8);
"""

from __future__ import annotations

from typing import Any, cast

import grpc

from xstream.engine.reply import Reply
from xstream.v1 import xstream_pb2 as pb

Argv = list[bytes]
# The servicers' names for two shared parts; their one definition is in xstream.protocol.


# ---------------------------------------------------------------- errors

_CODES = {
    "WRONGTYPE": grpc.StatusCode.FAILED_PRECONDITION,
    "READONLY": grpc.StatusCode.FAILED_PRECONDITION,
    "NOGROUP": grpc.StatusCode.NOT_FOUND,
    "BUSYGROUP": grpc.StatusCode.ALREADY_EXISTS,
    "NOREPLICAS": grpc.StatusCode.UNAVAILABLE,
    "LOADING": grpc.StatusCode.UNAVAILABLE,
    "ACKTIMEOUT": grpc.StatusCode.DEADLINE_EXCEEDED,
    "NOAUTH": grpc.StatusCode.UNAUTHENTICATED,
    "WRONGPASS": grpc.StatusCode.UNAUTHENTICATED,
    "NOPERM": grpc.StatusCode.PERMISSION_DENIED,
}


def status_code(line: str) -> grpc.StatusCode:
    return _CODES.get(line.split(" ", 1)[0], grpc.StatusCode.INVALID_ARGUMENT)


def error_text(line: str) -> str:
    """An error line as gRPC details or a proto string: UTF-8 always, bytes of an argument
    that are not UTF-8 (kept by the engine as surrogates) written as \\xHH escapes."""
    return line.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


# ---------------------------------------------------------------- typed requests -> argv


def _b(s: str) -> bytes:
    return s.encode()


def _trim(t: pb.Trim) -> Argv:
    out = [b"MINID" if t.strategy == pb.Trim.MINID else b"MAXLEN", b"~" if t.approximate else b"="]
    out.append(_b(t.threshold))
    if t.limit:
        out += [b"LIMIT", b"%d" % t.limit]
    return out


def xadd_argv(r: pb.XAddRequest) -> Argv:
    argv = [b"XADD", r.key]
    if r.nomkstream:
        argv.append(b"NOMKSTREAM")
    if r.HasField("trim"):
        argv += _trim(r.trim)
    argv.append(_b(r.id) if r.id else b"*")
    for f in r.fields:
        argv += [f.field, f.value]
    return argv


def xrange_argv(r: pb.XRangeRequest) -> Argv:
    lo, hi = (b"+", b"-") if r.reverse else (b"-", b"+")
    argv = [b"XREVRANGE" if r.reverse else b"XRANGE", r.key]
    argv += [_b(r.start) if r.start else lo, _b(r.end) if r.end else hi]
    if r.count:
        argv += [b"COUNT", b"%d" % r.count]
    return argv


def _streams(offsets: list[pb.StreamOffset]) -> Argv:
    return [b"STREAMS", *(s.key for s in offsets), *(_b(s.id) for s in offsets)]


def xread_argv(r: pb.XReadRequest) -> Argv:
    argv = [b"XREAD"]
    if r.count:
        argv += [b"COUNT", b"%d" % r.count]
    if r.HasField("block_ms"):
        argv += [b"BLOCK", b"%d" % r.block_ms]
    return argv + _streams(list(r.streams))


def xreadgroup_argv(r: pb.XReadGroupRequest) -> Argv:
    argv = [b"XREADGROUP", b"GROUP", r.group, r.consumer]
    if r.count:
        argv += [b"COUNT", b"%d" % r.count]
    if r.HasField("block_ms"):
        argv += [b"BLOCK", b"%d" % r.block_ms]
    if r.noack:
        argv.append(b"NOACK")
    return argv + _streams(list(r.streams))


def xlen_argv(r: pb.KeyRequest) -> Argv:
    return [b"XLEN", r.key]


def xdel_argv(r: pb.XDelRequest) -> Argv:
    return [b"XDEL", r.key, *map(_b, r.ids)]


def xtrim_argv(r: pb.XTrimRequest) -> Argv:
    return [b"XTRIM", r.key, *_trim(r.trim)]


def xack_argv(r: pb.XAckRequest) -> Argv:
    return [b"XACK", r.key, r.group, *map(_b, r.ids)]


def xgroup_argv(r: pb.XGroupRequest) -> Argv:
    op = pb.XGroupRequest.Op.Name(r.op).encode()
    argv = [b"XGROUP", op, r.key, r.group]
    if r.op in (pb.XGroupRequest.CREATE, pb.XGroupRequest.SETID):
        argv.append(_b(r.id) if r.id else b"$")
        if r.op == pb.XGroupRequest.CREATE and r.mkstream:
            argv.append(b"MKSTREAM")
        if r.HasField("entries_read"):
            argv += [b"ENTRIESREAD", b"%d" % r.entries_read]
    elif r.op in (pb.XGroupRequest.CREATECONSUMER, pb.XGroupRequest.DELCONSUMER):
        argv.append(r.consumer)
    return argv


def xpending_argv(r: pb.XPendingRequest) -> Argv:
    argv = [b"XPENDING", r.key, r.group]
    if r.HasField("count"):
        if r.min_idle_ms:
            argv += [b"IDLE", b"%d" % r.min_idle_ms]
        argv += [_b(r.start) if r.start else b"-", _b(r.end) if r.end else b"+", b"%d" % r.count]
        if r.consumer:
            argv.append(r.consumer)
    return argv


def xclaim_argv(r: pb.XClaimRequest) -> Argv:
    argv = [b"XCLAIM", r.key, r.group, r.consumer, b"%d" % r.min_idle_ms, *map(_b, r.ids)]
    if r.HasField("idle_ms"):
        argv += [b"IDLE", b"%d" % r.idle_ms]
    if r.HasField("time_ms"):
        argv += [b"TIME", b"%d" % r.time_ms]
    if r.HasField("retry_count"):
        argv += [b"RETRYCOUNT", b"%d" % r.retry_count]
    if r.force:
        argv.append(b"FORCE")
    if r.justid:
        argv.append(b"JUSTID")
    if r.last_id:
        argv += [b"LASTID", _b(r.last_id)]
    return argv


def xautoclaim_argv(r: pb.XAutoClaimRequest) -> Argv:
    argv = [b"XAUTOCLAIM", r.key, r.group, r.consumer, b"%d" % r.min_idle_ms]
    argv.append(_b(r.start) if r.start else b"0-0")
    if r.count:
        argv += [b"COUNT", b"%d" % r.count]
    if r.justid:
        argv.append(b"JUSTID")
    return argv


def xinfo_argv(r: pb.XInfoRequest) -> Argv:
    if r.op == pb.XInfoRequest.GROUPS:
        return [b"XINFO", b"GROUPS", r.key]
    if r.op == pb.XInfoRequest.CONSUMERS:
        return [b"XINFO", b"CONSUMERS", r.key, r.group]
    argv = [b"XINFO", b"STREAM", r.key]
    if r.full:
        argv.append(b"FULL")
        if r.count:
            argv += [b"COUNT", b"%d" % r.count]
    return argv


def xsetid_argv(r: pb.XSetIdRequest) -> Argv:
    argv = [b"XSETID", r.key, _b(r.last_id)]
    if r.HasField("entries_added"):
        argv += [b"ENTRIESADDED", b"%d" % r.entries_added]
    if r.max_deleted_id:
        argv += [b"MAXDELETEDID", _b(r.max_deleted_id)]
    return argv


# ---------------------------------------------------------------- typed replies


def entries(reply: Reply) -> list[pb.Entry]:
    """XRANGE's reply ([[id, [field, value, ...]], ...]) as Entry messages."""
    out = []
    assert isinstance(reply, list)
    for eid, fv in cast("list[list[Any]]", reply):  # an id and a list: mixed, so Any
        fields = [pb.Field(field=fv[i], value=fv[i + 1]) for i in range(0, len(fv), 2)]
        out.append(pb.Entry(id=eid.decode(), fields=fields))
    return out


def streams(reply: Reply) -> list[pb.StreamEntries]:
    """XREAD's reply (a PairMap of key -> entries, or null on timeout)."""
    if not isinstance(reply, list):
        return []
    pairs = cast("list[list[Any]]", reply)  # [key, entries]: mixed, so Any
    return [pb.StreamEntries(key=k, entries=entries(v)) for k, v in pairs]
