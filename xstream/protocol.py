"""What an xstream client and server agree on beyond the .proto file: the one module both import.

    MAX_MESSAGE            the largest gRPC message either side sends or accepts
    OFFSET_KEY             metadata `xstream-offset`: a request's offset (WAIT's, a read's
                           floor); an error's trailer: the node's offset
    EPOCH_KEY              metadata `xstream-epoch`: the highest epoch a client has seen; a
                           reply's trailer: the node's epoch
    DB_KEY                 metadata `xstream-db`: the database a request runs in (default 0;
                           Redis's SELECT, per request)
    ERROR_MARK             trailer `xstream-error: 1`: the status details are a Redis error line
    PRIMARY_KEY            trailer `xstream-primary`: on a replica's error, its primary
    write_concern()        acks names ("leader", "quorum", "all") -> a WriteConcern message
    acks_name()            a WriteConcern's acks value -> its name
    to_value / from_value  an engine reply <-> `Value` (the RESP3 type model), lossless
    field_number, varint, framed   a message's wire form built by hand (a long reply's runs,
                           server/chunked.py; a full sync's pieces, primary/replication.py):
                           a length-delimited field is its tag varint (number << 3 | 2), its
                           length varint, its bytes, and parses as the message built whole

Invariants: this module imports only the generated messages (xstream.v1) and the engine's
reply types, never a server floor (xstream.server, xstream.node, roles) nor a server-only
package (grpc_health, grpc_reflection, prometheus_client), so installing the client pulls in
none of them (tests/unit/test_protocol.py checks `sys.modules`).
from_value(to_value(r)) == r for every engine reply r.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol, TypeGuard, cast

from xstream.engine.encoded import varint
from xstream.engine.ingestwire import read_varint
from xstream.engine.reply import (
    NULL_ARRAY,
    EncodedRun,
    PairMap,
    Reply,
    ReplyMap,
    Status,
)
from xstream.v1 import xstream_pb2 as pb

MAX_MESSAGE = 256 << 20  # bytes: gRPC's send and receive limits, on both sides
# Request metadata: the client's last write offset (for WAIT), or on a read its session offset
# (a replica answers once it has applied that far, Node.reach); trailing metadata of an error:
# the node's offset (a write that failed its acks is still applied: WAIT must cover it).
OFFSET_KEY = "xstream-offset"
# Request metadata: the highest epoch the client has seen; trailing metadata: the node's epoch.
EPOCH_KEY = "xstream-epoch"
# Request metadata: the database index the request's commands run in (absent: 0)
DB_KEY = "xstream-db"
ERROR_MARK = ("xstream-error", "1")  # trailing metadata: the status details are an error line
# The ACL user a call runs as, and its password (server/grpcauth.py); without them, the TLS
# client certificate's CN names the user, or the node's default user answers.
USER_KEY = "xstream-user"
PASSWORD_KEY = "xstream-password"
PRIMARY_KEY = "xstream-primary"  # trailing metadata of a replica's error: its primary's address

# ---------------------------------------------------------------- write concerns

ACKS = {"leader": pb.ACKS_LEADER, "quorum": pb.ACKS_QUORUM, "all": pb.ACKS_ALL}
_ACKS_NAMES: dict[int, str] = {v: k for k, v in ACKS.items()}


def write_concern(acks: str = "leader", timeout_ms: int = 0) -> pb.WriteConcern:
    """The WriteConcern a client sends (timeout_ms 0: the server's --acks-timeout-ms)."""
    if acks not in ACKS:
        raise ValueError("acks must be 'leader', 'quorum' or 'all'")
    return pb.WriteConcern(acks=ACKS[acks], timeout_ms=timeout_ms)


def acks_name(acks: int) -> str:
    """A received acks value's name; one this version does not know is "quorum" (the safer
    guess: a newer client asked for more than the leader alone)."""
    return _ACKS_NAMES.get(acks, "quorum")


# ---------------------------------------------------------------- wire form


def field_number(message: type, name: str) -> int:
    """The number of a message's field, from the generated descriptor."""
    return int(message.DESCRIPTOR.fields_by_name[name].number)  # type: ignore[attr-defined]


def framed(number: int, pieces: list[bytes]) -> list[bytes]:
    """A length-delimited field holding `pieces` (joined later, once): tag, length, pieces."""
    size = sum(map(len, pieces))
    return [varint(number << 3 | 2) + varint(size), *pieces]


def unframed(raw: bytes, *numbers: int) -> memoryview | None:
    """The payload of `raw` when it is exactly `framed(numbers[0], framed(numbers[1], ...))`:
    one length-delimited field holding exactly the next, as a view of it (nothing copied);
    None for anything else. Varints are read by the engine's IngestBatch reader."""
    pos = 0
    for number in numbers:
        try:
            tag, pos = read_varint(raw, pos, len(raw))
            size, pos = read_varint(raw, pos, len(raw))
        except ValueError:
            return None
        if tag != number << 3 | 2 or len(raw) - pos != size:
            return None
    return memoryview(raw)[pos:]


# ---------------------------------------------------------------- values


def to_value(reply: Reply) -> pb.Value:
    v = pb.Value()
    _fill(v, reply)
    return v


def _fill(v: pb.Value, reply: Reply) -> None:
    """Build `reply` into `v` in place (nested messages are added, never copied)."""
    if isinstance(reply, bytes):
        v.bulk = reply
    elif isinstance(reply, int):
        v.integer = reply
    elif isinstance(reply, Status):
        v.status = reply
    elif reply is None:
        v.null.SetInParent()
    elif isinstance(reply, ReplyMap):
        m = v.map
        m.keys.extend(k for k, _ in reply)
        for _, x in reply:
            _fill(m.values.add(), x)
    elif isinstance(reply, PairMap):
        m = v.pair_map
        m.keys.extend(p[0] for p in reply)  # type: ignore[misc]
        for p in reply:
            _fill(m.values.add(), p[1])
    elif isinstance(reply, EncodedRun):  # pb.Entries messages already (engine/encoded.py)
        assert reply.form == "protobuf", reply
        if not reply:
            v.array.SetInParent()  # as the empty list
            return
        v.entries.MergeFromString(b"".join(reply.pieces))
    elif isinstance(reply, list):
        # A plain list: ReplyMap and PairMap went above (mypy's narrowing brings them back).
        reply = cast("list[Reply]", reply)
        if _is_entries(reply):
            e = v.entries
            e.ids.extend(item[0] for item in reply)
            e.counts.extend(len(item[1]) for item in reply)
            e.elements.extend(x for item in reply for x in item[1])
            return
        items = v.array.items
        if not reply:
            v.array.SetInParent()
        for r in reply:
            _fill(items.add(), r)
    else:
        assert reply is NULL_ARRAY, reply
        v.null_array.SetInParent()


def _is_entries(reply: list[Reply]) -> TypeGuard[list[list[Any]]]:
    """[[id, [field, value, ...]], ...]: plain lists of bytes, nothing else (lossless).
    (Each item mixes an id and a list, which a list type cannot spell: list[Any].)"""
    if not reply:
        return False
    for item in reply:
        if type(item) is not list or len(item) != 2 or type(item[0]) is not bytes:
            return False
        fv = item[1]
        if type(fv) is not list or not all(type(x) is bytes for x in fv):
            return False
    return True


def from_value(v: pb.Value) -> Reply:
    kind = v.WhichOneof("kind")
    if kind == "bulk":
        return v.bulk
    if kind == "integer":
        return v.integer
    if kind == "entries":
        e = v.entries
        elements: list[Reply] = list(e.elements)
        out: list[Reply] = []
        pos = 0
        for eid, n in zip(e.ids, e.counts, strict=True):
            out.append([eid, elements[pos : pos + n]])
            pos += n
        return out
    if kind == "array":
        return [from_value(x) for x in v.array.items]
    if kind == "status":
        return Status(v.status)
    if kind == "null":
        return None
    if kind == "null_array":
        return NULL_ARRAY
    if kind == "map":
        return ReplyMap(zip(v.map.keys, map(from_value, v.map.values), strict=True))
    if kind == "pair_map":
        keys, values = v.pair_map.keys, v.pair_map.values
        return PairMap([k, from_value(x)] for k, x in zip(keys, values, strict=True))
    raise ValueError(f"unknown Value kind {kind!r}")


# ---------------------------------------------------------------- epoch histories


class EpochStart(Protocol):
    """One step of an epoch history: the epoch and the offset where its primary began."""

    @property
    def epoch(self) -> int: ...

    @property
    def start(self) -> int: ...


def epoch_entries(history: Iterable[EpochStart]) -> list[pb.EpochEntry]:
    return [pb.EpochEntry(epoch=e.epoch, start=e.start) for e in history]


def epoch_pairs(entries: Iterable[pb.EpochEntry]) -> list[tuple[int, int]]:
    """A received history as (epoch, start) pairs, for epochs.history_of to validate."""
    return [(e.epoch, e.start) for e in entries]
