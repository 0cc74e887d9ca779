"""A forward XRANGE's entries written straight into an edge's wire form (reply.py's EncodedRun).

Where node.collect builds a bytes object per ID and per value (and lists of them) for an
encoder to frame, one walk of each node's listpack here writes the parts of the encoding
itself, joined once per engine call: an ID is a cached head (its framing and b"<ms>-", per
millisecond) and its seq's digits from a table; a value is a cached head (its field's framing
with the value's length header, per node shape and length) and the value, a slice of the
listpack's bytes or a digits table's entry. Two forms (EntryForm):

    resp      entry:  \\r\\n*2\\r\\n$<id len>\\r\\n<id>  \\r\\n*<n>  (\\r\\n$<len>\\r\\n<x>) * n
              (the CRLF that ends each item opens the next one: reply.py's EncodedRun)
    protobuf  pb.Entries:  (0x0a <len> <id>) * entries  0x12 <len> <count varints>
              (0x1a <len> <x>) * elements              (the order upb serializes it in)

A node's master fields (nearly every entry carries them: SAMEFIELDS) are framed once per
length of the value after each (a shape's heads: one part per field and value; a 7-bit
integer value's digits join its head, one part); the master fields are decoded again only
when a node's differ from the last node's. The walk is node.collect's (its skips, its delta
arithmetic): a change to one is a change to both. tests/unit/test_encoded_runs.py holds its
bytes to codec.encode and to protobuf's serialization of collect's entries.
"""

from __future__ import annotations

from typing import Final

from . import listpack as lp_
from .ids import StreamID
from .listpack import DIGITS, DIGITS03, decimal
from .node import _MASK64, FLAG_DELETED, FLAG_SAMEFIELDS, counts, master_fields
from .reply import EncodedRun, EntryForm

_HEAD_LENS: Final = 64  # values this short take a cached head (longer: built per value)
_MAX_SHAPES: Final = 64  # shapes whose heads are kept (the table starts over past it)
# A shape is framed by cached heads only when small: each head copies its field, so a table
# holds up to _HEAD_LENS copies of every field (~300 KB a shape at most, whatever was
# stored); a larger shape's entries are framed field by field, as other entries are.
_SHAPE_MAX_FIELDS: Final = 16
_SHAPE_MAX_BYTES: Final = 256  # its fields' bytes together
_SHAPES: Final[dict[tuple[bool, tuple[bytes, ...]], list[bytes | None]]] = {}


def _varint(n: int) -> bytes:
    out = bytearray()
    while n > 0x7F:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


_VARINTS: Final[tuple[bytes, ...]] = tuple(_varint(n) for n in range(1024))
# An element's own framing before its bytes, by length (below 1024; longer: built)
_RESP_BULK: Final[tuple[bytes, ...]] = tuple(b"\r\n$%d\r\n" % n for n in range(1024))
_PB_ELEMENT: Final[tuple[bytes, ...]] = tuple(b"\x1a" + _varint(n) for n in range(1024))
# An entry's ID framing, by the ID's length (an ID is at most 41 bytes)
_RESP_ID: Final[tuple[bytes, ...]] = tuple(b"\r\n*2\r\n$%d\r\n" % n for n in range(64))
_PB_ID: Final[tuple[bytes, ...]] = tuple(b"\x0a" + _varint(n) for n in range(64))


def varint(n: int) -> bytes:
    """A protobuf varint of non-negative `n`."""
    return _VARINTS[n] if n < 1024 else _varint(n)


def _element_head(resp: bool, m: int) -> bytes:
    """The framing before an element of m bytes (a bulk string; an elements item)."""
    if m < 1024:
        return _RESP_BULK[m] if resp else _PB_ELEMENT[m]
    return b"\r\n$%d\r\n" % m if resp else b"\x1a" + _varint(m)


def _field_head(resp: bool, fields: tuple[bytes, ...], q: int, m: int) -> bytes:
    """Field q of a shaped entry framed with the header of its value of m bytes; in RESP the
    first one opens the entry's array of fields and values."""
    f = fields[q]
    head = _element_head(resp, len(f)) + f + _element_head(resp, m)
    if resp and q == 0:
        return b"\r\n*%d" % (2 * len(fields)) + head
    return head


def _shape_heads(resp: bool, fields: tuple[bytes, ...]) -> list[bytes | None]:
    """The heads table of shape `fields`, kept across reads; [] for a shape too large (its
    entries are framed field by field). Built on first use (None until then):

        q * _HEAD_LENS + m                  field q's head before a value of m bytes
        len(fields) * _HEAD_LENS + q * 128 + v    the same, with the value: v (0-127) in
                                            decimal (a listpack's 7-bit integer element)
    """
    if len(fields) > _SHAPE_MAX_FIELDS or sum(map(len, fields)) > _SHAPE_MAX_BYTES:
        return []
    key = (resp, fields)
    heads = _SHAPES.get(key)
    if heads is None:
        if len(_SHAPES) >= _MAX_SHAPES:
            _SHAPES.clear()
        heads = _SHAPES[key] = [None] * (len(fields) * (_HEAD_LENS + 128))
    return heads


def _master_span(buf: bytes) -> tuple[int, int]:
    """Where a node's master fields start (its num-fields element) and where its first entry
    starts: nodes whose spans hold the same bytes have the same master fields."""
    _, _, start = counts(buf)
    b = buf[start]
    nf = b if b < 0x80 else lp_.read_int(buf, start)[0]
    end = start
    for _ in range(nf + 2):  # num-fields, the fields, the master's 0 terminator
        end += lp_.element_size(buf, end)
    return start, end


class EncodedWalk:
    """One engine call's forward XRANGE, written node by node (`node`), then `finish`ed into
    an EncodedRun of one piece. In RESP the IDs and elements go to one list of parts; in
    protobuf to two, and the counts to a third (a message holds all its IDs, then its counts,
    then its elements): runs of equal counts, each one part."""

    def __init__(self, form: EntryForm, limit: int) -> None:
        self.form: EntryForm = form
        self.resp = form == "resp"
        self.limit = limit  # entries at most (0: no limit)
        self.ids: list[bytes] = []  # parts
        self.elements: list[bytes] = self.ids if self.resp else []
        self.counts: list[bytes] = []  # protobuf: the entries' counts, as varints
        self.run_n = -1  # protobuf: the last entries' count, not in `counts` yet
        self.run_len = 0  # and how many entries in a row had it
        self.count = 0
        self.size = 0  # the payload, as EncodedRun.size counts it
        self.last_ms = -1  # the last entry's ID (last_ms -1: none yet)
        self.last_seq = 0
        self.prefix = b""  # b"<last_ms>-"
        self.id_heads: list[bytes | None] = []  # by seq digits: the ID's framing and prefix
        # the last node's master fields: their bytes in the listpack (_master_span), as a
        # tuple, their heads table (_shape_heads), their payload (bytes + 3 per field + 3 per
        # value)
        self.master = b""
        self.mfields: tuple[bytes, ...] = ()
        self.heads: list[bytes | None] = []
        self.fields_size = 0

    def node(
        self, lp: bytes | bytearray, master_id: StreamID, start: StreamID, end: StreamID
    ) -> bool:
        """Write the node's live entries with start <= id <= end; True once an ID above `end`
        is met or `limit` entries are written (node.collect's walk and return value)."""
        buf = bytes(lp)
        resp = self.resp
        at, pos = _master_span(buf)
        master = buf[at:pos]
        if master != self.master:
            self.master = master
            self.mfields = master_fields(buf)[0]
            self.heads = _shape_heads(resp, self.mfields)
            self.fields_size = sum(map(len, self.mfields)) + 6 * len(self.mfields)
        mfields, heads, fields_size = self.mfields, self.heads, self.fields_size
        nf = len(mfields)
        ints7 = nf * _HEAD_LENS  # where the heads with a 7-bit integer start
        ids, elements, counts_ = self.ids, self.elements, self.counts
        run_n, run_len = self.run_n, self.run_len
        id_table = _RESP_ID if resp else _PB_ID
        id_heads = self.id_heads
        count, size, limit = self.count, self.size, self.limit
        prefix_ms, prefix, last_seq = self.last_ms, self.prefix, self.last_seq
        plen = len(prefix)
        mms, mseq = master_id.ms, master_id.seq
        lo_ms, lo_seq = start.ms, start.seq
        hi_ms, hi_seq = end.ms, end.seq
        open_end = hi_ms == _MASK64 and hi_seq == _MASK64
        stop = len(buf) - 1
        done = False
        while pos < stop:
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
                n = nf  # elements stored: values only
            else:
                n, pos = lp_.read_int(buf, pos)
                n *= 2
            ms = mms + msd
            if ms < 0 or ms >> 64:
                ms &= _MASK64
            seq = mseq + sqd
            if seq < 0 or seq >> 64:
                seq &= _MASK64
            if not open_end and (ms > hi_ms or (ms == hi_ms and seq > hi_seq)):
                done = True
                break
            if ms < lo_ms or (ms == lo_ms and seq < lo_seq) or flags & FLAG_DELETED:
                for _ in range(n + 1):
                    pos += lp_.element_size(buf, pos)
                continue
            # -- the ID: its head (framing and b"<ms>-", cached per ms and length), its seq --
            if ms != prefix_ms:
                prefix_ms, prefix = ms, b"%d-" % ms
                plen = len(prefix)
                id_heads = [None] * 21
            if seq < 1000:
                digits = DIGITS[seq]
                nd = 1 if seq < 10 else 2 if seq < 100 else 3
            else:
                digits = b"%d" % seq
                nd = len(digits)
            m = plen + nd
            h = id_heads[nd]
            if h is None:
                h = id_heads[nd] = id_table[m] + prefix
            ids.append(h)
            ids.append(digits)
            last_seq = seq
            size += m + 3
            # -- the fields and values --
            same = flags & FLAG_SAMEFIELDS
            items = 2 * nf if same else n
            if not resp:
                if items == run_n:
                    run_len += 1
                else:
                    _put_counts(counts_, run_n, run_len)
                    run_n, run_len = items, 1
            if same and heads:
                size += fields_size
                for q in range(nf):
                    b = buf[pos]
                    if b < 0x80:  # a 7-bit integer: its head with its digits, one part
                        k = ints7 + 128 * q + b
                        h = heads[k]
                        m = 1 if b < 10 else 2 if b < 100 else 3
                        if h is None:
                            h = heads[k] = _field_head(resp, mfields, q, m) + DIGITS[b]
                        elements.append(h)
                        size += m
                        pos += 2
                        continue
                    hi: bytes | None = None  # a number's digits before x (x: its last three)
                    if b < 0xC0:
                        m = b & 0x3F
                        e = pos + 1 + m
                        x = buf[pos + 1 : e]
                        pos = e + 1
                    elif b < 0xE0 or b == 0xF1:  # a 13- or 16-bit integer
                        if b == 0xF1:
                            u = buf[pos + 1] | buf[pos + 2] << 8
                            v = u - 0x10000 if u >= 0x8000 else u
                            pos += 4
                        else:
                            u = ((b & 0x1F) << 8) | buf[pos + 1]
                            v = u - 8192 if u >= 4096 else u
                            pos += 3
                        if v >= 1000:
                            hi, x = DIGITS[v // 1000], DIGITS03[v % 1000]
                            m = len(hi) + 3
                        else:
                            x = decimal(v)
                            m = len(x)
                    else:
                        x, pos = lp_.get_bytes(buf, pos)
                        m = len(x)
                    if m < _HEAD_LENS:
                        h = heads[q * _HEAD_LENS + m]
                        if h is None:
                            h = heads[q * _HEAD_LENS + m] = _field_head(resp, mfields, q, m)
                    else:
                        h = _field_head(resp, mfields, q, m)
                    elements.append(h)
                    if hi is not None:
                        elements.append(hi)
                    elements.append(x)
                    size += m
            else:
                if resp:
                    elements.append(b"\r\n*%d" % items)
                size += 3 * items
                for k in range(items):
                    if same and not k & 1:
                        x = mfields[k >> 1]
                    else:
                        x, pos = lp_.get_bytes(buf, pos)
                    m = len(x)
                    elements.append(_element_head(resp, m))
                    elements.append(x)
                    size += m
            pos += 2 if buf[pos] < 0x80 else lp_.element_size(buf, pos)  # lp-count
            count += 1
            if count == limit:
                done = True
                break
        self.count, self.size, self.run_n, self.run_len = count, size, run_n, run_len
        self.last_ms, self.last_seq, self.prefix, self.id_heads = (
            prefix_ms,
            last_seq,
            prefix,
            id_heads,
        )
        return done

    def finish(self) -> EncodedRun:
        """The entries written, as an EncodedRun of one piece (none if there are none)."""
        run = EncodedRun(self.form)
        if not self.count:
            return run
        if self.resp:
            run.pieces.append(b"".join(self.ids))
        else:
            _put_counts(self.counts, self.run_n, self.run_len)
            counts_ = b"".join(self.counts)
            head = b"\x12" + varint(len(counts_))
            run.pieces.append(b"".join([b"".join(self.ids), head, counts_, *self.elements]))
        run.count, run.size = self.count, self.size
        run.last_id = b"%d-%d" % (self.last_ms, self.last_seq)
        return run


def _put_counts(counts_: list[bytes], n: int, times: int) -> None:
    """Append count n `times` times (as varints: a packed field's items)."""
    if times:
        counts_.append(varint(n) * times)
