"""XSPLITS: where to cut a stream range into parts of about equal size (xstream's own command).

    XSPLITS key start end parts [LIMIT n]   (start and end as XRANGE's, `(` for exclusive)

Stream IDs are not dense, so a reader that wants N parallel parts of `(after, last]` cannot
cut the range by arithmetic. The rax already holds natural cut points: every node's key is
the ID of its first entry, and every node's header counts its live entries. XSPLITS walks
the nodes that overlap the range and returns up to `parts - 1` cut IDs, each the ID just
before a node's master ID, chosen so the parts hold about equal numbers of live entries:

    after                                                                     last
      (----- node A -----|----- node B -----|----- node C -----|-- node D --]
                      cut_1 = B.key - 1   cut_2 = C.key - 1
      part 1 = (after, cut_1]   part 2 = (cut_1, cut_2]   part 3 = (cut_2, last]

Counts come from node headers, so the parts are exact at node boundaries and estimates only
for the nodes the range's ends cut through. LIMIT n first clamps the range to end at its n-th
live entry (admission control for a reader taking at most n entries). The range's end is
also clamped to `last_id`; the reply's `end-id` is the end used. The reply (a map, nil for a
missing key) also carries what a reader needs to check freshness and data loss:
`last-generated-id`, `length`, `first-entry-id`, `max-deleted-entry-id`,
`max-trimmed-entry-id` and `entries-added`.
Read-only, no effects; replicas answer it from what they have applied.
"""

from __future__ import annotations

from typing import Final

from ..context import Ctx
from ..errors import StreamError, syntax_error
from ..ids import StreamID, parse_interval
from ..node import FLAG_DELETED, counts, scan
from ..reply import Reply, ReplyMap
from ..stream import Stream
from .args import parse_ll, word

MAX_PARTS: Final = 10_000


def xsplits(ctx: Ctx) -> Reply:
    argv = ctx.argv
    first = parse_interval(argv[2], start=True)  # inclusive, as XRANGE's bounds
    last = parse_interval(argv[3], start=False)
    parts = parse_ll(argv[4])
    if not 1 <= parts <= MAX_PARTS:
        raise StreamError(f"parts must be between 1 and {MAX_PARTS}")
    limit = 0
    if len(argv) > 5:
        if len(argv) != 7 or word(argv[5]) != b"limit":
            raise syntax_error()
        limit = parse_ll(argv[6])
        if limit < 1:
            raise StreamError("LIMIT must be positive")
    s = ctx.keyspace.stream(argv[1])
    if s is None:
        return None
    last = min(last, s.last_id)
    sizes: list[tuple[StreamID, int]] = []  # (master ID, live entries in range) per node
    if first <= last:
        it = s.rax.seek("<=", first.key())  # the node holding `first`, if any
        item = it.next()
        if item is None:
            it = s.rax.seek("^")
            item = it.next()
        while item is not None:
            key, lp = item
            master = StreamID.from_key(key)
            if master > last:
                break
            live, _, _ = counts(lp)
            if master < first or not sizes:  # the range's ends cut through: count exactly
                live = _live_between(lp, master, first, last)
            sizes.append((master, live))
            item = it.next()
        if len(sizes) > 1:  # the last node may end past `last`
            tail_lp = s.rax.find(sizes[-1][0].key())
            assert tail_lp is not None
            sizes[-1] = (sizes[-1][0], _live_between(tail_lp, sizes[-1][0], first, last))
    if limit and sum(n for _, n in sizes) > limit:
        last, sizes = _limit(s, sizes, first, limit)
    cuts, part_counts = _cut(sizes, first, parts)
    return ReplyMap(
        [
            (b"last-generated-id", s.last_id.encode()),
            (b"length", s.length),
            (b"first-entry-id", s.first_id.encode()),
            (b"max-deleted-entry-id", s.max_deleted_entry_id.encode()),
            (b"max-trimmed-entry-id", s.max_trimmed_entry_id.encode()),
            (b"entries-added", s.entries_added),
            (b"end-id", last.encode()),
            (b"splits", [c.encode() for c in cuts]),
            (b"counts", list[Reply](part_counts)),
        ]
    )


def _live_between(lp: bytes | bytearray, master: StreamID, first: StreamID, last: StreamID) -> int:
    return sum(
        1 for _, flags, eid in scan(lp, master) if not flags & FLAG_DELETED and first <= eid <= last
    )


def _limit(
    s: Stream, sizes: list[tuple[StreamID, int]], first: StreamID, limit: int
) -> tuple[StreamID, list[tuple[StreamID, int]]]:
    """Clamp the range to end at its `limit`-th live entry: (that entry's ID, node sizes)."""
    before = 0
    for i, (master, n) in enumerate(sizes):
        if before + n >= limit:
            lp = s.rax.find(master.key())
            assert lp is not None
            live = [e for _, f, e in scan(lp, master) if not f & FLAG_DELETED and e >= first]
            end = live[limit - before - 1]
            return end, [*sizes[:i], (master, limit - before)]
        before += n
    raise AssertionError("the range holds fewer live entries than the limit")


def _cut(
    sizes: list[tuple[StreamID, int]], first: StreamID, parts: int
) -> tuple[list[StreamID], list[int]]:
    """Cut IDs (each just before a node's master ID) and the live entries of each part."""
    total = sum(n for _, n in sizes)
    if parts == 1 or total == 0:
        return [], [total]
    cuts: list[StreamID] = []
    part_counts: list[int] = []
    before = 0  # live entries before the current node
    at_last_cut = 0
    for master, n in sizes:
        # Cut before this node when that lands nearer the next even share than cutting after.
        share = total * (len(cuts) + 1) / parts
        if len(cuts) < parts - 1 and before > at_last_cut and before + n / 2 >= share:
            cut = master.decr()
            if cut is not None and cut >= first:
                cuts.append(cut)
                part_counts.append(before - at_last_cut)
                at_last_cut = before
        before += n
    part_counts.append(before - at_last_cut)
    return cuts, part_counts
