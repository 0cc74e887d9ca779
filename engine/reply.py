"""Reply values: what a command answers, independent of any wire format.

A reply is built from a few Python types, each standing for one RESP type:

    int            -> integer           (:n)
    bytes          -> bulk string       ($n ... / null bulk is None)
    None           -> null bulk         ($-1; RESP3 `_`)
    NULL_ARRAY     -> null array        (*-1; RESP3 `_`)
    list           -> array             (*n)
    Status         -> simple string     (+OK)
    ReplyMap       -> map               (RESP3 %n; RESP2 a flat array of key, value, ...)
    PairMap        -> map               (RESP3 %n; RESP2 an array of [key, value] pairs:
                                         XREAD / XREADGROUP's per-stream reply)

Servers turn these into protobuf or RESP (`resp.py`); tests compare them directly.
"""

from __future__ import annotations

from typing import Final, Union


class Status(str):
    """A simple-string reply such as OK."""

    __slots__ = ()


class _NullArray:
    """The null array reply (`*-1`), distinct from a null bulk (`None`)."""

    __slots__ = ()
    _instance: _NullArray | None = None

    def __new__(cls) -> _NullArray:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "NULL_ARRAY"

    def __reduce__(self) -> str:
        return "NULL_ARRAY"


NULL_ARRAY: Final = _NullArray()
OK: Final = Status("OK")


class ReplyMap(list["tuple[bytes, Reply]"]):
    """An ordered map reply: a list of (key, value) pairs."""

    __slots__ = ()

    def get(self, key: bytes) -> Reply:
        for k, v in self:
            if k == key:
                return v
        raise KeyError(key)


class PairMap(list["list[Reply]"]):
    """A list of [key, value] pairs: that array in RESP2, a map in RESP3 (XREAD's reply)."""

    __slots__ = ()


Reply = Union[int, bytes, None, _NullArray, Status, ReplyMap, PairMap, "list[Reply]"]


def flatten(reply: Reply) -> Reply:
    """The RESP2 view of a reply: maps become flat arrays, recursively."""
    if isinstance(reply, ReplyMap):
        out: list[Reply] = []
        for k, v in reply:
            out.append(k)
            out.append(flatten(v))
        return out
    if isinstance(reply, list):
        return [flatten(r) for r in reply]  # type: ignore[arg-type]
    return reply
