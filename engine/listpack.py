"""listpack: Redis's compact list of strings and integers, in a `bytearray`.

    <total-bytes:u32le> <num-elements:u16le> <element> ... <element> <end:0xFF>

Every element is `<encoding-type+data> <backlen>`. The backlen holds the length of the
encoding+data part in 1..5 bytes, written so that it can be read right to left: the byte nearest
the next element carries the lowest 7 bits, and every byte but the leftmost has its high bit set.
That is what lets a stream node be walked from its end.

    encoding byte   element                         range / length
    0xxxxxxx        7-bit unsigned int              0..127
    10xxxxxx        6-bit length string             len < 64
    110xxxxx yyyy   13-bit signed int               -4096..4095
    1110xxxx yyyy   12-bit length string            len < 4096
    11110000 <u32>  32-bit length string            anything longer
    0xF1 / F2 / F3 / F4   16 / 24 / 32 / 64-bit signed int, little endian
    0xFF            end of listpack

A string that is the canonical decimal form of an int64 (`0`, `-5`, `42`; not `05`, `+5`, `-0`)
is stored as an integer, as Redis's lpAppend does, so node byte sizes match Redis's exactly.
Decoding gives back `int` for integer elements; callers that need the string form format it
with `b"%d"`, which reproduces the original bytes because only canonical forms are converted.

The element count saturates at 65535 ("unknown"), as in Redis; counts never shrink here
because stream nodes only append or replace elements.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from typing import Final

HEADER_SIZE: Final = 6
EOF_BYTE: Final = 0xFF
END: Final = b"\xff"  # the end byte, as the last part of what append_ended appends
NUMELE_UNKNOWN: Final = 65535
_INT64_MIN: Final = -(1 << 63)
_INT64_MAX: Final = (1 << 63) - 1
_U32: Final = struct.Struct("<I")
_U16: Final = struct.Struct("<H")
_HEADER: Final = struct.Struct("<IH")  # total-bytes, num-elements
_I16: Final = struct.Struct("<h")
_I32: Final = struct.Struct("<i")
_I64: Final = struct.Struct("<q")
# Whole integer elements (encoding byte, value, backlen) in one pack; 24-bit packs as a u32
# whose low byte is the encoding byte.
ENC16: Final[struct.Struct] = struct.Struct("<BhB")
ENC24: Final[struct.Struct] = struct.Struct("<IB")
ENC32: Final[struct.Struct] = struct.Struct("<BiB")
ENC64: Final[struct.Struct] = struct.Struct("<BqB")

Element = int | bytes


def _backlen(n: int) -> bytes:
    if n <= 127:
        return bytes((n,))
    if n < 16383:
        return bytes((n >> 7, (n & 127) | 128))
    if n < 2097151:
        return bytes((n >> 14, ((n >> 7) & 127) | 128, (n & 127) | 128))
    if n < 268435455:
        return bytes((n >> 21, ((n >> 14) & 127) | 128, ((n >> 7) & 127) | 128, (n & 127) | 128))
    return bytes(
        (
            n >> 28,
            ((n >> 21) & 127) | 128,
            ((n >> 14) & 127) | 128,
            ((n >> 7) & 127) | 128,
            (n & 127) | 128,
        )
    )


def backlen_size(n: int) -> int:
    """Bytes taken by the backlen of an element whose encoding+data is `n` bytes."""
    if n <= 127:
        return 1
    if n < 16383:
        return 2
    if n < 2097151:
        return 3
    if n < 268435455:
        return 4
    return 5


def _encode_int_uncached(v: int) -> bytes:
    if 0 <= v <= 127:
        return bytes((v, 1))
    if -4096 <= v <= 4095:
        u = v & 0x1FFF
        return bytes((0xC0 | (u >> 8), u & 0xFF, 2))
    if -32768 <= v <= 32767:
        return ENC16.pack(0xF1, v, 3)
    if -8388608 <= v <= 8388607:
        return ENC24.pack(0xF2 | (v & 0xFFFFFF) << 8, 4)
    if -2147483648 <= v <= 2147483647:
        return ENC32.pack(0xF3, v, 5)
    return ENC64.pack(0xF4, v, 9)


# encode_int(v) for -4096 <= v <= 4095 is SMALL_INTS[v + 4096]; hot loops index it directly.
SMALL_INTS: Final[tuple[bytes, ...]] = tuple(_encode_int_uncached(v) for v in range(-4096, 4096))


def encode_int(v: int) -> bytes:
    """One integer element, backlen included. `v` must fit in int64."""
    if -4096 <= v <= 4095:
        return SMALL_INTS[v + 4096]
    return _encode_int_uncached(v)


def int_size(v: int) -> int:
    """len(encode_int(v)). Every size step (128, 4096, 32768, 2**23, 2**31) is a multiple of 128."""
    if 0 <= v <= 127:
        return 2
    if -4096 <= v <= 4095:
        return 3
    if -32768 <= v <= 32767:
        return 4
    if -8388608 <= v <= 8388607:
        return 5
    if -2147483648 <= v <= 2147483647:
        return 6
    return 10


def _as_int64(s: bytes) -> int | None:
    """lpStringToInt64: the value if `s` is a canonical int64 decimal, else None."""
    n = len(s)
    if n == 0 or n > 20:
        return None
    if s.isdigit():
        if s[0] == 48 and n > 1:
            return None
        v = int(s)
        return v if v <= _INT64_MAX else None
    if s[0] == 45 and n > 1:
        d = s[1:]
        if d.isdigit() and d[0] != 48:
            v = -int(d)
            return v if v >= _INT64_MIN else None
    return None


def encode_uint(v: int) -> bytes:
    """encode_int(v) for 0 <= v < 2**63 (a non-negative number: the common case)."""
    if v < 4096:
        return SMALL_INTS[v + 4096]
    if v < 32768:
        return ENC16.pack(0xF1, v, 3)
    if v < 8388608:
        return ENC24.pack(0xF2 | v << 8, 4)
    if v < 2147483648:
        return ENC32.pack(0xF3, v, 5)
    return ENC64.pack(0xF4, v, 9)


# The two constant bytes around a short (6-bit length) string, by length: a string `s` with
# len(s) < 64 that is not a number encodes as STR6_HEAD[len(s)] + s + STR6_BACK[len(s)].
STR6_HEAD: Final[tuple[bytes, ...]] = tuple(bytes((0x80 | n,)) for n in range(64))
STR6_BACK: Final[tuple[bytes, ...]] = tuple(bytes((n + 1,)) for n in range(64))


def encode_str(s: bytes) -> bytes:
    """One element for `s` as lpAppend stores it: an integer if `s` is one, else a string."""
    n = len(s)
    if n and s[0] <= 57 and n <= 20:  # digits and '-' sort below ':'
        v = digits_value(s) if n < 9 else int(s) if s.isdigit() else -1
        if v >= 0:  # the common case, inlined: a non-negative decimal
            # (18 digits always fit: compiled, the comparison leaves machine words)
            if (n == 1 or s[0] != 48) and (n < 19 or v <= _INT64_MAX):
                return encode_uint(v)
        else:
            w = _as_int64(s)
            if w is not None:
                return encode_int(w)
    if n < 64:
        return STR6_HEAD[n] + s + STR6_BACK[n]
    if n < 4096:
        return bytes((0xE0 | (n >> 8), n & 0xFF)) + s + _backlen(n + 2)
    return b"\xf0" + _U32.pack(n) + s + _backlen(n + 5)


def digits_value(s: bytes) -> int:
    """The value of `s` if it is all ASCII digits, else -1; for short `s` (at most 18 bytes:
    compiled, the loop stays in machine words). Compiled, about 100 + 150 instructions a
    digit, where `s.isdigit()` and `int(s)` cost ~1,650 at any length: cheaper below 9."""
    v = 0
    for p in range(len(s)):
        d = s[p] - 48
        if d < 0 or d > 9:
            return -1
        v = v * 10 + d
    return v


def encoded_size(s: bytes) -> int:
    """len(encode_str(s)) without building it."""
    return len(encode_str(s))


def new() -> bytearray:
    """An empty listpack: header and end byte."""
    return bytearray(b"\x07\x00\x00\x00\x00\x00\xff")


def total_bytes(lp: bytes | bytearray) -> int:
    return int(_U32.unpack_from(lp, 0)[0])


def num_elements_header(lp: bytes | bytearray) -> int:
    return int(_U16.unpack_from(lp, 4)[0])


def append(lp: bytearray, encoded: bytes, count: int) -> None:
    """Append `count` already-encoded elements (their concatenation) before the end byte."""
    append_ended(lp, encoded + END, count)


def append_ended(lp: bytearray, encoded: bytes, count: int) -> None:
    """`append` of elements whose concatenation `encoded` is followed by the end byte (END),
    which takes the old one's place: the hot appends join END as their last part.

    One resize (a second one would over-allocate by 1/8), and no copy of `encoded`: a slice
    assignment `lp[-1:-1] = encoded` copies bytes into a new bytearray first (compiled, a
    third of an XADD's listpack write)."""
    del lp[-1]
    lp += encoded
    n = lp[4] | lp[5] << 8
    if n != NUMELE_UNKNOWN:
        n = min(n + count, NUMELE_UNKNOWN)
    _HEADER.pack_into(lp, 0, len(lp), n)


def replace(lp: bytearray, pos: int, encoded: bytes) -> int:
    """Replace the element at `pos` by one encoded element; returns the size change."""
    old = element_size(lp, pos)
    if old == len(encoded):
        lp[pos : pos + old] = encoded
        return 0
    lp[pos : pos + old] = encoded
    _U32.pack_into(lp, 0, len(lp))
    return len(encoded) - old


def element_size(lp: bytes | bytearray, pos: int) -> int:
    """Size of the element at `pos`, backlen included."""
    b = lp[pos]
    if b < 0x80:
        return 2
    if b < 0xC0:
        n = 1 + (b & 0x3F)
    elif b < 0xE0:
        return 3
    elif b < 0xF0:
        n = 2 + (((b & 0x0F) << 8) | lp[pos + 1])
    elif b == 0xF0:
        n = 5 + _U32.unpack_from(lp, pos + 1)[0]
    elif b == 0xF1:
        return 4
    elif b == 0xF2:
        return 5
    elif b == 0xF3:
        return 6
    elif b == 0xF4:
        return 10
    else:
        raise ValueError(f"invalid listpack encoding byte 0x{b:02x} at {pos}")
    return n + backlen_size(n)


def get(lp: bytes | bytearray, pos: int) -> tuple[Element, int]:
    """The element at `pos` and the position of the next one."""
    b = lp[pos]
    if b < 0x80:
        return b, pos + 2
    if b < 0xC0:
        end = pos + 1 + (b & 0x3F)
        return bytes(lp[pos + 1 : end]), end + 1
    if b < 0xE0:
        u = ((b & 0x1F) << 8) | lp[pos + 1]
        return (u - 8192 if u >= 4096 else u), pos + 3
    if b < 0xF0:
        n = ((b & 0x0F) << 8) | lp[pos + 1]
        end = pos + 2 + n
        return bytes(lp[pos + 2 : end]), end + backlen_size(n + 2)
    if b == 0xF0:
        n = _U32.unpack_from(lp, pos + 1)[0]
        end = pos + 5 + n
        return bytes(lp[pos + 5 : end]), end + backlen_size(n + 5)
    if b == 0xF1:
        return _I16.unpack_from(lp, pos + 1)[0], pos + 4
    if b == 0xF2:
        v = int.from_bytes(lp[pos + 1 : pos + 4], "little", signed=True)
        return v, pos + 5
    if b == 0xF3:
        return _I32.unpack_from(lp, pos + 1)[0], pos + 6
    if b == 0xF4:
        return _I64.unpack_from(lp, pos + 1)[0], pos + 10
    raise ValueError(f"invalid listpack encoding byte 0x{b:02x} at {pos}")


def get_int(lp: bytes | bytearray, pos: int) -> int:
    v, _ = get(lp, pos)
    assert isinstance(v, int), "expected an integer element"
    return v


def read_int(lp: bytes | bytearray, pos: int) -> tuple[int, int]:
    """The integer element at `pos` and the position of the next one."""
    b = lp[pos]
    if b < 0x80:
        return b, pos + 2
    if 0xC0 <= b < 0xE0:
        u = ((b & 0x1F) << 8) | lp[pos + 1]
        return (u - 8192 if u >= 4096 else u), pos + 3
    if 0xF1 <= b <= 0xF2:
        return _int16_or_24(lp, pos, b)
    v, nxt = get(lp, pos)
    assert isinstance(v, int), "expected an integer element"
    return v, nxt


# b"%d" % v below 1000 (7-bit integers are the most common integer elements, and an ID's
# seq is mostly small), and the same numbers zero-padded to three digits: decimal() joins two.
DIGITS: Final[tuple[bytes, ...]] = tuple(b"%d" % v for v in range(1000))
DIGITS03: Final[tuple[bytes, ...]] = tuple(b"%03d" % v for v in range(1000))


def decimal(v: int) -> bytes:
    """b"%d" % v in at most one new bytes object: none below 1000 (a shared one), one
    concatenation below a million. Compiled, `b"%d" % v` builds the digits in one object and
    copies them into another."""
    if 0 <= v < 1000:
        return DIGITS[v]
    if 0 < v < 1_000_000:
        return DIGITS[v // 1000] + DIGITS03[v % 1000]
    return b"%d" % v


def get_bytes(lp: bytes, pos: int) -> tuple[bytes, int]:
    """The element at `pos` as the string it was added as, and the position of the next one.

    Integers come back in decimal, which is their original form (see the module comment).
    """
    b = lp[pos]
    if b < 0x80:
        return DIGITS[b], pos + 2
    if b < 0xC0:
        end = pos + 1 + (b & 0x3F)
        return lp[pos + 1 : end], end + 1
    if b < 0xE0:
        u = ((b & 0x1F) << 8) | lp[pos + 1]
        return decimal(u - 8192 if u >= 4096 else u), pos + 3
    if b < 0xF0:
        n = ((b & 0x0F) << 8) | lp[pos + 1]
        end = pos + 2 + n
        return lp[pos + 2 : end], end + (1 if n + 2 <= 127 else 2)
    if b == 0xF1:  # byte by byte: machine words when compiled (see _int16_or_24)
        u = lp[pos + 1] | lp[pos + 2] << 8
        return decimal(u - 0x10000 if u >= 0x8000 else u), pos + 4
    if b == 0xF2:
        u = lp[pos + 1] | lp[pos + 2] << 8 | lp[pos + 3] << 16
        return decimal(u - 0x1000000 if u >= 0x800000 else u), pos + 5
    if b == 0xF4:
        return b"%d" % int64_at(lp, pos + 1), pos + 10
    v, nxt = get(lp, pos)
    return (v if isinstance(v, bytes) else decimal(v)), nxt


def int64_at(lp: bytes, p: int) -> int:
    """The little-endian int64 at `p`, byte by byte: machine-word arithmetic when compiled,
    where struct's unpack would be a call into Python."""
    v = (
        lp[p]
        | lp[p + 1] << 8
        | lp[p + 2] << 16
        | lp[p + 3] << 24
        | lp[p + 4] << 32
        | lp[p + 5] << 40
        | lp[p + 6] << 48
    )
    top = lp[p + 7]
    if top:
        v |= top << 56
        if top >= 0x80:
            v -= 1 << 64
    return v


def append_bytes(lp: bytes, pos: int, out: list[bytes]) -> int:
    """Append get_bytes(lp, pos)'s string to `out`; the next position. Short strings inline
    (the common string element: a slice, with no tuple to return)."""
    b = lp[pos]
    if 0x80 <= b < 0xC0:
        end = pos + 1 + (b & 0x3F)
        out.append(lp[pos + 1 : end])
        return end + 1
    v, pos = get_bytes(lp, pos)
    out.append(v)
    return pos


def _int16_or_24(lp: bytes | bytearray, pos: int, b: int) -> tuple[int, int]:
    """The 16-bit (b = 0xF1) or 24-bit (0xF2) integer at `pos`, and the next position: read
    byte by byte, a native int when compiled (struct's unpack_from is a Python call, and its
    result an object that `%` formats by the generic path)."""
    if b == 0xF1:
        u = lp[pos + 1] | lp[pos + 2] << 8
        return (u - 0x10000 if u >= 0x8000 else u), pos + 4
    u = lp[pos + 1] | lp[pos + 2] << 8 | lp[pos + 3] << 16
    return (u - 0x1000000 if u >= 0x800000 else u), pos + 5


def decode_all(lp: bytes | bytearray, start: int = HEADER_SIZE) -> list[Element]:
    """Every element from `start` to the end, in order (node.collect walks nodes for reads)."""
    out: list[Element] = []
    push = out.append
    pos = start
    i16 = _I16.unpack_from
    i32 = _I32.unpack_from
    i64 = _I64.unpack_from
    u32 = _U32.unpack_from
    while True:
        b = lp[pos]
        if b < 0x80:
            push(b)
            pos += 2
        elif b < 0xC0:
            end = pos + 1 + (b & 0x3F)
            push(bytes(lp[pos + 1 : end]))
            pos = end + 1
        elif b < 0xE0:
            u = ((b & 0x1F) << 8) | lp[pos + 1]
            push(u - 8192 if u >= 4096 else u)
            pos += 3
        elif b < 0xF0:
            n = ((b & 0x0F) << 8) | lp[pos + 1]
            end = pos + 2 + n
            push(bytes(lp[pos + 2 : end]))
            pos = end + (1 if n + 2 <= 127 else 2)
        elif b == 0xFF:
            return out
        elif b == 0xF0:
            n = u32(lp, pos + 1)[0]
            end = pos + 5 + n
            push(bytes(lp[pos + 5 : end]))
            pos = end + backlen_size(n + 5)
        elif b == 0xF1:
            push(i16(lp, pos + 1)[0])
            pos += 4
        elif b == 0xF2:
            push(int.from_bytes(lp[pos + 1 : pos + 4], "little", signed=True))
            pos += 5
        elif b == 0xF3:
            push(i32(lp, pos + 1)[0])
            pos += 6
        elif b == 0xF4:
            push(i64(lp, pos + 1)[0])
            pos += 10
        else:
            raise ValueError(f"invalid listpack encoding byte 0x{b:02x} at {pos}")


def prev(lp: bytes | bytearray, pos: int) -> int:
    """Position of the element before the one at `pos` (or before the end byte)."""
    p = pos - 1
    n = 0
    shift = 0
    while True:
        b = lp[p]
        n |= (b & 127) << shift
        if not b & 128:
            break
        shift += 7
        p -= 1
    return p - n


def build(elements: Iterable[Element]) -> bytearray:
    """A listpack holding `elements` (ints as integers, bytes as lpAppend stores them)."""
    lp = new()
    parts = [encode_int(e) if isinstance(e, int) else encode_str(e) for e in elements]
    append(lp, b"".join(parts), len(parts))
    return lp


def validate(lp: bytes | bytearray) -> int:
    """Check header, encodings and every backlen; returns the element count.

    Raises ValueError describing the first inconsistency.
    """
    n = len(lp)
    if n < HEADER_SIZE + 1:
        raise ValueError("listpack shorter than its header")
    if total_bytes(lp) != n:
        raise ValueError(f"listpack total-bytes {total_bytes(lp)} != actual {n}")
    if lp[-1] != EOF_BYTE:
        raise ValueError("listpack does not end with 0xFF")
    pos = HEADER_SIZE
    count = 0
    while pos < n - 1:
        size = element_size(lp, pos)
        end = pos + size
        if end > n - 1:
            raise ValueError(f"element at {pos} overruns the listpack")
        if prev(lp, end) != pos:
            raise ValueError(f"bad backlen for element at {pos}")
        pos = end
        count += 1
    if pos != n - 1:
        raise ValueError("listpack elements do not end at the end byte")
    hdr = num_elements_header(lp)
    if hdr not in (NUMELE_UNKNOWN, count):
        raise ValueError(f"listpack element count {hdr} != actual {count}")
    if hdr == NUMELE_UNKNOWN and count < NUMELE_UNKNOWN:
        raise ValueError("listpack count saturated below 65535 elements")
    return count
