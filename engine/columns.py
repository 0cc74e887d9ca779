"""Stream nodes decoded into columns: what a columnar reader (Arrow) builds its arrays from.

XNODES (commands/xnodes.py) answers a range with the stream's nodes as they are: the master ID
and the listpack bytes of each node (node.py draws the layout). `decode_node` walks one such
node and appends its live entries within [start, end] to a `Columns`, one plain list per
column, so that a reader turns each list into an array in one call:

    entry i        seq[i]                        the ID's seq half (0..2**64-1)
                   ids[i]                        the ID as XRANGE writes it, b"<ms>-<seq>"
                   shapes[i]                     its field names: templates[shapes[i]]
    its values     values[v_i .. v_i + k - 1]    k = len(templates[shapes[i]]), in order,
                                                 v_i the sum of the earlier entries' k
    runs of ms     ms_runs[r] from entry         the ID's ms half, one per run of entries
                   ms_starts[r] on               that share it (hundreds, at XADD's rates)

A shape is a stream node's master fields (the SAMEFIELDS entries, nearly all) or the names of
an entry stored with its own fields; each distinct list is kept once, so an entry costs an
index, not a list of names, and none while every entry so far has shape 0 (`shapes` stays
empty until one has another). Nothing is kept per entry of what a run shares: a per-entry
list would box each value and the reader convert each one (`ms_column` and `shape_column`
give plain lists). Values are bytes objects (slices of the node, shared digit
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
        self.seq: list[int] = []  # the IDs' seq halves, one per entry
        self.ids: list[bytes] = []  # the IDs, b"<ms>-<seq>"
        self.ms_runs: list[int] = []  # the IDs' ms halves, one per run of entries sharing it
        self.ms_starts: list[int] = []  # the index of each run's first entry (0 first)
        self.shapes: list[int] = []  # each entry's field names, an index in `templates`;
        # empty while every entry has shape 0
        self.templates: list[list[bytes]] = []  # distinct lists of field names
        self.template_ids: dict[tuple[bytes, ...], int] = {}  # names -> index in templates
        self.values: list[bytes] = []  # every value, entry after entry

    def __len__(self) -> int:
        return len(self.seq)

    def shape(self, names: tuple[bytes, ...]) -> int:
        i = self.template_ids.get(names)
        if i is None:
            i = self.template_ids[names] = len(self.templates)
            self.templates.append(list(names))
        return i

    def ms_column(self) -> list[int]:
        """Every entry's ms half, in order."""
        if not len(self):
            return []
        ends = [*self.ms_starts[1:], len(self)]
        out: list[int] = []
        for ms, start, end in zip(self.ms_runs, self.ms_starts, ends, strict=True):
            out += [ms] * (end - start)
        return out

    def shape_column(self) -> list[int]:
        """Every entry's shape, in order."""
        return self.shapes if self.shapes else [0] * len(self)

    def _note(self, shape: int, ms: int, ms_changed: bool) -> None:
        """What the entry about to be appended does not share with the one before: its
        shape once one is not 0, its ms when it starts a run."""
        if shape or self.shapes:
            if not self.shapes:
                self.shapes = [0] * len(self)
            self.shapes.append(shape)
        if ms_changed and (not self.ms_runs or self.ms_runs[-1] != ms):
            self.ms_runs.append(ms)
            self.ms_starts.append(len(self))


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
            shape = master_shape
        else:
            names: list[bytes] = []
            for _ in range(n):
                name, pos = lp_.get_bytes(lp, pos)
                names.append(name)
                pos = lp_.append_bytes(lp, pos, values)
            shape = out.shape(tuple(names))
        pos += 2 if lp[pos] < 0x80 else lp_.element_size(lp, pos)  # lp-count
        ms_changed = ms != prefix_ms
        if ms_changed:
            prefix_ms, prefix = ms, b"%d-" % ms
        if shape or ms_changed or out.shapes:
            out._note(shape, ms, ms_changed)
        out.seq.append(seq)
        out.ids.append(id_bytes(prefix, seq))
    return False
