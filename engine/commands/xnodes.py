"""XNODES: a range of a stream as its nodes, listpack bytes as stored (xstream's own command).

    XNODES key start end COUNT n            (start and end as XRANGE's, `(` for exclusive)

    reply: [next, master-id_1, node_1, master-id_2, node_2, ...]

A bulk reader (the Spark source) wants entries by the hundred thousand. XRANGE builds a list
per entry and the edge encodes it field by field; XNODES instead hands out the nodes that
overlap [start, end] as they are: each node's master ID (`<ms>-<seq>`) and its listpack
(node.py draws the layout; columns.py decodes it, on the reader's side). Its cost is a copy of
the bytes, whatever the entries hold.

The first node may hold entries before `start` and the last one entries after `end`, and
every node may hold tombstones: the reader keeps only live entries with start <= ID <= end,
which are exactly XRANGE start end's. Nodes are added until their live counts (node headers)
reach n or their bytes reach MAX_REPLY_BYTES, at least one node. `next` is the master ID of
the first node not sent, where the next page starts (`XNODES key <next> end ...`, inclusive),
or nil when no node of the range is left. A missing key answers [nil].

Read-only, no effects; replicas answer it from what they have applied.
"""

from __future__ import annotations

from typing import Final

from ..context import Ctx
from ..errors import StreamError, syntax_error
from ..ids import StreamID, parse_interval
from ..node import counts
from ..reply import Reply
from .args import parse_ll, word

MAX_REPLY_BYTES: Final = 64 << 20  # below the gRPC message limit (256 MiB), whatever n is


def xnodes(ctx: Ctx) -> Reply:
    argv = ctx.argv
    first = parse_interval(argv[2], start=True)
    last = parse_interval(argv[3], start=False)
    if len(argv) != 6 or word(argv[4]) != b"count":
        raise syntax_error()
    want = parse_ll(argv[5])
    if want < 1:
        raise StreamError("COUNT must be positive")
    out: list[Reply] = [None]
    s = ctx.keyspace.stream(argv[1])
    if s is None or first > last or not s.length:
        return out
    it = s.rax.seek("<=", first.key())  # the node that may hold `first`
    item = it.next()
    if item is None:
        it = s.rax.seek("^")
        item = it.next()
    live = size = 0
    while item is not None:
        key, lp = item
        master = StreamID.from_key(key)
        if master > last:
            break
        if len(out) > 1 and (live >= want or size >= MAX_REPLY_BYTES):
            out[0] = master.encode()
            break
        out += [master.encode(), bytes(lp)]
        live += counts(lp)[0]
        size += len(lp)
        item = it.next()
    return out
