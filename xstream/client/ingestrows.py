"""Rows of a batched XADD, encoded once into the bytes an Ingest stream sends.

`Client.xadd_many` takes dicts (what a Python user holds) and sends them as `IngestBatch`
messages (proto/xstream/v1/xstream.proto). Building a list of bytes per entry, then a protobuf
message from the lists, cost more CPU than the server's whole append. Here each chunk of rows
goes straight into the message's wire form: the packed `counts` payload (one varint per
entry: its number of elements) and the `elements` field, every element as

    +------+----------------+-----------------+
    | 0x1a | varint length  | the element     |    field 3, wire type 2 (length-delimited)
    +------+----------------+-----------------+

Encoding follows argv.encode (redis-py's Encoder) element by element: str in the client's
encoding, bytes-like as is, int and float as `repr`, a bool or any other type a DataError;
a row that is not a non-empty Mapping is "XADD fields must be a non-empty dict". Errors are
raised for the first bad row, as one row after the other would raise them.

Three ways to the same bytes, tried in this order for each chunk:
  text     every row a dict of at most 63 pairs whose keys and values are all ASCII `str`
           shorter than 128, in an encoding that leaves ASCII as is: framed as text in a few
           passes at C speed (one-byte lengths, one join, one ASCII encode); when every row
           has the same keys in the same order, each key's framing is built once;
  columns  every row a non-empty dict: all keys, then all values through argv.encode, then
           the framing over bytes;
  rows     anything else, or an element that failed to encode: row after row as before, so
           the first bad row raises its error.
Tests hold all three to `IngestBatch.SerializeToString()` of the lists the old path built.

`EncodedRows` is also a `Sequence[Sequence[bytes]]` (each entry's field/value list, decoded
from the wire form when first asked), so a transport without gRPC (EngineTransport) takes it
as it took lists.
"""

from __future__ import annotations

import codecs
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from itertools import chain, repeat
from typing import Any, overload

from xstream.client.exceptions import DataError
from xstream.engine import ingestwire
from xstream.engine.encoded import varint

from .argv import Encodable, encode

# IngestBatch's tags, the reader's (engine/ingestwire.py), framed as the writer sends them.
KEY_TAG = bytes((ingestwire.KEY_TAG,))  # field 1, bytes key
COUNTS_TAG = bytes((ingestwire.COUNTS_TAG,))  # field 2, packed uint32 counts
ELEMENT_TAG = ingestwire.ELEMENT_TAG  # field 3, repeated bytes elements
CONCERN_TAG = bytes((ingestwire.CONCERN_TAG,))  # field 4, WriteConcern concern

ROWS_PER_MESSAGE = 4096  # entries per IngestBatch message of one Ingest stream
NOT_A_DICT = "XADD fields must be a non-empty dict"

_TEXT_TAG = chr(ELEMENT_TAG)  # the text path's tag; a one-byte length is chr(length)
_BYTES_PREFIX = tuple(bytes((ELEMENT_TAG, n)) for n in range(128))
_DOUBLED = bytes((2 * n) & 0xFF for n in range(256))  # pairs -> elements, for n < 64
# Encodings in which an ASCII str encodes to its own characters, one byte each.
_ASCII_SAFE = frozenset({"utf-8", "ascii", "iso8859-1"})


@dataclass(frozen=True, slots=True)
class Chunk:
    """Up to ROWS_PER_MESSAGE entries in IngestBatch's wire form."""

    rows: int  # entries in the chunk (>= 1)
    counts: bytes  # the packed counts payload: each entry's number of elements, as varints
    elements: bytes  # field 3 of every element, in order (tag, length, bytes)


def message(key: bytes, chunk: Chunk, concern: bytes | None = None) -> bytes:
    """One IngestBatch message's bytes, fields in number order as protobuf serializes them
    (an empty key is left out, as proto3 leaves out a default; `concern`: the WriteConcern's
    own bytes, present even when empty, as CopyFrom makes it)."""
    parts = [COUNTS_TAG, varint(len(chunk.counts)), chunk.counts, chunk.elements]
    if key:
        parts[:0] = [KEY_TAG, varint(len(key)), key]
    if concern is not None:
        parts += [CONCERN_TAG, varint(len(concern)), concern]
    return b"".join(parts)


class EncodedRows(Sequence[Sequence[bytes]]):
    """The entries of one xadd_many, as chunks of wire form; a Sequence of their field/value
    lists for transports that want lists (decoded once, when first asked)."""

    __slots__ = ("_entries", "chunks")

    def __init__(self, chunks: list[Chunk]) -> None:
        self.chunks = chunks
        self._entries: list[list[bytes]] | None = None

    @classmethod
    def of_dicts(
        cls, rows: Iterable[Mapping[Any, Encodable]], encoding: str, errors: str
    ) -> EncodedRows:
        """Rows of fields as redis-py's XADD takes them (DataError as module comment says)."""
        listed = rows if isinstance(rows, list) else list(rows)
        chunks = []
        for start in range(0, len(listed), ROWS_PER_MESSAGE):
            part = listed[start : start + ROWS_PER_MESSAGE]
            chunk = _chunk_of_dicts(part, encoding, errors)
            chunks.append(chunk or _chunk_row_by_row(part, encoding, errors))
        return cls(chunks)

    @classmethod
    def of_entries(cls, entries: Sequence[Sequence[bytes]]) -> EncodedRows:
        """Entries already encoded (each a field/value list of bytes), as Transport takes them."""
        if isinstance(entries, EncodedRows):
            return entries
        chunks = []
        for start in range(0, len(entries), ROWS_PER_MESSAGE):
            part = entries[start : start + ROWS_PER_MESSAGE]
            flat = list(chain.from_iterable(part))
            chunks.append(_chunk(len(part), list(map(len, part)), flat))
        return cls(chunks)

    def entries(self) -> list[list[bytes]]:
        if self._entries is None:
            self._entries = [e for c in self.chunks for e in _decode(c)]
        return self._entries

    def __len__(self) -> int:
        return sum(c.rows for c in self.chunks)

    @overload
    def __getitem__(self, i: int) -> Sequence[bytes]: ...

    @overload
    def __getitem__(self, i: slice) -> Sequence[Sequence[bytes]]: ...

    def __getitem__(self, i: int | slice) -> Sequence[bytes] | Sequence[Sequence[bytes]]:
        return self.entries()[i]

    def __iter__(self) -> Iterator[Sequence[bytes]]:
        return iter(self.entries())


@cache
def _ascii_safe(encoding: str) -> bool:
    try:
        return codecs.lookup(encoding).name in _ASCII_SAFE
    except LookupError:
        return False  # the element-by-element path raises what str.encode raises


def _chunk_of_dicts(rows: list[Any], encoding: str, errors: str) -> Chunk | None:
    """Rows that are all non-empty dicts, by whole columns of keys and of values: as text
    when they are ASCII str (module comment), else through argv.encode. None when a row is
    not a non-empty dict, or an element fails to encode: row by row finds the first error."""
    if {*map(type, rows)} != {dict}:
        return None
    pairs = list(map(len, rows))
    if min(pairs) == 0:
        return None
    keys = list(chain.from_iterable(rows))  # a dict iterates its keys, in items() order
    values = list(chain.from_iterable(map(dict.values, rows)))
    if max(pairs) < 64 and _ascii_safe(encoding):
        chunk = _text_chunk(pairs, keys, values)
        if chunk is not None:
            return chunk
    try:
        encoded_keys = list(map(encode, keys, repeat(encoding), repeat(errors)))
        encoded_values = list(map(encode, values, repeat(encoding), repeat(errors)))
    except Exception:  # raised again by the caller, in the rows' order
        return None
    flat = encoded_keys + encoded_keys  # any list of the right length, overwritten
    flat[0::2] = encoded_keys
    flat[1::2] = encoded_values
    return _chunk(len(rows), [2 * n for n in pairs], flat)


def _text_chunk(pairs: list[int], keys: list[Any], values: list[Any]) -> Chunk | None:
    """Every key and value an ASCII str shorter than 128, framed as text; else None."""
    shape = keys[: pairs[0]]
    same_keys = pairs.count(pairs[0]) == len(pairs) and keys == shape * len(pairs)
    if not (_all_str(shape if same_keys else keys) and _all_str(values)):
        return None
    try:  # each length as one character, in a str of them (ValueError: a length >= 256)
        value_lengths = _lengths(values)
        if same_keys:
            words = _same_keys_words(shape, value_lengths, values)
        else:
            words = _pair_words(keys, value_lengths, values)
    except ValueError:  # UnicodeDecodeError included: a length >= 128
        return None
    text = "".join(words)
    if not text.isascii():  # then byte lengths differ from str lengths
        return None
    return Chunk(len(pairs), bytes(pairs).translate(_DOUBLED), text.encode("ascii"))


def _lengths(items: list[str]) -> str:
    """Each item's length as one character (ValueError if one is >= 128)."""
    return bytes(map(len, items)).decode("ascii")


def _pair_words(keys: list[str], value_lengths: str, values: list[str]) -> list[str]:
    """Six words a pair: tag, key length, key, tag, value length, value."""
    words = [_TEXT_TAG] * (6 * len(keys))  # the tags are there already
    words[1::6] = _lengths(keys)
    words[2::6] = keys
    words[4::6] = value_lengths
    words[5::6] = values
    return words


def _same_keys_words(shape: list[str], value_lengths: str, values: list[str]) -> list[str]:
    """The words of rows that all have `shape`'s keys in its order (the usual batch): a key's
    framing and the next value's tag are one word, the same in every row, so each pair is
    three words (that word, the value's length, the value) instead of six."""
    heads = [_TEXT_TAG + _lengths([k]) + k + _TEXT_TAG for k in shape]
    words = [_TEXT_TAG] * (3 * len(values))
    words[0::3] = heads * (len(values) // len(shape))
    words[1::3] = value_lengths
    words[2::3] = values
    return words


def _all_str(items: list[Any]) -> bool:
    """Every item exactly a str (a subclass goes through argv.encode, as redis-py calls its
    own encode)."""
    return list(map(type, items)).count(str) == len(items)


def _chunk_row_by_row(rows: list[Any], encoding: str, errors: str) -> Chunk:
    """Any rows, element by element through argv.encode, row after row: the first bad row
    raises its error."""
    flat: list[bytes] = []
    counts = []
    for fields in rows:
        if (type(fields) is not dict and not isinstance(fields, Mapping)) or not fields:
            raise DataError(NOT_A_DICT)
        before = len(flat)
        flat += [encode(x, encoding, errors) for x in chain.from_iterable(fields.items())]
        counts.append(len(flat) - before)
    return _chunk(len(rows), counts, flat)


def _chunk(rows: int, counts: list[int], flat: list[bytes]) -> Chunk:
    """Frame encoded elements (field 3 each) and pack their entries' counts."""
    lengths = list(map(len, flat))
    words: list[bytes] = [b""] * (2 * len(flat))
    if not lengths or max(lengths) < 128:
        words[0::2] = map(_BYTES_PREFIX.__getitem__, lengths)
    else:
        words[0::2] = [_BYTES_PREFIX[n] if n < 128 else _long_prefix(n) for n in lengths]
    words[1::2] = flat
    packed = bytes(counts) if max(counts) < 128 else b"".join(map(varint, counts))
    return Chunk(rows, packed, b"".join(words))


def _long_prefix(length: int) -> bytes:
    return bytes((ELEMENT_TAG,)) + varint(length)


def _decode(chunk: Chunk) -> list[list[bytes]]:
    """A chunk's entries back as field/value lists (for transports that take lists), read by
    the server's own reader of the wire form (engine/ingestwire.py)."""
    batch = ingestwire.read(message(b"", chunk))
    out = []
    i = 0
    for count in batch.counts:
        out.append(batch.elements[i : i + count])
        i += count
    return out
