"""XADD and XTRIM: the shared option parser, appends, trims and their effects.

Parsing mirrors streamParseAddOrTrimArgsOrReply: options in any order up to the ID (XADD) or the
end (XTRIM); a bare `*` ends XADD's options at once.

Effects. XADD ships `XADD key [policy] [MAXLEN|MINID = t] <concrete id> field value ...`:
`*` and `<ms>-*` become the generated ID; a trim part is kept only if it removed something and
is always exact. `MAXLEN ~` becomes `MAXLEN = <length after>`. `MINID ~` becomes, for KEEPREF,
`MINID = <first ID of the first remaining node, tombstones included>` as Redis does (MAX-MAX
when the stream is empty); for DELREF/ACKED it becomes `MINID = min(threshold, first ID of the
node a LIMIT stop left untouched)`, which removes exactly what the primary removed (Redis ships
the KEEPREF form there and its replicas diverge, propagation.md B1). LIMIT is never shipped:
replayed trims are exact and unlimited. XTRIM ships `XTRIM key MAXLEN|MINID = t [policy]`.
"""

from __future__ import annotations

from functools import partial
from typing import Final

from .. import idmp
from ..context import Argv, Ctx
from ..errors import StreamError, syntax_error, wrong_arity
from ..ids import MAX_ID, MIN_ID, StreamID, next_auto_id, parse_id, parse_strict
from ..refs import drop_refs, is_referenced
from ..reply import Reply
from ..stream import LISTPACK_MAX_SIZE, Policy, Stream
from .args import cstr, parse_ll, word

POLICIES: Final[dict[bytes, Policy]] = {
    b"keepref": "KEEPREF",
    b"delref": "DELREF",
    b"acked": "ACKED",
}


class AddTrimArgs:
    """XADD / XTRIM options. A plain class, not a dataclass: mypyc compiles its construction,
    not dataclass's generated __init__."""

    maxlen: int | None = None
    minid: StreamID | None = None
    approx: bool = False
    limit: int = 0
    limit_given: bool = False
    policy: Policy = "KEEPREF"
    policy_given: bool = False
    nomkstream: bool = False
    entry_id: StreamID | None = None  # None for `*`
    seq_given: bool = True
    next_index: int = 0  # XADD: index of the ID argument
    idmp_pid: bytes | None = None  # IDMP / IDMPAUTO producer ID
    idmp_iid: bytes | None = None  # IDMP idempotent ID (None with IDMPAUTO)

    @property
    def trims(self) -> bool:
        return self.maxlen is not None or self.minid is not None


def parse_add_trim(ctx: Ctx, xadd: bool) -> AddTrimArgs:
    argv = ctx.argv
    a = AddTrimArgs()
    i = 2
    argc = len(argv)
    while i < argc:
        more = argc - 1 - i
        opt = argv[i]
        w = word(opt)
        if xadd and cstr(opt) == b"*":
            break
        if w in (b"maxlen", b"minid") and more:
            if a.trims:
                raise StreamError(
                    "syntax error, MAXLEN and MINID options at the same time are not compatible"
                )
            if more >= 2 and cstr(argv[i + 1]) in (b"~", b"="):
                a.approx = cstr(argv[i + 1]) == b"~"
                i += 1
            if w == b"maxlen":
                maxlen = parse_ll(argv[i + 1])
                if maxlen < 0:
                    raise StreamError("The MAXLEN argument must be >= 0.")
                a.maxlen = maxlen
            else:
                a.minid = parse_strict(argv[i + 1])
            i += 1
        elif w == b"limit" and more:
            a.limit = parse_ll(argv[i + 1])
            if a.limit < 0:
                raise StreamError("The LIMIT argument must be >= 0.")
            a.limit_given = True
            i += 1
        elif w in POLICIES and not a.policy_given:
            a.policy = POLICIES[w]
            a.policy_given = True
        elif xadd and w == b"nomkstream":
            a.nomkstream = True
        elif xadd and ((w == b"idmpauto" and more) or (w == b"idmp" and more >= 2)):
            i = _parse_idmp(argv, i, a)
        elif xadd:
            a.entry_id, a.seq_given = parse_id(opt, strict=True, allow_auto_seq=True)
            break
        else:
            raise syntax_error()
        i += 1
    a.next_index = i
    _settle_limit(ctx, a, xadd)
    if a.idmp_pid is not None and a.entry_id is not None and not ctx.replicated:
        raise StreamError("syntax error, IDMP/IDMPAUTO can be used only with auto-generated IDs")
    return a


def _parse_idmp(argv: Argv, i: int, a: AddTrimArgs) -> int:
    """IDMPAUTO pid | IDMP pid iid; returns the index of the last word consumed."""
    name = "IDMPAUTO" if word(argv[i]) == b"idmpauto" else "IDMP"
    if a.idmp_pid is not None:
        raise StreamError("syntax error, IDMP/IDMPAUTO specified multiple times")
    if not argv[i + 1]:
        raise StreamError(f"syntax error, {name} requires a non-empty producer ID")
    a.idmp_pid = argv[i + 1]
    if name == "IDMPAUTO":
        return i + 1
    if not argv[i + 2]:
        raise StreamError("syntax error, IDMP requires a non-empty idempotent ID")
    a.idmp_iid = argv[i + 2]
    return i + 2


def _settle_limit(ctx: Ctx, a: AddTrimArgs, xadd: bool) -> None:
    if a.limit and not a.trims:
        raise StreamError(
            "syntax error, LIMIT cannot be used without specifying a trimming strategy"
        )
    if not xadd and not a.trims:
        raise StreamError("syntax error, XTRIM must be called with a trimming strategy")
    if ctx.replicated:
        a.limit = 0
    elif a.limit_given:
        if not a.approx:
            raise StreamError("syntax error, LIMIT cannot be used without the special ~ option")
    elif a.approx:
        limit = 100 * ctx.config.node_max_entries
        a.limit = 10000 if limit <= 0 else min(limit, 1000000)
    else:
        a.limit = 0


def xadd(ctx: Ctx) -> Reply:
    argv = ctx.argv
    if argv[2] == b"*":
        return _xadd_plain(ctx)
    a = parse_add_trim(ctx, xadd=True)
    fpos = a.next_index + 1
    nfv = len(argv) - fpos
    if nfv < 2 or nfv % 2:
        raise wrong_arity("xadd")
    if a.entry_id is not None and a.seq_given and a.entry_id == MIN_ID:
        raise StreamError("The ID specified in XADD must be greater than 0-0")
    fv = argv[fpos:]
    key = argv[1]
    s = ctx.keyspace.stream(key)
    if s is None and a.nomkstream:
        return None
    iid = None
    if a.idmp_pid is not None:
        iid = a.idmp_iid if a.idmp_iid is not None else idmp.auto_iid(fv[0::2], fv[1::2])
        prior = _idmp_duplicate(ctx, s, key, a.idmp_pid, iid)
        if prior is not None:
            return prior
    last = s.last_id if s is not None else StreamID(0, 0)
    entry_id = _choose_id(a, last, ctx.now_ms)
    if _too_large(fv):  # after the ID checks, as streamAppendItem
        raise StreamError("Elements are too large to be stored")
    if s is None:
        s = ctx.keyspace.stream_or_create(key, ctx.config.idmp)
    cfg = ctx.config
    s.append(entry_id, fv, cfg.node_max_bytes, cfg.node_max_entries)
    ctx.signal(key)
    ctx.touch(key)
    trim = _trim(s, a) if a.trims else None
    effect: Argv = [b"XADD", key]
    if a.policy != "KEEPREF":
        effect.append(a.policy.encode())
    if a.idmp_pid is not None and iid is not None:
        idmp.record(s, a.idmp_pid, iid, entry_id)
        s.iids_added += 1
        effect += [b"IDMP", a.idmp_pid, iid]
    if trim is not None:
        effect += trim
    effect.append(entry_id.encode())
    effect += fv
    ctx.propagate(effect)
    return entry_id.encode()


def _xadd_plain(ctx: Ctx) -> Reply:
    """`XADD key * field value ...`, the producers' hot path, without the option parser.

    WARNING: xadd's checks in xadd's order, and xadd's effect; a change to one is a change
    to both (test_cmd_xadd covers each check through this path).
    """
    argv = ctx.argv
    fv = argv[3:]  # the command table checked len(argv) >= 5
    if len(fv) % 2:
        raise wrong_arity("xadd")
    key = argv[1]
    s = ctx.keyspace.stream(key)
    last = s.last_id if s is not None else MIN_ID
    if last == MAX_ID:
        raise id_exhausted()
    entry_id = next_auto_id(last, ctx.now_ms)
    assert entry_id is not None
    if _too_large(fv):
        raise StreamError("Elements are too large to be stored")
    if s is None:
        s = ctx.keyspace.stream_or_create(key, ctx.config.idmp)
    cfg = ctx.config
    s.append(entry_id, fv, cfg.node_max_bytes, cfg.node_max_entries)
    ctx.signal(key)
    ctx.touch(key)
    reply = entry_id.encode()
    effect = argv.copy()  # XADD key <id> field value ...: compiled, a copy and two stores
    effect[0] = b"XADD"  # cost a third of building it anew; argv[0] is the client's spelling
    effect[2] = reply
    ctx.propagate(effect)
    return reply


def _too_large(fv: list[bytes]) -> bool:
    """Whether an entry's elements exceed what one node may hold. A loop, not
    sum(map(len, fv)): compiled, a tenth of its cost."""
    total = 0
    for x in fv:
        total += len(x)
    return total > LISTPACK_MAX_SIZE


def id_exhausted() -> StreamError:
    return StreamError("The stream has exhausted the last possible ID, unable to add more items")


def _idmp_duplicate(ctx: Ctx, s: Stream | None, key: bytes, pid: bytes, iid: bytes) -> bytes | None:
    """The original ID if (pid, iid) was already appended (after expiring old records)."""
    if s is None:
        return None
    if not ctx.replicated and idmp.expire(s, ctx.now_ms):
        ctx.propagate([b"XIDMPEXPIRE", key, b"%d" % ctx.now_ms])
    prior = idmp.lookup(s, pid, iid)
    if prior is None:
        return None
    s.iids_duplicates += 1
    ctx.propagate([b"XIDMPDUP", key, pid, iid])
    return prior.encode()


def _choose_id(a: AddTrimArgs, last: StreamID, now_ms: int) -> StreamID:
    if last == MAX_ID:
        raise id_exhausted()
    if a.entry_id is None:
        auto = next_auto_id(last, now_ms)
        assert auto is not None
        return auto
    if a.seq_given:
        if a.entry_id <= last:
            raise _not_greater()
        return a.entry_id
    ms = a.entry_id.ms
    if ms == last.ms:
        if last.seq == (1 << 64) - 1:
            raise _not_greater()
        return StreamID(ms, last.seq + 1)
    if ms < last.ms:
        raise _not_greater()
    return StreamID(ms, 0)


def _not_greater() -> StreamError:
    return StreamError(
        "The ID specified in XADD is equal or smaller than the target stream top item"
    )


def _trim(s: Stream, a: AddTrimArgs) -> Argv | None:
    """Run the trim; return the exact `MAXLEN|MINID = t` words to ship, or None if no-op."""
    removed, stop_first = s.trim(
        a.maxlen,
        a.minid,
        a.approx,
        a.limit,
        a.policy,
        referenced=partial(is_referenced, s) if a.policy == "ACKED" else None,
        on_delete=partial(drop_refs, s) if a.policy == "DELREF" else None,
    )
    if not removed:
        return None
    if a.maxlen is not None:
        threshold = a.maxlen if not a.approx else s.length
        return [b"MAXLEN", b"=", b"%d" % threshold]
    assert a.minid is not None
    if not a.approx:
        minid = a.minid
    elif a.policy == "KEEPREF":
        minid = s.edge_id(first=True, skip_tombstones=False)
    else:
        minid = a.minid if stop_first is None else min(a.minid, stop_first)
    return [b"MINID", b"=", minid.encode()]


def xtrim(ctx: Ctx) -> Reply:
    a = parse_add_trim(ctx, xadd=False)
    key = ctx.argv[1]
    s = ctx.keyspace.stream(key)
    if s is None:
        return 0
    before = s.length
    trim = _trim(s, a)
    if trim is None:
        return 0
    ctx.touch(key)
    effect: Argv = [b"XTRIM", key, *trim]
    if a.policy != "KEEPREF":
        effect.append(a.policy.encode())
    ctx.propagate(effect)
    return before - s.length
