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

Hot paths: `append_run` (batched SAMEFIELDS appends, one listpack write per run) and `collect`
(the XRANGE walk) inline the common cases of encode_str (put_element) and get; tests/unit/
test_node_fastpaths.py pins them to the plain definitions, test_xadd_many to one-by-one appends.
"""

from __future__ import annotations

from typing import Final

from . import listpack as lp_
from .ids import StreamID
from .listpack import (
    DIGITS,
    SMALL_INTS,
    STR6_BACK,
    STR6_HEAD,
    encode_int,
    encode_str,
)
from .packed import PackedRun

FLAG_NONE: Final = 0
FLAG_DELETED: Final = 1
FLAG_SAMEFIELDS: Final = 2

Entry = list[bytes]  # field, value, field, value, ...
RangeItem = list[bytes | Entry]  # [id, [field, value, ...]] as XRANGE replies

_MASK64: Final = (1 << 64) - 1
_SIGN64: Final = 1 << 63
_ENC_ZERO: Final = encode_int(0)
_ENC_ONE: Final = encode_int(1)
_ENC_SAME: Final = encode_int(FLAG_SAMEFIELDS)
_ENC_NONE: Final = encode_int(FLAG_NONE)


def delta(a: int, b: int) -> int:
    """`a - b` modulo 2**64, as a signed int64 (how Redis stores ID deltas)."""
    d = (a - b) & _MASK64
    return d - (1 << 64) if d & _SIGN64 else d


def undelta(base: int, d: int) -> int:
    return (base + d) & _MASK64


def create(entry_id: StreamID, fv: list[bytes]) -> bytearray:
    """A new node whose master entry takes the fields of `fv` (field, value, ...), holding
    that one entry."""
    nf = len(fv) >> 1
    parts = [_ENC_ONE, _ENC_ZERO, encode_int(nf)]
    parts.extend(map(encode_str, fv[0::2]))
    parts.append(_ENC_ZERO)
    parts.append(_ENC_SAME)
    parts.append(_ENC_ZERO)
    parts.append(_ENC_ZERO)
    parts.extend(map(encode_str, fv[1::2]))
    parts.append(encode_int(nf + 3))
    lp = lp_.new()
    lp_.append(lp, b"".join(parts), len(parts))
    return lp


def encode_delta(a: int, b: int) -> bytes:
    """The element storing `delta(a, b)`; IDs in one node are mostly a few apart."""
    d = a - b
    if -4096 <= d <= 4095:
        return SMALL_INTS[d + 4096]
    return encode_int(delta(a, b))


def same_fields(fv: list[bytes], mfields: tuple[bytes, ...]) -> bool:
    """Whether the fields of `fv` (field, value, ...) are the master's, in order."""
    nf = len(mfields)
    if len(fv) != 2 * nf:
        return False
    for q in range(nf):  # noqa: SIM110 (all() of a generator: pure Python pays for the frames)
        if fv[2 * q] != mfields[q]:
            return False
    return True


def encode_entry(
    entry_id: StreamID, master_id: StreamID, fv: list[bytes], samefields: bool
) -> tuple[bytes, int]:
    """The encoded elements of one entry (`fv`: field, value, ...) followed by the listpack's
    end byte (for lp_.append_ended), and their count."""
    msd = encode_delta(entry_id.ms, master_id.ms)
    sqd = encode_delta(entry_id.seq, master_id.seq)
    nf = len(fv) >> 1
    if samefields:
        parts = [_ENC_SAME, msd, sqd]
        for p in range(1, len(fv), 2):
            put_element(parts, fv[p])
        parts.append(encode_int(nf + 3))
        parts.append(lp_.END)
        return b"".join(parts), nf + 4
    parts = [_ENC_NONE, msd, sqd, encode_int(nf)]
    for v in fv:
        put_element(parts, v)
    parts.append(encode_int(2 * nf + 4))
    parts.append(lp_.END)
    return b"".join(parts), 2 * nf + 5


def append_entry(
    lp: bytearray,
    live: int,
    entry_id: StreamID,
    master_id: StreamID,
    fv: list[bytes],
    samefields: bool,
) -> None:
    """Append one entry (`fv`: field, value, ...) to a node that holds `live` live entries,
    and count it."""
    enc, n = encode_entry(entry_id, master_id, fv, samefields)
    lp_.append_ended(lp, enc, n)
    if live < 127:
        lp[6] = live + 1  # the 7-bit counter stays one byte
    else:
        lp_.replace(lp, 6, encode_int(live + 1))


def append_run(
    lp: bytearray,
    master_id: StreamID,
    mfields: tuple[bytes, ...],
    elements: list[bytes],
    bounds: list[int],
    i: int,
    first: StreamID,
    max_bytes: int,
    max_entries: int,
) -> int:
    """Append entries i, i + 1, ... with IDs first, first + 1, ... while they carry the
    master's fields and the node has room; one listpack write. Entry k is the field/value
    elements elements[bounds[k] : bounds[k + 1]] (Stream.append_many's batch).

    Returns the index of the first entry not appended. `max_bytes` is the effective byte
    limit (already capped), `max_entries` 0 for none. The result is byte for byte what
    appending them one by one gives: the size test sees the live counter grow as it goes.
    Lists, not Sequences, and every entry's pieces in one list joined once (as
    append_entries): compiled, no slice, tuple or join per entry.
    """
    live, deleted, _ = counts(lp)
    ms, seq = first.ms, first.seq
    stop = len(bounds) - 1
    if max_entries:
        stop = min(stop, i + max_entries - live - deleted)
    stop = min(stop, i + _MASK64 - seq + 1)  # no seq carry inside a run: IDs share one ms
    nf = len(mfields)
    width = 2 * nf  # elements of an entry with the master's fields
    lpc = encode_int(nf + 3)
    mseq = master_id.seq
    msd = encode_delta(ms, master_id.ms)
    head = len(_ENC_SAME) + len(msd) + len(lpc)  # an entry's length but its seq-diff, values
    sqi = seq - mseq + 4096  # the seq-diff's index in SMALL_INTS, while in range
    grow = 128 - live % 128  # entries until the live counter is a multiple of 128 (int_size)
    size = len(lp)
    fields_len = 0
    for f in mfields:
        fields_len += len(f)
    parts: list[bytes] = []  # the pieces of every entry appended, in order
    k = i
    while k < stop:
        a = bounds[k]
        if bounds[k + 1] - a != width or not _has_fields(elements, a, mfields):
            break
        elelen = fields_len  # Redis's size test counts fields and values
        for p in range(a + 1, a + width, 2):
            elelen += len(elements[p])
        if size + elelen >= max_bytes:
            break
        sqd = SMALL_INTS[sqi] if 0 <= sqi < 8192 else encode_delta(seq, mseq)
        parts.append(_ENC_SAME)
        parts.append(msd)
        parts.append(sqd)
        grown = head + len(sqd)
        for p in range(a + 1, a + width, 2):
            grown += put_element(parts, elements[p])
        parts.append(lpc)
        size += grown
        k += 1
        if k - i == grow:  # the live counter's element may have grown by a byte or more
            size += lp_.int_size(live + k - i) - lp_.int_size(live + k - i - 1)
            grow += 128
        seq += 1
        sqi += 1
    if k > i:
        lp_.append(lp, b"".join(parts), (k - i) * (nf + 4))
        lp_.replace(lp, 6, encode_int(live + k - i))
    return k


def _has_fields(elements: list[bytes], a: int, mfields: tuple[bytes, ...]) -> bool:
    """Whether the entry at elements[a:] has the fields `mfields`, in order."""
    return all(elements[a + 2 * q] == mfields[q] for q in range(len(mfields)))


def append_entries(
    lp: bytearray,
    master_id: StreamID,
    mfields: tuple[bytes, ...],
    elements: list[bytes],
    bounds: list[int],
    ids: list[StreamID],
    i: int,
    max_bytes: int,
    max_entries: int,
    first_ms: int = 0,
    first_seq: int = 0,
) -> int:
    """Append entries i, i + 1, ... while the node has room, in one listpack write: entry k
    has the ID ids[k] (ascending; the caller checked), or with `ids` empty the ID
    first_ms-(first_seq + k) (an XAPPEND's; no seq carry, the caller checked), and the
    field/value elements elements[bounds[k] : bounds[k + 1]], any fields (SAMEFIELDS when
    they are the master's).

    Returns the index of the first entry not appended. `max_bytes` is the effective byte
    limit (already capped), `max_entries` 0 for none. Byte for byte what Stream.append once
    per entry gives: the same room test before each entry (the node's size so far plus the
    entry's field and value lengths; live + deleted entries), the live counter grown as it
    goes, the same encodings (encode_entry's). Lists, not Sequences: compiled, they are
    indexed without the sequence protocol.
    """
    live, deleted, _ = counts(lp)
    nf = len(mfields)
    same_lpc = encode_int(nf + 3)
    mms, mseq = master_id.ms, master_id.seq
    size = len(lp)
    parts: list[bytes] = []  # the pieces of every entry appended, in order
    count = 0  # listpack elements added
    n = len(bounds) - 1
    consecutive = not ids
    msd = encode_delta(first_ms, mms)  # every consecutive ID's ms-diff
    k = i
    while k < n:
        if max_entries and live + deleted >= max_entries:
            break
        a, b = bounds[k], bounds[k + 1]
        elelen = 0
        for p in range(a, b):
            elelen += len(elements[p])
        if size + elelen >= max_bytes:
            break
        pairs = (b - a) >> 1
        same = pairs == nf
        if same:
            for q in range(nf):
                if elements[a + 2 * q] != mfields[q]:
                    same = False
                    break
        if consecutive:
            sqd = encode_delta(first_seq + k, mseq)
        else:
            eid = ids[k]
            msd = encode_delta(eid.ms, mms)
            sqd = encode_delta(eid.seq, mseq)
        if same:  # flags, ms-diff, seq-diff, the values, lp-count
            parts.append(_ENC_SAME)
            parts.append(msd)
            parts.append(sqd)
            grown = len(_ENC_SAME) + len(msd) + len(sqd) + len(same_lpc)
            for p in range(a + 1, b, 2):
                grown += put_element(parts, elements[p])
            parts.append(same_lpc)
            count += nf + 4
        else:  # flags, ms-diff, seq-diff, num-fields, the fields and values, lp-count
            num = encode_int(pairs)
            lpc = encode_int(2 * pairs + 4)
            parts.append(_ENC_NONE)
            parts.append(msd)
            parts.append(sqd)
            parts.append(num)
            grown = len(_ENC_NONE) + len(msd) + len(sqd) + len(num) + len(lpc)
            for p in range(a, b):
                grown += put_element(parts, elements[p])
            parts.append(lpc)
            count += 2 * pairs + 5
        live += 1
        size += grown
        if not live & 127:  # the live counter's element may widen (steps are multiples of 128)
            size += lp_.int_size(live) - lp_.int_size(live - 1)
        k += 1
    if k > i:
        parts.append(lp_.END)
        lp_.append_ended(lp, b"".join(parts), count)
        lp_.replace(lp, 6, encode_int(live))
    return k


def append_packed(
    lp: bytearray,
    master_id: StreamID,
    mfields: tuple[bytes, ...],
    run: PackedRun,
    max_bytes: int,
    max_entries: int,
    first_ms: int,
    first_seq: int,
) -> int:
    """append_entries of an XAPPEND read in place (packed.py): entries run.k, run.k + 1, ...
    with the IDs first_ms-(first_seq + k), while the node has room, in one listpack write;
    the run's cursor moved past them. Returns the new run.k.

    WARNING: append_entries's loop with the elements read from the payload (fields compared
    where they lie, each value by put_slice): a change to one is a change to both
    (tests/property/test_packed_apply.py holds them to the same bytes). Fewer pieces to join:
    a same-fields entry's lp-count goes with the next one's flags and ms-diff (`joint`)."""
    live, deleted, _ = counts(lp)
    nf = len(mfields)
    same_lpc = encode_int(nf + 3)
    mseq = master_id.seq
    size = len(lp)
    parts: list[bytes] = []  # the pieces of every entry appended, in order
    count = 0  # listpack elements added
    buf, lengths, ecounts = run.buf, run.lengths, run.counts
    e, data, k = run.e, run.data, run.k
    n = len(ecounts)
    msd = encode_delta(first_ms, master_id.ms)  # every ID's ms-diff
    head = _ENC_SAME + msd  # a same-fields entry's flags and ms-diff
    joint = same_lpc + head  # a same-fields entry's lp-count and the next one's head
    fixed = len(head) + len(same_lpc)
    pending = False  # parts end with a same-fields entry whose lp-count is not in them yet
    i = k
    while k < n:
        if max_entries and live + deleted >= max_entries:
            break
        c = ecounts[k]
        end = e + c  # the next entry's first element
        sqd = encode_delta(first_seq + k, mseq)
        mark = len(parts)  # parts are cut back here if the entry does not go in
        same = c == 2 * nf
        elelen = 0  # the entry's element bytes: its span of the payload
        if same:  # flags, ms-diff, seq-diff, the values, lp-count; each length read once
            parts.append(joint if pending else head)
            parts.append(sqd)
            grown = fixed + len(sqd)
            d = data
            for q in range(nf):
                p = e + 2 * q
                fw = lengths[p]
                vw = lengths[p + 1]
                f = mfields[q]
                if fw != len(f) or buf[d : d + fw] != f:
                    same = False
                    break
                grown += put_slice(parts, buf, d + fw, vw)
                d += fw + vw
            elelen = d - data
            if not same:
                del parts[mark:]
        if same:
            if size + elelen >= max_bytes:
                del parts[mark:]
                break
            pending = True
            count += nf + 4
        else:  # flags, ms-diff, seq-diff, num-fields, the fields and values, lp-count
            elelen = 0
            for p in range(e, end):
                elelen += lengths[p]
            if size + elelen >= max_bytes:
                break
            if pending:
                parts.append(same_lpc)
                pending = False
            d = data
            pairs = c >> 1
            num = encode_int(pairs)
            lpc = encode_int(2 * pairs + 4)
            parts.append(_ENC_NONE)
            parts.append(msd)
            parts.append(sqd)
            parts.append(num)
            grown = len(_ENC_NONE) + len(msd) + len(sqd) + len(num) + len(lpc)
            for p in range(e, end):
                w = lengths[p]
                grown += put_slice(parts, buf, d, w)
                d += w
            parts.append(lpc)
            count += 2 * pairs + 5
        e = end
        data += elelen
        live += 1
        size += grown
        if not live & 127:  # the live counter's element may widen (steps are multiples of 128)
            size += lp_.int_size(live) - lp_.int_size(live - 1)
        k += 1
    if k > i:
        parts.append(same_lpc + lp_.END if pending else lp_.END)
        lp_.append_ended(lp, b"".join(parts), count)
        lp_.replace(lp, 6, encode_int(live))
    run.e, run.data, run.k = e, data, k
    return k


def put_slice(parts: list[bytes], buf: bytes, pos: int, n: int) -> int:
    """put_element(parts, buf[pos : pos + n]) reading the digits in place: a number makes no
    slice, a string one. WARNING: put_element's cases, a change to one is a change to both."""
    if n < 64:
        c = buf[pos] if n else 58
        if c > 57 or (c == 48 and n > 1):  # a string (also the empty one)
            parts.append(STR6_HEAD[n])
            parts.append(buf[pos : pos + n])
            parts.append(STR6_BACK[n])
            return n + 2
        if c >= 48 and n < 19:  # a digit first: a number if every byte is one
            iv = 0
            for p in range(pos, pos + n):
                d = buf[p] - 48
                if d < 0 or d > 9:  # no sign past the first byte: a string
                    parts.append(STR6_HEAD[n])
                    parts.append(buf[pos : pos + n])
                    parts.append(STR6_BACK[n])
                    return n + 2
                iv = (iv << 3) + (iv << 1) + d
            enc = lp_.encode_uint(iv)
            parts.append(enc)
            return len(enc)
    enc = encode_str(buf[pos : pos + n])
    parts.append(enc)
    return len(enc)


def put_element(parts: list[bytes], v: bytes) -> int:
    """Append encode_str(v) to `parts` (in up to three pieces); its length. encode_str with
    its common cases inlined: a short string (a leading 0 makes digits a string), a
    canonical number of up to 18 digits (below 2**63: always an int64), read digit by digit
    (compiled, a fraction of isdigit() and int())."""
    k = len(v)
    if k < 64:
        c = v[0] if k else 58
        if c > 57 or (c == 48 and k > 1):  # a string (also the empty one)
            parts.append(STR6_HEAD[k])
            parts.append(v)
            parts.append(STR6_BACK[k])
            return k + 2
        if c >= 48 and k < 19:  # a digit first: a number if every byte is one
            iv = 0
            for p in range(k):
                d = v[p] - 48
                if d < 0 or d > 9:  # no sign past the first byte: a string
                    parts.append(STR6_HEAD[k])
                    parts.append(v)
                    parts.append(STR6_BACK[k])
                    return k + 2
                iv = (iv << 3) + (iv << 1) + d  # times ten, in machine words (shipped_id)
            enc = lp_.encode_uint(iv)
            parts.append(enc)
            return len(enc)
    enc = encode_str(v)
    parts.append(enc)
    return len(enc)


def counts(lp: bytes | bytearray) -> tuple[int, int, int]:
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
    lp_.replace(lp, 6, encode_int(live))
    lp_.replace(lp, 6 + lp_.element_size(lp, 6), encode_int(deleted))


def master_fields(lp: bytes | bytearray) -> tuple[tuple[bytes, ...], int]:
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


def scan(lp: bytes | bytearray, master_id: StreamID) -> list[tuple[int, int, StreamID]]:
    """Every entry, tombstones included: (position of its flags, flags, id), in order."""
    fields, pos = master_fields(lp)
    nf = len(fields)
    end = len(lp) - 1
    out = []
    mms, mseq = master_id.ms, master_id.seq
    while pos < end:
        start = pos
        flags, pos = lp_.read_int(lp, pos)
        msd, pos = lp_.read_int(lp, pos)
        sqd, pos = lp_.read_int(lp, pos)
        if flags & FLAG_SAMEFIELDS:
            skip = nf
        else:
            n, pos = lp_.read_int(lp, pos)
            skip = 2 * n
        for _ in range(skip + 1):  # values (and fields), then lp-count
            pos += lp_.element_size(lp, pos)
        out.append((start, flags, StreamID((mms + msd) & _MASK64, (mseq + sqd) & _MASK64)))
    return out


def mark_deleted(lp: bytearray, flags_pos: int, flags: int) -> None:
    """Set the DELETED flag of the entry at `flags_pos` (flags stay a 1-byte element)."""
    lp_.replace(lp, flags_pos, encode_int(flags | FLAG_DELETED))


def first_id(lp: bytes | bytearray, master_id: StreamID) -> StreamID:
    """The first entry's ID, tombstones included."""
    _, pos = master_fields(lp)
    _, pos = lp_.get(lp, pos)
    msd, pos = lp_.get(lp, pos)
    sqd, _ = lp_.get(lp, pos)
    assert isinstance(msd, int) and isinstance(sqd, int)
    return StreamID(undelta(master_id.ms, msd), undelta(master_id.seq, sqd))


def last_id(lp: bytes | bytearray, master_id: StreamID) -> StreamID:
    """The last entry's ID, tombstones included, found by walking back with lp-count."""
    return _id_at(lp, _entry_before(lp, len(lp) - 1), master_id)


def _entry_before(lp: bytes | bytearray, end: int) -> int:
    """The flags position of the entry whose lp-count element precedes `end`."""
    pos = lp_.prev(lp, end)  # that entry's lp-count
    for _ in range(lp_.get_int(lp, pos)):
        pos = lp_.prev(lp, pos)
    return pos


def _id_at(lp: bytes | bytearray, flags_pos: int, master_id: StreamID) -> StreamID:
    _, pos = lp_.get(lp, flags_pos)
    msd, pos = lp_.get(lp, pos)
    sqd, _ = lp_.get(lp, pos)
    assert isinstance(msd, int) and isinstance(sqd, int)
    return StreamID(undelta(master_id.ms, msd), undelta(master_id.seq, sqd))


def last_live_id(lp: bytes | bytearray, master_id: StreamID) -> StreamID | None:
    """The last entry's ID that is not a tombstone (None if all are), walking back from the
    end: O(1) for the usual node whose last entry is live (trims call it per freed node)."""
    if not counts(lp)[0]:
        return None
    pos = _entry_before(lp, len(lp) - 1)
    while lp_.get_int(lp, pos) & FLAG_DELETED:  # the flags element
        pos = _entry_before(lp, pos)
    return _id_at(lp, pos, master_id)


def decode_entries(
    lp: bytearray, master_id: StreamID
) -> tuple[list[lp_.Element], list[bytes], int]:
    """The node's elements, its master fields as bytes, and the index of the first entry."""
    els = lp_.decode_all(lp)
    nf = els[2]
    assert isinstance(nf, int)
    mf = [f if isinstance(f, bytes) else b"%d" % f for f in els[3 : 3 + nf]]
    return els, mf, 4 + nf


def collect(
    lp: bytes | bytearray,
    master_id: StreamID,
    start: StreamID,
    end: StreamID,
    out: list[RangeItem],
    limit: int,
    ids: list[StreamID] | None = None,
) -> bool:
    """Append the node's live entries with start <= id <= end to `out`, as XRANGE replies
    them: [b"<ms>-<seq>", [field, value, ...]], and their IDs to `ids` if given.

    Returns True once an ID above `end` is met or `out` reaches `limit` (0 = no limit). The
    hot path of every read: it walks the listpack once, decoding only what it returns. IDs are
    compared half by half: each half fits a machine word when compiled (no 128-bit ints).
    """
    buf = bytes(lp)  # slices of bytes are bytes: one copy per node, not one per element
    mfields, pos = master_fields(buf)
    nf = len(mfields)
    template: list[bytes] = [b""] * (2 * nf)  # [field_1, _, field_2, _, ...]
    template[0::2] = mfields
    mms, mseq = master_id.ms, master_id.seq
    lo_ms, lo_seq = start.ms, start.seq
    hi_ms, hi_seq = end.ms, end.seq
    open_end = hi_ms == _MASK64 and hi_seq == _MASK64  # `+`: no ID is above it
    prefix_ms, prefix = -1, b""  # the last ID's ms and b"<ms>-" (entries share their ms)
    stop = len(buf) - 1
    while pos < stop:
        # -- flags (always a 7-bit int), ms-diff, seq-diff, [num-fields] --
        flags = buf[pos]
        pos += 2
        b = buf[pos]
        if b < 0x80:
            msd = b
            pos += 2
        else:
            msd, pos = lp_.read_int(buf, pos)
        b = buf[pos]
        if b < 0x80:
            sqd = b
            pos += 2
        else:
            sqd, pos = lp_.read_int(buf, pos)
        if flags & FLAG_SAMEFIELDS:
            n = nf
        else:
            n, pos = lp_.read_int(buf, pos)
            n *= 2
        ms = mms + msd
        if ms < 0 or ms >> 64:  # the delta wrapped around 2**64 (see delta())
            ms &= _MASK64
        seq = mseq + sqd
        if seq < 0 or seq >> 64:
            seq &= _MASK64
        # (2**64 - 1 is not a machine word when compiled: `+` skips comparing against it)
        if not open_end and (ms > hi_ms or (ms == hi_ms and seq > hi_seq)):
            return True
        if ms < lo_ms or (ms == lo_ms and seq < lo_seq) or flags & FLAG_DELETED:
            for _ in range(n + 1):  # values (and fields), then lp-count
                pos += lp_.element_size(buf, pos)
            continue
        # -- the values: short strings inline, anything else through get_bytes --
        if flags & FLAG_SAMEFIELDS:
            fv = template[:]
            for k in range(1, 2 * nf, 2):
                b = buf[pos]
                if 0x80 <= b < 0xC0:
                    e = pos + 1 + (b & 0x3F)
                    fv[k] = buf[pos + 1 : e]
                    pos = e + 1
                else:
                    fv[k], pos = lp_.get_bytes(buf, pos)
        else:
            fv = []
            for _ in range(n):
                v, pos = lp_.get_bytes(buf, pos)
                fv.append(v)
        pos += 2 if buf[pos] < 0x80 else lp_.element_size(buf, pos)  # lp-count
        if ms != prefix_ms:
            prefix_ms, prefix = ms, b"%d-" % ms
        out.append([id_bytes(prefix, seq), fv])
        if ids is not None:
            ids.append(StreamID(ms, seq))
        if len(out) == limit:
            return True
    return False


def id_bytes(prefix: bytes, seq: int) -> bytes:
    """An entry's ID, b"<ms>-<seq>", from `prefix` b"<ms>-" (entries share it): one bytes,
    where prefix + b"%d" % seq would build two."""
    return prefix + DIGITS[seq] if seq < 1000 else b"%b%d" % (prefix, seq)


def payload_size(entries: list[RangeItem]) -> int:
    """The bytes of `entries` as `collect` returns them ([id, [field, value, ...]] each),
    plus 3 per ID, field and value: what a reply's size limit charges for them (the
    node floor's max-reply-bytes, xstream/node/slices.py)."""
    size = 0
    for item in entries:
        eid = item[0]
        fv = item[1]
        assert isinstance(eid, bytes) and isinstance(fv, list), item
        size += len(eid) + 3 * (len(fv) + 1)
        for x in fv:
            size += len(x)
    return size
