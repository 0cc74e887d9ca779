"""XAPPEND: the effect of a batched `XADD *` run (internal; what `Engine.xadd_many` ships).

    XAPPEND key first-id counts element ...

appends `len(counts)` entries with the consecutive IDs first-id, first-id + 1, ... where
entry i is the next `counts[i]` elements (field, value, ...). `counts` is a comma-separated
list of decimal element counts, e.g. `XAPPEND s 1700000000000-0 2,4 f v f v g w`. Replaying it
is the same as one `XADD key <id> ...` per entry (same IDs, entries_added, node bytes for the
same node limits), but it is one effect, one log record and one `Stream.append_many` on a
replica (the batch's own append: consecutive IDs, the master's fields in one listpack write).

All-or-nothing, like the batch it stands for: an ID not greater than the stream's last ID,
bad counts, an element run too large or IDs running out raise and change nothing.
Reply: the last ID appended.
"""

from __future__ import annotations

from itertools import accumulate
from typing import Final

from ..context import Argv, Ctx
from ..errors import StreamError, syntax_error, wrong_arity
from ..ids import MIN_ID, StreamID, parse_strict
from ..reply import Reply
from ..stream import LISTPACK_MAX_SIZE
from .add_trim import id_exhausted

_MAX_IDV: Final = (1 << 128) - 1


def effect(key: bytes, first: bytes, counts: list[int], flat: list[bytes]) -> Argv:
    """The XAPPEND argv of entries appended from the ID `first` (already formatted): their
    element counts, and all their elements in order."""
    n = counts[0]
    if counts.count(n) == len(counts):  # the usual batch, rows alike: one count, repeated
        text = b",".join([b"%d" % n] * len(counts))
    else:
        text = b",".join([b"%d" % c for c in counts])
    return [b"XAPPEND", key, first, text, *flat]


def xappend(ctx: Ctx) -> Reply:
    argv = ctx.argv
    key = argv[1]
    first = parse_strict(argv[2])
    bounds = entry_bounds(argv[3], len(argv), 4)
    s = ctx.keyspace.stream(key)
    if s is not None and first <= s.last_id:
        raise StreamError(
            "The ID specified in XADD is equal or smaller than the target stream top item"
        )
    if first == MIN_ID:
        raise StreamError("The ID specified in XADD must be greater than 0-0")
    check_room(first, len(bounds) - 1)
    check_sizes(argv, bounds)
    if s is None:
        s = ctx.keyspace.stream_or_create(key, ctx.config.idmp)
    cfg = ctx.config
    s.append_many(first, argv, bounds, cfg.node_max_bytes, cfg.node_max_entries)
    ctx.signal(key)
    ctx.touch(key)
    ctx.propagate(list(argv))
    return s.last_id.encode()


def entry_bounds(counts_arg: bytes, argc: int, start: int) -> list[int]:
    """Where each entry's elements start in the argv, by the comma-separated counts, and
    where the last one ends (`argc`): entry k is argv[bounds[k] : bounds[k + 1]]."""
    bounds = plain_bounds(counts_arg, start)
    if bounds is not None and bounds[-1] == argc:
        return bounds
    return _checked_bounds(counts_arg, argc, start)


def plain_bounds(counts_arg: bytes, start: int) -> list[int] | None:
    """The bounds of counts as `effect` writes them (even decimal counts of 2 or more, one
    comma between two), read digit by digit (a replica reads one per entry of every XAPPEND;
    compiled, 390 instructions per entry where splitting and int() took 1,310); None for
    anything else, which _checked_bounds reads (and refuses) as int() does."""
    bounds = [start]
    at = start
    count = 0
    digits = 0
    for c in counts_arg:
        if 48 <= c <= 57:
            count = count * 10 + c - 48
            digits += 1
        elif c == 44 and digits and count >= 2 and not count & 1:
            at += count
            bounds.append(at)
            count = digits = 0
        else:
            return None
    if not digits or count < 2 or count & 1:
        return None
    bounds.append(at + count)
    return bounds


def _checked_bounds(counts_arg: bytes, argc: int, start: int) -> list[int]:
    """entry_bounds for any counts: int()'s forms (signs, spaces), or the error they raise."""
    try:
        counts = [int(c) for c in counts_arg.split(b",")]
    except ValueError:
        raise syntax_error() from None
    if any(c < 2 or c % 2 for c in counts):
        raise wrong_arity("xadd")
    if sum(counts) != argc - start:
        raise syntax_error()
    return list(accumulate(counts, initial=start))


def check_room(first: StreamID, n: int) -> None:
    """The IDs-exhausted error unless n IDs from `first` (first, first + 1, ...) all fit."""
    if n - 1 > _MAX_IDV - (first.ms << 64 | first.seq):
        raise id_exhausted()


def check_sizes(argv: Argv, bounds: list[int]) -> None:
    """No entry too large (streamAppendItem's check)."""
    for k in range(len(bounds) - 1):
        size = 0
        for p in range(bounds[k], bounds[k + 1]):
            size += len(argv[p])
        if size > LISTPACK_MAX_SIZE:
            raise StreamError("Elements are too large to be stored")
