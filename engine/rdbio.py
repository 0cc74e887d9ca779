"""RDB's primitives (rdb.c): lengths, strings in their three encodings, millisecond times.

rdb.py draws the encodings; rdbstream.py and rdb.py build payloads from these.
"""

from __future__ import annotations

import struct
from typing import Final

from . import lzf
from .errors import EngineError
from .ids import string2ll

_I64: Final = struct.Struct("<q")
_U32BE: Final = struct.Struct(">I")
_U64BE: Final = struct.Struct(">Q")
_ENC_INT8, _ENC_INT16, _ENC_INT32, _ENC_LZF = 0, 1, 2, 3
_UINT64_MAX: Final = (1 << 64) - 1


class RdbError(EngineError):
    """A payload that does not hold a value this engine can load (RESTORE's Bad data format)."""


# -- writing ---------------------------------------------------------------------------------


class Writer:
    """Accumulates one payload's pieces."""

    __slots__ = ("parts",)

    def __init__(self) -> None:
        self.parts: list[bytes] = []

    def raw(self, b: bytes) -> None:
        self.parts.append(b)

    def length(self, n: int) -> None:
        """rdbSaveLen (n is a uint64; callers mask signed values)."""
        if n < 1 << 6:
            self.parts.append(bytes((n,)))
        elif n < 1 << 14:
            self.parts.append(bytes((0x40 | n >> 8, n & 0xFF)))
        elif n <= 0xFFFFFFFF:
            self.parts.append(b"\x80" + _U32BE.pack(n))
        else:
            self.parts.append(b"\x81" + _U64BE.pack(n))

    def millis(self, t: int) -> None:
        self.parts.append(_I64.pack(t))

    def string(self, s: bytes) -> None:
        """rdbSaveRawString: an integer encoding, else LZF, else raw."""
        n = len(s)
        if n <= 11:
            v = string2ll(s)
            if v is not None and -(1 << 31) <= v < 1 << 31:
                self.parts.append(_encode_integer(v))
                return
        if n > 20:
            packed = lzf.compress(s, n - 4)
            if packed is not None:
                self.parts.append(b"\xc3")
                self.length(len(packed))
                self.length(n)
                self.parts.append(packed)
                return
        self.length(n)
        self.parts.append(s)


def _encode_integer(v: int) -> bytes:
    if -(1 << 7) <= v < 1 << 7:
        return struct.pack("<Bb", 0xC0 | _ENC_INT8, v)
    if -(1 << 15) <= v < 1 << 15:
        return struct.pack("<Bh", 0xC0 | _ENC_INT16, v)
    return struct.pack("<Bi", 0xC0 | _ENC_INT32, v)


class Reader:
    """Reads the primitives from a payload's body (the footer excluded); RdbError on overrun."""

    __slots__ = ("data", "pos")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def raw(self, n: int) -> bytes:
        end = self.pos + n
        if end > len(self.data):
            raise RdbError("payload truncated")
        b = self.data[self.pos : end]
        self.pos = end
        return b

    def byte(self) -> int:
        return self.raw(1)[0]

    def _length_or_encoding(self) -> tuple[int, bool]:
        b = self.byte()
        kind = b >> 6
        if kind == 0:
            return b & 0x3F, False
        if kind == 1:
            return (b & 0x3F) << 8 | self.byte(), False
        if kind == 3:
            return b & 0x3F, True
        if b == 0x80:
            return _U32BE.unpack(self.raw(4))[0], False
        if b == 0x81:
            return _U64BE.unpack(self.raw(8))[0], False
        raise RdbError(f"unknown length encoding 0x{b:02x}")

    def length(self) -> int:
        n, encoded = self._length_or_encoding()
        if encoded:
            raise RdbError("a string encoding where a length was expected")
        return n

    def millis(self) -> int:
        return int(_I64.unpack(self.raw(8))[0])

    def string(self) -> bytes:
        """rdbGenericLoadStringObject: raw, integer-encoded (as its decimal form) or LZF."""
        n, encoded = self._length_or_encoding()
        if not encoded:
            return self.raw(n)
        if n == _ENC_INT8:
            return b"%d" % struct.unpack("<b", self.raw(1))[0]
        if n == _ENC_INT16:
            return b"%d" % struct.unpack("<h", self.raw(2))[0]
        if n == _ENC_INT32:
            return b"%d" % struct.unpack("<i", self.raw(4))[0]
        if n == _ENC_LZF:
            clen = self.length()
            size = self.length()
            try:
                return lzf.decompress(self.raw(clen), size)
            except lzf.LzfError as e:
                raise RdbError(str(e)) from None
        raise RdbError(f"unknown string encoding {n}")


def as_uint64(v: int) -> int:
    """A signed counter (entries_read -1, ...) as rdbSaveLen's uint64."""
    return v & _UINT64_MAX


def as_int64(v: int) -> int:
    """A uint64 read back into the signed counter it was saved from."""
    return v - (1 << 64) if v >= 1 << 63 else v
