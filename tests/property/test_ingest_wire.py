"""Ingest's decoder (service.read_ingest: engine/ingestwire.py, then the WriteConcern by
protobuf) against protobuf's own parser (upb): the same key, counts, elements and write
concern for any IngestBatch protobuf serializes, and for messages built field by field as
other senders may write them (fields in any order or repeated, unpacked counts, counts past
32 bits, unknown fields of every wire type, wrong wire types); what upb refuses (truncations,
bad wire types, field 0, over-long varints, a damaged concern) it refuses too, with
ValueError or DecodeError, which the gRPC edge answers as an undecodable request."""

from __future__ import annotations

import pytest
from google.protobuf.message import DecodeError
from hypothesis import given, settings
from hypothesis import strategies as st

from xstream import protocol
from xstream.engine import ingestwire
from xstream.engine.encoded import varint
from xstream.node.concern import Acks, WriteConcern
from xstream.server.service import read_ingest
from xstream.v1 import xstream_pb2 as pb


def same_as_upb(raw: bytes) -> None:
    """ingestwire reads `raw` as upb does, or both refuse it."""
    try:
        want = pb.IngestBatch.FromString(raw)
    except DecodeError:
        with pytest.raises((ValueError, DecodeError)):
            read_ingest(raw)
        return
    got = read_ingest(raw)
    assert got.key == want.key
    assert got.counts == list(want.counts)
    assert got.elements == list(want.elements)
    if not want.HasField("concern"):
        assert got.concern is None
    else:
        c = want.concern  # as the other methods' requests read theirs (service._concern)
        assert got.concern == WriteConcern(Acks(protocol.acks_name(c.acks)), c.timeout_ms)


blobs = st.binary(max_size=300)
small_blobs = st.binary(max_size=20)

MANY = settings(max_examples=200)  # cheap examples: more of them than the tier's default


@MANY
@given(
    key=small_blobs,
    counts=st.lists(st.integers(0, 2**32 - 1), max_size=20),
    elements=st.lists(blobs, max_size=30),
    concern=st.none() | st.tuples(st.integers(0, 5), st.integers(0, 2**32 - 1)),
)
def test_what_protobuf_serializes(
    key: bytes, counts: list[int], elements: list[bytes], concern: tuple[int, int] | None
) -> None:
    msg = pb.IngestBatch(key=key, counts=counts, elements=elements)
    if concern is not None:
        msg.concern.CopyFrom(pb.WriteConcern(acks=concern[0], timeout_ms=concern[1]))  # type: ignore[arg-type]
    raw = msg.SerializeToString()
    same_as_upb(raw)
    got = read_ingest(raw)
    assert (got.key, got.counts, got.elements) == (key, counts, elements)


@st.composite
def fields(draw: st.DrawFn) -> bytes:
    """One field as any sender may write it: a known or unknown number, any wire type."""
    number = draw(st.sampled_from([1, 2, 3, 4, 5, 15, 16, 2047, 2**29 - 1]))
    wire_type = draw(st.sampled_from([0, 1, 2, 5, 2, 2]))
    tag = varint(number << 3 | wire_type)
    if wire_type == 0:
        return tag + varint(draw(st.integers(0, 2**64 - 1)))
    if wire_type == 1:
        return tag + draw(st.binary(min_size=8, max_size=8))
    if wire_type == 5:
        return tag + draw(st.binary(min_size=4, max_size=4))
    if number == 2:
        body = b"".join(varint(n) for n in draw(st.lists(st.integers(0, 2**64 - 1), max_size=8)))
    elif number == 4:
        body = pb.WriteConcern(
            acks=draw(st.integers(0, 3)),  # type: ignore[arg-type]
            timeout_ms=draw(st.integers(0, 2**32 - 1)),
        ).SerializeToString()
    else:
        body = draw(blobs)
    return tag + varint(len(body)) + body


@MANY
@given(st.lists(fields(), max_size=12))
def test_messages_built_field_by_field(parts: list[bytes]) -> None:
    same_as_upb(b"".join(parts))


@MANY
@given(st.lists(fields(), min_size=1, max_size=6), st.data())
def test_cut_short_or_damaged(parts: list[bytes], data: st.DataObject) -> None:
    raw = b"".join(parts)
    same_as_upb(raw[: data.draw(st.integers(0, len(raw) - 1))])
    at = data.draw(st.integers(0, len(raw) - 1))
    same_as_upb(raw[:at] + bytes([data.draw(st.integers(0, 255))]) + raw[at + 1 :])


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        (b"\x1a\x05abc", "truncated element"),
        (b"\x1a", "truncated varint"),
        (b"\x0a\x85", "truncated varint"),
        (b"\x02\x00", "field number 0"),
        (b"\xf8\xff\xff\xff\x1f\x00", "malformed tag"),  # past 32 bits
        (b"\x88\x80\x80\x80\x80\x00\x05", "malformed tag"),  # 6 bytes
        (b"\x08" + b"\x80" * 10 + b"\x00", "varint longer than 10 bytes"),
        (b"\x0f", "unsupported wire type 7"),
        (b"\x09\x00", "truncated fixed-width field"),
        (b"\x12\x02\x85", "truncated"),
    ],
)
def test_refusals_say_why(raw: bytes, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        ingestwire.read(raw)
    with pytest.raises(DecodeError):
        pb.IngestBatch.FromString(raw)  # protobuf refuses it too
