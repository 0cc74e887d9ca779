"""XAPPEND: the effect of a batched `XADD *` run (internal; what `Engine.xadd_many` ships).

    XAPPEND key first-id counts element ...

appends `len(counts)` entries with the consecutive IDs first-id, first-id + 1, ... where
entry i is the next `counts[i]` elements (field, value, ...). `counts` is a comma-separated
list of decimal element counts, e.g. `XAPPEND s 1700000000000-0 2,4 f v f v g w`. Replaying it
is the same as one `XADD key <id> ...` per entry (same IDs, entries_added, node bytes for the
same node limits), but it is one effect, one log record and one `append_many` on a replica.

All-or-nothing, like the batch it stands for: an ID not greater than the stream's last ID,
bad counts, an element run too large or IDs running out raise and change nothing.
Reply: the last ID appended.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import accumulate, chain, pairwise
from typing import Final

from ..context import Argv, Ctx
from ..errors import StreamError, syntax_error, wrong_arity
from ..ids import MAX_ID, MIN_ID, StreamID, parse_strict
from ..reply import Reply
from ..stream import LISTPACK_MAX_SIZE
from .add_trim import id_exhausted

_MAX_IDV: Final = (1 << 128) - 1


def effect(key: bytes, first: bytes, entries: Sequence[Sequence[bytes]]) -> Argv:
    """The XAPPEND argv for `entries` appended from the ID `first` (already formatted)."""
    counts = b",".join([b"%d" % len(fv) for fv in entries])
    return [b"XAPPEND", key, first, counts, *chain.from_iterable(entries)]


def xappend(ctx: Ctx) -> Reply:
    argv = ctx.argv
    key = argv[1]
    first = parse_strict(argv[2])
    entries = split_entries(argv[3], argv, 4)
    s = ctx.keyspace.stream(key)
    if s is not None and first <= s.last_id:
        raise StreamError(
            "The ID specified in XADD is equal or smaller than the target stream top item"
        )
    if first == MIN_ID:
        raise StreamError("The ID specified in XADD must be greater than 0-0")
    check_room(first, entries)
    if s is None:
        s = ctx.keyspace.stream_or_create(key, ctx.config.idmp)
    cfg = ctx.config
    s.append_many(first, entries, cfg.node_max_bytes, cfg.node_max_entries)
    ctx.signal(key)
    ctx.touch(key)
    ctx.propagate(list(argv))
    return s.last_id.encode()


def split_entries(counts_arg: bytes, argv: Argv, start: int) -> list[Argv]:
    """The flat elements argv[start:] cut into entries by the comma-separated counts."""
    try:
        counts = [int(c) for c in counts_arg.split(b",")]
    except ValueError:
        raise syntax_error() from None
    if any(c < 2 or c % 2 for c in counts):
        raise wrong_arity("xadd")
    if sum(counts) != len(argv) - start:
        raise syntax_error()
    ends = list(accumulate(counts, initial=start))
    return [argv[a:b] for a, b in pairwise(ends)]


def check_room(first: StreamID, entries: Sequence[Sequence[bytes]]) -> None:
    """IDs left for every entry, and no entry too large (streamAppendItem's checks)."""
    if first == MAX_ID and len(entries) > 1:
        raise id_exhausted()
    if len(entries) - 1 > _MAX_IDV - (first.ms << 64 | first.seq):
        raise id_exhausted()
    for fv in entries:
        if sum(map(len, fv)) > LISTPACK_MAX_SIZE:
            raise StreamError("Elements are too large to be stored")
