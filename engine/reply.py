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
    ReplySet       -> set               (RESP3 ~n; RESP2 an array: SMEMBERS, COMMAND INFO's
                                         flags and categories)
    EncodedRun     -> array of entries  (the list [[id, [field, value, ...]], ...]
                                         already in an edge's wire form; only where the
                                         caller asked for it: EntryForm)

Servers turn these into protobuf or RESP (`resp.py`); tests compare them directly.
"""

from __future__ import annotations

from typing import Final, Literal, Union


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


class ReplySet(list["Reply"]):
    """A set's members: an array in RESP2, a set in RESP3."""

    __slots__ = ()


# The form a read answers stream entries in: a reply shape, chosen by the caller that encodes
# the reply (an edge, through Node.execute and Engine.execute's `entries`); the entries are the
# same either way.
#   "lists"  Redis's [[id, [field, value, ...]], ...]: what every caller takes (the default)
#   "resp"   an EncodedRun of RESP (the RESP port's long reads: longreply.py)
#   "protobuf"  an EncodedRun of pb.Entries messages (the gRPC Execute's: chunked.py)
# Only a forward XRANGE answers the last two; any other read (XREVRANGE, XREAD, ...) answers
# lists whatever is asked.
# A Literal, not an Enum: every engine command passes and stores it, and an Enum member's
# lookup costs ~650 instructions on Python 3.11 (an Enum here: +11% instructions for an
# engine XLEN + XRANGE COUNT 1, callgrind), a string constant nothing.
EntryForm = Literal["lists", "resp", "protobuf"]


class EncodedRun:
    """Stream entries as a forward XRANGE replies them, already encoded in an edge's wire
    form (engine/encoded.py writes them straight from the listpacks, with no object per ID or
    value): `pieces` joined are the entries, `count` of them; `last_id` is the last one's ID
    (b"" if none), `size` their payload: their bytes plus 3 per ID, field and value (what
    the node floor's max-reply-bytes charges, node.payload_size).

        "resp"      the items of the entries' array: each entry opens with the CRLF that
                    ends the item before it, and the last one has none after it, so the
                    array is b"*<count>" + pieces + b"\\r\\n" (the same in RESP2 and RESP3)
        "protobuf"  each piece a pb.Entries message (xstream.proto); their concatenation
                    parses as the one message of all the entries
    """

    __slots__ = ("count", "form", "last_id", "pieces", "size")

    def __init__(self, form: EntryForm) -> None:
        self.form = form
        self.pieces: list[bytes] = []
        self.count = 0
        self.last_id = b""
        self.size = 0

    def __len__(self) -> int:
        return self.count

    def __repr__(self) -> str:
        return f"EncodedRun({self.form!r}, {self.count} entries)"

    def extend(self, other: EncodedRun) -> None:
        """Append `other`'s entries (encoded in the same form)."""
        assert other.form == self.form, (self.form, other.form)
        if other.count:
            self.pieces += other.pieces
            self.count += other.count
            self.last_id = other.last_id
            self.size += other.size


Reply = Union[
    int, bytes, None, _NullArray, Status, ReplyMap, PairMap, ReplySet, EncodedRun, "list[Reply]"
]


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
