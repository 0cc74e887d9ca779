"""An XAPPEND's entries read in place from a record's payload: no bytes object per element.

A replica applies mostly XAPPENDs (commands/append.py), each one record whose payload is one
argv in argvs.py's form:

    +-----------+--------------------------------+-------------------------------------+
    | argc u32  | argc x element len u32         | the elements, concatenated          |
    +-----------+--------------------------------+-------------------------------------+
                 XAPPEND key id counts e e e ...  XAPPEND key id counts e e e ...
                                         `e` -^                          `data` -^

Decoding it makes one bytes object per element (two per field/value pair) that the append
then compares (fields) or copies once more (values) into the listpack. A PackedRun is a
cursor over the entries instead: entry k is the next `counts[k]` elements, from element `e`
(their lengths `lengths[e:]`, read once for the whole payload) and byte `data` on. The node's
append (node.append_packed) compares the fields and reads the numbers where they lie and
slices only each string value it stores.

Invariants: the caller (replay.apply_packed) checked that the elements fill the payload
exactly and that `counts` adds up to them, so no cursor step runs past the payload; `k`, `e`
and `data` always point at the same entry's start.
"""

from __future__ import annotations

import struct


class PackedRun:
    """The entries of one XAPPEND payload from entry `k` on (see the module doc)."""

    def __init__(self, buf: bytes, lengths: list[int], e: int, data: int, counts: list[int]):
        self.buf = buf  # the record's payload (argvs.py's form, one argv)
        self.lengths = lengths  # every element's length, in argv order
        self.e = e  # entry k's first element (its index in `lengths`)
        self.data = data  # where entry k's first element starts in `buf`
        self.counts = counts  # elements per entry (field, value, ...: even, at least 2)
        self.k = 0  # the next entry, 0 .. len(counts)

    def take(self) -> list[bytes]:
        """Entry k's elements (field, value, ...) as bytes; the cursor past it."""
        buf, lengths = self.buf, self.lengths
        out: list[bytes] = []
        data = self.data
        for p in range(self.e, self.e + self.counts[self.k]):
            n = lengths[p]
            out.append(buf[data : data + n])
            data += n
        self.e += len(out)
        self.data = data
        self.k += 1
        return out


def lengths(buf: bytes) -> list[int] | None:
    """The element lengths of the one argv `buf` holds (argvs.py's form), read at once (a
    Python int per element costs a fraction of reading one u32 byte by byte, compiled); None
    if the header runs past `buf` or the elements do not fill the rest of it exactly."""
    end = len(buf)
    if end < 4:
        return None
    argc = buf[0] | buf[1] << 8 | buf[2] << 16 | buf[3] << 24
    data = 4 + 4 * argc
    if data > end:
        return None
    out: list[int] = list(struct.unpack_from(f"<{argc}I", buf, 4))
    total = data
    for n in out:  # compiled, a native loop: a third of sum()'s iterator protocol
        total += n
    return out if total == end else None
