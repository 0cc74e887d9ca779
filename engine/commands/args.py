"""Argument helpers shared by command parsers: Redis's integer parsing and option words."""

from __future__ import annotations

from ..errors import StreamError, not_integer
from ..ids import string2ll


def parse_ll(arg: bytes, message: str | None = None) -> int:
    """getLongLongFromObjectOrReply: a canonical int64 or the (given) integer error."""
    v = string2ll(arg)
    if v is None:
        raise StreamError(message) if message else not_integer()
    return v


def cstr(arg: bytes) -> bytes:
    """The argument as C sees it: up to its first NUL (Redis matches option words and `*`,
    `~`, `$`, `+`, `>` with strcmp/strcasecmp, so `COUNT\\0x` is COUNT)."""
    nul = arg.find(b"\0")
    return arg if nul < 0 else arg[:nul]


def word(arg: bytes) -> bytes:
    """An option word, case-folded for comparison (Redis uses strcasecmp)."""
    return cstr(arg).lower()
