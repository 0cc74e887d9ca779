"""Stream nodes decoded into columns: what a columnar reader (Arrow) builds its arrays from.

XNODES (commands/xnodes.py) answers a range with the stream's nodes as they are: the master ID
and the listpack bytes of each node (node.py draws the layout). `decode_node` walks one such
node and appends its live entries within [start, end] to a `Columns`, one plain list per
column, so that a reader turns each list into an array in one call:

    entry i        ms[i], seq[i]                 the ID's halves (0..2**64-1)
                   ids[i]                        the ID as XRANGE writes it, b"<ms>-<seq>"
                   shapes[i]                     its field names: templates[shapes[i]]
    its values     values[v_i .. v_i + k - 1]    k = len(templates[shapes[i]]), in order,
                                                 v_i the sum of the earlier entries' k

A shape is a stream node's master fields (the SAMEFIELDS entries, nearly all) or the names of
an entry stored with its own fields; each distinct list is kept once, so an entry costs an
index, not a list of names. Values are bytes objects (slices of the node, shared digit
strings for small integers). Integer elements come back in decimal, their original form
(listpack.py), so values are the strings XADD was given, byte for byte, and the entries are
exactly those XRANGE start end returns, in order: tombstones (FLAG_DELETED) are skipped, IDs
are the master's plus the deltas modulo 2**64.

Bad bytes (a node that is not one) raise ValueError, IndexError or AssertionError, never
return wrong rows.
"""

from __future__ import annotations

from typing import Final

from . import listpack as lp_
from .node import FLAG_DELETED, FLAG_SAMEFIELDS, id_bytes, master_fields

_MASK64: Final = (1 << 64) - 1
# The largest int compiled code holds as a machine word (mypyc's short ints): an ID half is
# compared with it first, and with _MASK64 (a boxed int: every comparison with it would box
# the half) only past it.
_SHORT_MAX: Final = (1 << 62) - 1


class Columns:
    """Decoded entries of one page, column by column (see the module comment)."""

    def __init__(self) -> None:
        self.ms: list[int] = []  # the IDs' ms halves, one per entry
        self.seq: list[int] = []  # the IDs' seq halves
        self.ids: list[bytes] = []  # the IDs, b"<ms>-<seq>"
        self.shapes: list[int] = []  # each entry's field names, an index in `templates`
        self.templates: list[list[bytes]] = []  # distinct lists of field names
        self.template_ids: dict[tuple[bytes, ...], int] = {}  # names -> index in templates
        self.values: list[bytes] = []  # every value, entry after entry

    def __len__(self) -> int:
        return len(self.ms)

    def shape(self, names: tuple[bytes, ...]) -> int:
        i = self.template_ids.get(names)
        if i is None:
            i = self.template_ids[names] = len(self.templates)
            self.templates.append(list(names))
        return i


def decode_node(
    out: Columns,
    lp: bytes,
    master_ms: int,
    master_seq: int,
    start_ms: int,
    start_seq: int,
    end_ms: int,
    end_seq: int,
) -> bool:
    """Append the node's live entries with start <= id <= end to `out`. True once an entry
    past `end` is met (the range ends in this node). IDs are compared half by half, each
    half a machine word when compiled."""
    mfields, pos = master_fields(lp)
    master_shape = out.shape(mfields)
    nf = len(mfields)
    stop = len(lp) - 1
    values = out.values
    prefix_ms, prefix = -1, b""  # the last ID's b"<ms>-" (entries share it)
    while pos < stop:
        # -- flags (always a 7-bit int), ms-diff, seq-diff: signed int64, modulo 2**64 --
        flags = lp[pos]
        msd, pos = lp_.read_int(lp, pos + 2)
        sqd, pos = lp_.read_int(lp, pos)
        ms = master_ms + msd
        if (ms < 0 or ms > _SHORT_MAX) and (ms < 0 or ms > _MASK64):
            ms &= _MASK64
        seq = master_seq + sqd
        if (seq < 0 or seq > _SHORT_MAX) and (seq < 0 or seq > _MASK64):
            seq &= _MASK64
        if ms > end_ms or (ms == end_ms and seq > end_seq):
            return True
        same = flags & FLAG_SAMEFIELDS
        if same:
            n = nf
        else:
            n, pos = lp_.read_int(lp, pos)
        if ms < start_ms or (ms == start_ms and seq < start_seq) or flags & FLAG_DELETED:
            for _ in range(n if same else 2 * n):
                pos += lp_.element_size(lp, pos)
            pos += lp_.element_size(lp, pos)  # lp-count
            continue
        # -- the values (and, without SAMEFIELDS, the names before each) --
        if same:
            for _ in range(n):
                pos = lp_.append_bytes(lp, pos, values)
            out.shapes.append(master_shape)
        else:
            names: list[bytes] = []
            for _ in range(n):
                name, pos = lp_.get_bytes(lp, pos)
                names.append(name)
                pos = lp_.append_bytes(lp, pos, values)
            out.shapes.append(out.shape(tuple(names)))
        pos += 2 if lp[pos] < 0x80 else lp_.element_size(lp, pos)  # lp-count
        if ms != prefix_ms:
            prefix_ms, prefix = ms, b"%d-" % ms
        out.ms.append(ms)
        out.seq.append(seq)
        out.ids.append(id_bytes(prefix, seq))
    return False
