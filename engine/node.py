"""Stream nodes: one listpack per rax key, holding a master entry and delta-encoded entries.

The rax key of a node is its master ID: the ID of the first entry ever appended to it. Layout
(every box is one listpack element, see listpack.py):

    master entry
    +-------+---------+------------+---------+--/--+---------+---+
    | count | deleted | num-fields | field_1 | ... | field_N | 0 |
    +-------+---------+------------+---------+--/--+---------+---+
    then, per entry, either (fields differ from the master's)
    +-------+---------+----------+------------+---------+---------+--/--+--------+
    | flags | ms-diff | seq-diff | num-fields | field_1 | value_1 | ... |lp-count|
    +-------+---------+----------+------------+---------+---------+--/--+--------+
    or, with the SAMEFIELDS flag, only the values:
    +-------+---------+----------+---------+--/--+---------+--------+
    | flags | ms-diff | seq-diff | value_1 | ... | value_N |lp-count|
    +-------+---------+----------+---------+--/--+---------+--------+

* `count` is the number of live entries, `deleted` the number of tombstones (entries whose
  flags carry DELETED). `count + deleted` is what stream-node-max-entries limits.
* ms-diff and seq-diff are `id - master_id` per half, modulo 2**64, stored as signed int64
  (so an entry 6-0 under master 5-10 stores seq-diff -10, as Redis does).
* lp-count is the number of elements of the entry before it (3 + values, or 4 + 2 * fields),
  so the node can be walked backwards; the master's trailing 0 plays that role for the master.
* A node is never left without live entries by XDEL (it is freed instead); an exact MINID trim
  can leave one whose remaining entries are all tombstones, as Redis does.
"""

from __future__ import annotations

from collections.abc import Sequence

from . import listpack as lp_
from .ids import StreamID

FLAG_NONE = 0
FLAG_DELETED = 1
FLAG_SAMEFIELDS = 2

_MASK64 = (1 << 64) - 1
_SIGN64 = 1 << 63
_ENC_ZERO = lp_.encode_int(0)
_ENC_ONE = lp_.encode_int(1)
_ENC_SAME = lp_.encode_int(FLAG_SAMEFIELDS)
_ENC_NONE = lp_.encode_int(FLAG_NONE)
_encode_int = lp_.encode_int
_encode_str = lp_.encode_str


def delta(a: int, b: int) -> int:
    """`a - b` modulo 2**64, as a signed int64 (how Redis stores ID deltas)."""
    d = (a - b) & _MASK64
    return d - (1 << 64) if d & _SIGN64 else d


def undelta(base: int, d: int) -> int:
    return (base + d) & _MASK64


def create(entry_id: StreamID, fields: Sequence[bytes], values: Sequence[bytes]) -> bytearray:
    """A new node whose master entry takes `fields`, holding one entry."""
    nf = len(fields)
    parts = [_ENC_ONE, _ENC_ZERO, _encode_int(nf)]
    parts.extend(map(_encode_str, fields))
    parts.append(_ENC_ZERO)
    parts.append(_ENC_SAME)
    parts.append(_ENC_ZERO)
    parts.append(_ENC_ZERO)
    parts.extend(map(_encode_str, values))
    parts.append(_encode_int(nf + 3))
    lp = lp_.new()
    lp_.append(lp, b"".join(parts), len(parts))
    return lp


def encode_entry(
    entry_id: StreamID,
    master_id: StreamID,
    fields: Sequence[bytes],
    values: Sequence[bytes],
    samefields: bool,
) -> tuple[bytes, int]:
    """The encoded elements of one entry and their count."""
    msd = _encode_int(delta(entry_id.ms, master_id.ms))
    sqd = _encode_int(delta(entry_id.seq, master_id.seq))
    nf = len(fields)
    if samefields:
        body = b"".join(map(_encode_str, values))
        return b"".join((_ENC_SAME, msd, sqd, body, _encode_int(nf + 3))), nf + 4
    pairs = []
    for f, v in zip(fields, values, strict=True):
        pairs.append(_encode_str(f))
        pairs.append(_encode_str(v))
    body = b"".join(pairs)
    lpc = _encode_int(2 * nf + 4)
    return b"".join((_ENC_NONE, msd, sqd, _encode_int(nf), body, lpc)), 2 * nf + 5


def counts(lp: bytearray) -> tuple[int, int, int]:
    """(live count, deleted count, position of num-fields)."""
    b = lp[6]
    if b < 0x80:
        live, pos = b, 8
    else:
        v, pos = lp_.get(lp, 6)
        assert isinstance(v, int)
        live = v
    b = lp[pos]
    if b < 0x80:
        return live, b, pos + 2
    d, nxt = lp_.get(lp, pos)
    assert isinstance(d, int)
    return live, d, nxt


def set_counts(lp: bytearray, live: int, deleted: int) -> None:
    """Rewrite the master entry's live and deleted counters."""
    lp_.replace(lp, 6, _encode_int(live))
    lp_.replace(lp, 6 + lp_.element_size(lp, 6), _encode_int(deleted))


def master_fields(lp: bytearray) -> tuple[tuple[bytes, ...], int]:
    """The master entry's fields (as bytes) and the position of the first entry."""
    _, _, pos = counts(lp)
    nf, pos = lp_.get(lp, pos)
    assert isinstance(nf, int)
    fields = []
    for _ in range(nf):
        f, pos = lp_.get(lp, pos)
        fields.append(f if isinstance(f, bytes) else b"%d" % f)
    _, pos = lp_.get(lp, pos)  # the master's 0 terminator
    return tuple(fields), pos


def scan(lp: bytearray, master_id: StreamID) -> list[tuple[int, int, StreamID]]:
    """Every entry, tombstones included: (position of its flags, flags, id), in order."""
    fields, pos = master_fields(lp)
    nf = len(fields)
    end = len(lp) - 1
    out = []
    get = lp_.get
    mms, mseq = master_id
    while pos < end:
        start = pos
        flags, pos = get(lp, pos)
        msd, pos = get(lp, pos)
        sqd, pos = get(lp, pos)
        assert isinstance(flags, int) and isinstance(msd, int) and isinstance(sqd, int)
        if flags & FLAG_SAMEFIELDS:
            skip = nf
        else:
            n, pos = get(lp, pos)
            assert isinstance(n, int)
            skip = 2 * n
        for _ in range(skip + 1):  # values (and fields), then lp-count
            pos += lp_.element_size(lp, pos)
        out.append((start, flags, StreamID((mms + msd) & _MASK64, (mseq + sqd) & _MASK64)))
    return out


def mark_deleted(lp: bytearray, flags_pos: int, flags: int) -> None:
    """Set the DELETED flag of the entry at `flags_pos` (flags stay a 1-byte element)."""
    lp_.replace(lp, flags_pos, _encode_int(flags | FLAG_DELETED))


def first_id(lp: bytearray, master_id: StreamID) -> StreamID:
    """The first entry's ID, tombstones included."""
    _, pos = master_fields(lp)
    _, pos = lp_.get(lp, pos)
    msd, pos = lp_.get(lp, pos)
    sqd, _ = lp_.get(lp, pos)
    assert isinstance(msd, int) and isinstance(sqd, int)
    return StreamID(undelta(master_id.ms, msd), undelta(master_id.seq, sqd))


def last_id(lp: bytearray, master_id: StreamID) -> StreamID:
    """The last entry's ID, tombstones included, found by walking back with lp-count."""
    pos = lp_.prev(lp, len(lp) - 1)  # the last entry's lp-count
    lpc = lp_.get_int(lp, pos)
    for _ in range(lpc):
        pos = lp_.prev(lp, pos)
    _, pos = lp_.get(lp, pos)  # flags
    msd, pos = lp_.get(lp, pos)
    sqd, _ = lp_.get(lp, pos)
    assert isinstance(msd, int) and isinstance(sqd, int)
    return StreamID(undelta(master_id.ms, msd), undelta(master_id.seq, sqd))


def decode_entries(
    lp: bytearray, master_id: StreamID
) -> tuple[list[lp_.Element], list[bytes], int]:
    """The node's elements, its master fields as bytes, and the index of the first entry."""
    els = lp_.decode_all(lp)
    nf = els[2]
    assert isinstance(nf, int)
    mf = [f if isinstance(f, bytes) else b"%d" % f for f in els[3 : 3 + nf]]
    return els, mf, 4 + nf
