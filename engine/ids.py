"""Stream IDs: two unsigned 64-bit integers, `<ms>-<seq>`, ordered as (ms, seq).

Parsing follows Redis's `streamGenericParseIDOrReply` to the byte, quirks included:

* an argument longer than 127 bytes is invalid; parsing stops at the first NUL byte (C strings);
* `-` is 0-0 and `+` is UINT64_MAX-UINT64_MAX, except in strict contexts (XADD, XDEL, ...);
* `<ms>` alone takes a caller-chosen sequence (0 for start bounds, UINT64_MAX for end bounds);
* `<ms>-*` (XADD only) asks for an automatic sequence;
* each number goes through `string2ull`: a canonical signed 64-bit parse first, then a
  `strtoull` fallback that accepts leading whitespace and a sign (`+5`, ` 5`, `05`, and even
  `-1` wrapping to UINT64_MAX when the canonical parse failed, e.g. `-01`).

The rax key of an ID is its 16-byte big-endian encoding, so byte order equals ID order.
"""

from __future__ import annotations

import struct
from typing import Final, final

from .errors import StreamError, invalid_id
from .listpack import DIGITS

UINT64_MAX: Final = (1 << 64) - 1
INT64_MAX: Final = (1 << 63) - 1
INT64_MIN: Final = -(1 << 63)
_KEY: Final = struct.Struct(">QQ")
_SPACES: Final = b" \t\n\v\f\r"
_HASH_MASK: Final = (1 << 61) - 1


@final
class StreamID:
    """An entry ID. Immutable by contract (never assigned after __init__), ordered, hashable.

    A plain class with __slots__ rather than a NamedTuple: compiled with mypyc it is a native
    class whose two fields are machine words (below 2**62) read without a dictionary or a
    descriptor, built without a Python-level __new__, compared by native methods (a quarter of
    a NamedTuple's construction and comparison costs; engine_bench). Unlike a tuple it neither
    unpacks nor equals a plain tuple.
    """

    __slots__ = ("ms", "seq")

    def __init__(self, ms: int, seq: int) -> None:
        self.ms: Final = ms  # milliseconds part, 0..UINT64_MAX
        self.seq: Final = seq  # sequence part, 0..UINT64_MAX

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, StreamID):
            return NotImplemented
        return self.ms == other.ms and self.seq == other.seq

    def __ne__(self, other: object) -> bool:
        if not isinstance(other, StreamID):
            return NotImplemented
        return self.ms != other.ms or self.seq != other.seq

    def __lt__(self, other: StreamID) -> bool:
        return self.ms < other.ms or (self.ms == other.ms and self.seq < other.seq)

    def __le__(self, other: StreamID) -> bool:
        return self.ms < other.ms or (self.ms == other.ms and self.seq <= other.seq)

    def __gt__(self, other: StreamID) -> bool:
        return self.ms > other.ms or (self.ms == other.ms and self.seq > other.seq)

    def __ge__(self, other: StreamID) -> bool:
        return self.ms > other.ms or (self.ms == other.ms and self.seq >= other.seq)

    def __hash__(self) -> int:
        # ms spread by an odd multiplier (a bijection on the low bits, so IDs of one ms and of
        # neighbouring ms land apart), seq mixed in, kept within 61 bits: compiled, machine
        # words for every ms below 2**42 (year 2109), where hash((ms, seq)) built a tuple
        return (self.ms * 1000003 ^ self.seq) & _HASH_MASK

    def __repr__(self) -> str:
        return f"StreamID(ms={self.ms}, seq={self.seq})"

    def __str__(self) -> str:
        return f"{self.ms}-{self.seq}"

    def __reduce__(self) -> tuple[type[StreamID], tuple[int, int]]:
        return StreamID, (self.ms, self.seq)

    def encode(self) -> bytes:
        """The ID as Redis prints it, `<ms>-<seq>`."""
        seq = self.seq
        if seq < 1000:  # mostly: one int to format, not two
            return b"%d-%b" % (self.ms, DIGITS[seq])
        return b"%d-%d" % (self.ms, seq)

    def key(self) -> bytes:
        """The 16-byte big-endian rax key."""
        return _KEY.pack(self.ms, self.seq)

    @staticmethod
    def from_key(key: bytes) -> StreamID:
        ms, seq = _KEY.unpack(key)
        return StreamID(ms, seq)

    def incr(self) -> StreamID | None:
        """The next ID, or None past the maximum (Redis's streamIncrID)."""
        # != and not <: both halves are <= UINT64_MAX, and compiled, an int compares equal to
        # a constant past 62 bits without leaving machine words (< does not)
        if self.seq != UINT64_MAX:
            return StreamID(self.ms, self.seq + 1)
        if self.ms != UINT64_MAX:
            return StreamID(self.ms + 1, 0)
        return None

    def decr(self) -> StreamID | None:
        """The previous ID, or None below 0-0 (Redis's streamDecrID)."""
        if self.seq > 0:
            return StreamID(self.ms, self.seq - 1)
        if self.ms > 0:
            return StreamID(self.ms - 1, UINT64_MAX)
        return None


MIN_ID: Final = StreamID(0, 0)
MAX_ID: Final = StreamID(UINT64_MAX, UINT64_MAX)


def string2ll(s: bytes) -> int | None:
    """Redis's canonical signed 64-bit parse: `0`, or `-?[1-9][0-9]*` within int64."""
    n = len(s)
    if n == 0 or n > 20:
        return None
    if n == 1 and s == b"0":
        return 0
    digits = s[1:] if s[0] == 45 else s  # '-'
    if not digits or not digits.isdigit() or digits[0] == 48:
        return None
    v = int(digits)
    negative = s[0] == 45
    if len(digits) > 18 and v > (-INT64_MIN if negative else INT64_MAX):  # 18 digits always fit
        return None
    return -v if negative else v


def _strtoull(s: bytes) -> int | None:
    """glibc strtoull(s, &end, 10) accepted only if it consumed all of a non-empty `s`."""
    i = 0
    n = len(s)
    while i < n and s[i] in _SPACES:
        i += 1
    neg = False
    if i < n and s[i] in b"+-":
        neg = s[i] == 45
        i += 1
    digits = s[i:]
    if not digits or not digits.isdigit():
        return None
    v = int(digits)
    if v > UINT64_MAX:
        return None  # ERANGE
    return (-v) & UINT64_MAX if neg else v


def string2ull(s: bytes) -> int | None:
    ll = string2ll(s)
    if ll is not None:
        return ll if ll >= 0 else None
    return _strtoull(s)


def parse_id(
    arg: bytes, *, strict: bool = False, missing_seq: int = 0, allow_auto_seq: bool = False
) -> tuple[StreamID, bool]:
    """Parse an ID argument. Returns (id, seq_given); seq_given is False only for `<ms>-*`.

    Raises the invalid-ID error for anything Redis rejects.
    """
    plain = _plain(arg)
    if plain is not None:
        return plain, True
    if len(arg) > 127:
        raise invalid_id()
    nul = arg.find(b"\0")
    if nul >= 0:
        arg = arg[:nul]
    if arg == b"-":
        if strict:
            raise invalid_id()
        return MIN_ID, True
    if arg == b"+":
        if strict:
            raise invalid_id()
        return MAX_ID, True
    ms_part, dash, seq_part = arg.partition(b"-")
    ms = string2ull(ms_part)
    if ms is None:
        raise invalid_id()
    if not dash:
        return StreamID(ms, missing_seq), True
    if allow_auto_seq and seq_part == b"*":
        return StreamID(ms, 0), False
    seq = string2ull(seq_part)
    if seq is None:
        raise invalid_id()
    return StreamID(ms, seq), True


def _plain(arg: bytes) -> StreamID | None:
    """The common form, `<digits>-<digits>` with at most 19 digits a side, else None.

    Every such number is below 2**64, where string2ull's two parses agree with int() (leading
    zeros included), and such an argument is neither too long nor holds a NUL: parse_id's
    answer for it, without its checks.
    """
    ms, dash, seq = arg.partition(b"-")
    if dash and len(ms) < 20 and len(seq) < 20 and ms.isdigit() and seq.isdigit():
        return StreamID(int(ms), int(seq))
    return None


def parse_strict(arg: bytes, missing_seq: int = 0) -> StreamID:
    plain = _plain(arg)
    if plain is not None:
        return plain
    return parse_id(arg, strict=True, missing_seq=missing_seq)[0]


def parse_encoded(arg: bytes) -> StreamID:
    """An ID as StreamID.encode() wrote it (`<ms>-<seq>`, the engine's own replies): no checks."""
    ms, _, seq = arg.partition(b"-")
    return StreamID(int(ms), int(seq))


def parse_loose(arg: bytes, missing_seq: int = 0) -> StreamID:
    return parse_id(arg, missing_seq=missing_seq)[0]


def parse_interval(arg: bytes, *, start: bool) -> StreamID:
    """A range bound: `-`, `+`, an ID, `<ms>`, or an exclusive `(id` (XRANGE, XPENDING, ...)."""
    missing_seq = 0 if start else UINT64_MAX
    if len(arg) > 1 and arg[0] == 40:  # '('
        bound = parse_strict(arg[1:], missing_seq)
        moved = bound.incr() if start else bound.decr()
        if moved is None:
            which = "start" if start else "end"
            raise StreamError(f"invalid {which} ID for the interval")
        return moved
    return parse_loose(arg, missing_seq)


def next_auto_id(last_id: StreamID, now_ms: int) -> StreamID | None:
    """The ID `*` yields: the clock if ahead of last_id, else last_id + 1 (None if exhausted)."""
    if now_ms > last_id.ms:
        return StreamID(now_ms, 0)
    return last_id.incr()
