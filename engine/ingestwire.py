"""An IngestBatch message read from its wire form in one compiled pass (the Ingest edge's decode).

`Client.xadd_many` sends each batch as a protobuf IngestBatch (proto/xstream/v1/xstream.proto):

    field 1  key       bytes               0x0a <varint len> <key>
    field 2  counts    repeated uint32     0x12 <varint len> <varints>   (packed, as upb writes)
                                           0x10 <varint>                 (unpacked: also read)
    field 3  elements  repeated bytes      0x1a <varint len> <element>   (one per field, value)
    field 4  concern   WriteConcern        0x22 <varint len> <message>

Decoded by protobuf's own (upb) parser, every element becomes a Python bytes object twice over
(once for the message's container, once for the list the engine takes), ~3,700 instructions
an entry of three fields; here each element is sliced straight out of the message into the
one list the engine appends from (`Engine.xadd_flat`). Protobuf's rules are kept where a
sender may rely on them: fields in any order, a singular field given twice is its last
value, a message field given twice is merged (its parts are kept, in order, for the edge to
parse as one WriteConcern), a field of an unknown number or of an unexpected wire type is
skipped, a uint32 varint keeps its low 32 bits. Anything that is not a well-formed message
(a truncated field, a varint of more than 10 bytes, a tag past 32 bits or of more than 5
bytes, field number 0, a group or a wire type 6 or 7) raises ValueError, which the edge
answers as an undecodable request; nothing is appended for it.

The edge checks the rest as before: counts adding up to the elements, the key's and the
elements' lengths, the ACL.
"""

from __future__ import annotations

from typing import Final

# The fields' tags (field number << 3 | wire type), as they lead a field on the wire: the
# reader's here and the writer's (xstream/client/ingestrows.py) are these.
# WARNING: the field numbers are IngestBatch's in proto/xstream/v1/xstream.proto.
KEY_TAG: Final = 0x0A  # field 1, wire type 2
COUNTS_TAG: Final = 0x12  # field 2, wire type 2 (packed)
ELEMENT_TAG: Final = 0x1A  # field 3, wire type 2
CONCERN_TAG: Final = 0x22  # field 4, wire type 2
_KEY: Final = KEY_TAG >> 3
_COUNTS: Final = COUNTS_TAG >> 3
_ELEMENTS: Final = ELEMENT_TAG >> 3
_CONCERN: Final = CONCERN_TAG >> 3
_U32: Final = 0xFFFFFFFF
_U64: Final = 0xFFFFFFFFFFFFFFFF


class IngestWire:
    """What the Ingest handler reads of one IngestBatch (the module comment)."""

    def __init__(self) -> None:
        self.key = b""
        self.counts: list[int] = []
        self.elements: list[bytes] = []
        self.concern_parts: list[bytes] = []  # field 4's occurrences, in order

    def has_concern(self) -> bool:
        return bool(self.concern_parts)


def read(raw: bytes) -> IngestWire:
    """An IngestBatch's fields, read from `raw` (ValueError: not a well-formed message)."""
    out = IngestWire()
    elements = out.elements
    end = len(raw)
    i = 0
    while i < end:
        # The usual field first: an element shorter than 128 bytes.
        start_of_tag = i
        if raw[i] == ELEMENT_TAG and i + 1 < end and raw[i + 1] < 0x80:
            start = i + 2
            i = start + raw[i + 1]
            if i > end:
                raise ValueError("truncated element")
            elements.append(raw[start:i])
            continue
        tag, i = read_varint(raw, i, end)
        if tag > _U32 or i - start_of_tag > 5:  # (a tag is a 32-bit varint)
            raise ValueError("malformed tag")
        field = tag >> 3
        wire_type = tag & 7
        if field == 0:
            raise ValueError("field number 0")
        if wire_type == 2:
            length, i = read_varint(raw, i, end)
            start = i
            i = start + length
            if i > end:
                raise ValueError("truncated length-delimited field")
            if field == _ELEMENTS:
                elements.append(raw[start:i])
            elif field == _KEY:
                out.key = raw[start:i]
            elif field == _COUNTS:
                _packed_counts(raw, start, i, out.counts)
            elif field == _CONCERN:
                out.concern_parts.append(raw[start:i])
        elif wire_type == 0:
            value, i = read_varint(raw, i, end)
            if field == _COUNTS:
                out.counts.append(value & _U32)
        elif wire_type == 1:
            i += 8
        elif wire_type == 5:
            i += 4
        else:
            raise ValueError(f"unsupported wire type {wire_type}")
        if i > end:
            raise ValueError("truncated fixed-width field")
    return out


def _packed_counts(raw: bytes, i: int, end: int, counts: list[int]) -> None:
    while i < end:
        byte = raw[i]
        if byte < 0x80:  # the usual count: one byte
            counts.append(byte)
            i += 1
            continue
        value, i = read_varint(raw, i, end)
        counts.append(value & _U32)


def read_varint(raw: bytes, i: int, end: int) -> tuple[int, int]:
    """The varint at raw[i:end] (its low 64 bits) and the index after it; ValueError if it is
    cut short or longer than 10 bytes (also protocol.unframed's reader)."""
    value = 0
    shift = 0
    while shift < 70:
        if i >= end:
            raise ValueError("truncated varint")
        byte = raw[i]
        i += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value & _U64, i
        shift += 7
    raise ValueError("varint longer than 10 bytes")
