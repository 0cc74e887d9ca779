"""ingestrows: rows of dicts into IngestBatch bytes, the same as the lists-and-protobuf path.

The oracle is what xadd_many did before ingestrows: each row checked and encoded element by
element with argv.encode into a list of bytes, then `pb.IngestBatch(key, counts, elements)`
with the concern copied into the first message, serialized by protobuf. Both of ingestrows'
paths (the ASCII text framing and the element-by-element one) must give its bytes, entries
and errors.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping, Sequence
from itertools import accumulate, chain, pairwise
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from xstream.client import Client, DataError, EngineTransport
from xstream.client.argv import encode
from xstream.client.ingestrows import ROWS_PER_MESSAGE, EncodedRows, message
from xstream.engine import Engine, StreamError
from xstream.server.service import batch_counts
from xstream.v1 import xstream_pb2 as pb

CONCERN = pb.WriteConcern(acks=pb.ACKS_QUORUM, timeout_ms=250)


def old_entries(rows: Sequence[Any], encoding: str = "utf-8", errors: str = "strict") -> list[Any]:
    """The entries xadd_many built before: one list of encoded elements per row."""
    out = []
    for fields in rows:
        if (type(fields) is not dict and not isinstance(fields, Mapping)) or not fields:
            raise DataError("XADD fields must be a non-empty dict")
        out.append([encode(x, encoding, errors) for x in chain.from_iterable(fields.items())])
    return out


def old_messages(key: bytes, entries: list[list[bytes]], concern: pb.WriteConcern) -> list[bytes]:
    """The IngestBatch messages the old transport streamed for these entries."""
    out = []
    for i in range(0, len(entries), ROWS_PER_MESSAGE):
        batch = entries[i : i + ROWS_PER_MESSAGE]
        msg = pb.IngestBatch(
            key=key, counts=[len(fv) for fv in batch], elements=[x for fv in batch for x in fv]
        )
        if i == 0:
            msg.concern.CopyFrom(concern)
        out.append(msg.SerializeToString())
    return out


def new_messages(key: bytes, rows: EncodedRows, concern: pb.WriteConcern) -> list[bytes]:
    wire = concern.SerializeToString()
    return [message(key, c, wire if i == 0 else None) for i, c in enumerate(rows.chunks)]


def assert_same(
    rows: Sequence[Any], encoding: str = "utf-8", errors: str = "strict", key: bytes = b"s"
) -> EncodedRows:
    want = old_entries(rows, encoding, errors)
    got = EncodedRows.of_dicts(rows, encoding, errors)
    assert new_messages(key, got, CONCERN) == old_messages(key, want, CONCERN)
    assert new_messages(key, got, pb.WriteConcern()) == old_messages(key, want, pb.WriteConcern())
    assert got.entries() == want
    assert EncodedRows.of_entries(want).chunks == got.chunks
    return got


def test_str_rows_take_the_text_path_and_match() -> None:
    rows = [{"user_id": f"{i:012d}", "action": "click", "amount": "42"} for i in range(1000)]
    assert_same(rows)


def test_rows_with_the_same_keys_and_rows_that_differ_match() -> None:
    """The text path frames the keys once when every row has the same ones in one order."""
    rows = [{"a": str(i), "bb": "x" * (i % 128), "c": ""} for i in range(300)]
    assert_same(rows)
    assert_same([{"".join(["a"]): "1", "bb": "2"}, {"a": "3", "bb": "4"}])  # equal, not same
    assert_same([*rows[:5], {"bb": "1", "a": "2", "c": "3"}, *rows[5:9]])  # another order
    assert_same([*rows[:5], {"a": "1", "bb": "2", "d": "3"}, *rows[5:9]])  # another key
    assert_same([*rows[:5], {"a": "1", "bb": "2"}, *rows[5:9]])  # fewer pairs
    for key in ["é", "k" * 127, "k" * 128, b"raw", 7]:
        assert_same([{key: "v", "z": "w"}] * 3)
    assert_same([{"k": "v", "z": "é"}] * 3)  # a value leaves the text path


@pytest.mark.parametrize(
    "value",
    [
        "",
        "v",
        "x" * 127,
        "x" * 128,  # a two-byte length
        "x" * 20_000,  # three bytes
        "hé",
        "日本語",
        "\U0001f600",
        b"",
        b"\x00\xff raw",
        bytearray(b"ba"),
        memoryview(b"mv"),
        0,
        -7,
        10**30,
        1.5,
        -0.0,
        float("inf"),
        float("nan"),
        1e100,
    ],
    ids=repr,
)
def test_each_kind_of_value_matches(value: Any) -> None:
    assert_same([{"f": value}, {"g": "plain", "h": value}])
    assert_same([{value if isinstance(value, str | bytes) else "k": "v"}])


def test_rows_that_leave_the_text_path_match() -> None:
    wide = {f"f{i}": str(i) for i in range(64)}  # 128 elements: a two-byte count
    assert_same([wide, {"a": "1"}, wide])
    assert_same([OrderedDict(a="1", b="2"), {"c": "3"}])  # a Mapping that is not a dict
    assert_same([{"a": "1"}, {"b": 2}, {"c": b"3"}])  # one row of other types
    assert_same([{"a": "é"}] + [{"b": "x"}] * 10)  # one non-ASCII value


def test_chunks_of_many_rows_match() -> None:
    n = 2 * ROWS_PER_MESSAGE + 3
    rows: list[dict[str, Any]] = [{"n": str(i), "pad": "y" * (i % 200)} for i in range(n)]
    got = assert_same(rows)
    assert [c.rows for c in got.chunks] == [ROWS_PER_MESSAGE, ROWS_PER_MESSAGE, 3]
    rows[ROWS_PER_MESSAGE + 5] = {"n": 5}  # the second chunk goes element by element
    assert_same(rows)


def test_empty_key_and_no_rows() -> None:
    assert_same([{"a": "1"}], key=b"")
    assert EncodedRows.of_dicts([], "utf-8", "strict").chunks == []
    assert len(EncodedRows.of_dicts(iter([]), "utf-8", "strict")) == 0


@pytest.mark.parametrize(
    ("encoding", "errors"),
    [
        ("utf-8", "strict"),
        ("UTF8", "strict"),
        ("latin-1", "strict"),
        ("ascii", "replace"),
        ("ascii", "ignore"),
        ("utf-16", "strict"),  # leaves ASCII as two bytes: never the text path
        ("cp1252", "strict"),
    ],
)
def test_the_client_encoding_is_applied(encoding: str, errors: str) -> None:
    assert_same([{"a": "plain", "b": "1"}, {"c": "d"}], encoding, errors)
    if errors != "strict":
        assert_same([{"a": "é", "b": "1"}], encoding, errors)


def test_an_unknown_encoding_fails_as_str_encode_does() -> None:
    with pytest.raises(LookupError):
        EncodedRows.of_dicts([{"a": "b"}], "no-such-codec", "strict")


def test_an_unencodable_str_fails_as_str_encode_does() -> None:
    with pytest.raises(UnicodeEncodeError):
        EncodedRows.of_dicts([{"a": "é"}], "ascii", "strict")


@pytest.mark.parametrize(
    ("bad", "name"),
    [(True, "bool"), (False, "bool"), (None, "NoneType"), (object(), "object"), ([1], "list")],
)
def test_other_types_are_redis_py_data_errors(bad: Any, name: str) -> None:
    text = f"Invalid input of type: '{name}'. Convert to a bytes, string, int or float first."
    for rows in ([{"a": bad}], [{"a": "1"}] * 5 + [{"b": "2", "c": bad}]):
        with pytest.raises(DataError) as got:
            EncodedRows.of_dicts(rows, "utf-8", "strict")
        assert str(got.value) == text
        with pytest.raises(DataError) as old:
            old_entries(rows)
        assert str(old.value) == text


@pytest.mark.parametrize("bad", [{}, [("a", "1")], "a=1", None, OrderedDict()])
def test_a_row_that_is_not_a_non_empty_mapping(bad: Any) -> None:
    with pytest.raises(DataError, match=r"^XADD fields must be a non-empty dict$"):
        EncodedRows.of_dicts([{"a": "1"}, bad], "utf-8", "strict")


def test_the_first_bad_row_decides_the_error() -> None:
    with pytest.raises(DataError, match="type: 'bool'"):
        EncodedRows.of_dicts([{"a": True}, {}], "utf-8", "strict")
    with pytest.raises(DataError, match="non-empty dict"):
        EncodedRows.of_dicts([{}, {"a": True}], "utf-8", "strict")


def test_encoded_rows_are_a_sequence_of_entries() -> None:
    rows = EncodedRows.of_dicts([{"a": "1"}, {"b": 2, "c": "x" * 300}], "utf-8", "strict")
    assert len(rows) == 2
    assert rows[1] == [b"b", b"2", b"c", b"x" * 300]
    assert rows[-1:] == [[b"b", b"2", b"c", b"x" * 300]]
    assert list(rows) == [[b"a", b"1"], [b"b", b"2", b"c", b"x" * 300]]


def test_xadd_many_through_an_engine_transport() -> None:
    c = Client(transport=EngineTransport(), decode_responses=True)
    ids = c.xadd_many("s", [{"a": "1"}, {"b": 2.5, "c": b"\xff"}])
    raw = Client(transport=c.transport).xrange("s")
    assert [i.decode() for i, _ in raw] == ids
    assert [fields for _, fields in raw] == [{b"a": b"1"}, {b"b": b"2.5", b"c": b"\xff"}]


def _hashable(x: object) -> bool:
    return not isinstance(x, float) or x == x  # NaN keys make dicts compare unequal


_scalars = st.one_of(
    st.text(max_size=140),
    st.binary(max_size=140),
    st.integers(),
    st.floats(),
)
_ascii = st.text(alphabet=st.characters(max_codepoint=127), max_size=140)
_rows = st.one_of(
    st.lists(st.dictionaries(_scalars.filter(_hashable), _scalars, max_size=70), max_size=20),
    st.lists(st.dictionaries(_ascii, _ascii, max_size=70), max_size=20),  # the text path's
)


@settings(derandomize=True, database=None, max_examples=150, deadline=None)
@given(rows=_rows, encoding=st.sampled_from(["utf-8", "latin-1", "utf-16"]))
def test_any_rows_match_the_old_path(rows: list[dict[Any, Any]], encoding: str) -> None:
    try:
        want: Any = old_entries(rows, encoding, "replace")
    except DataError as e:
        want = str(e)
    try:
        got: Any = EncodedRows.of_dicts(rows, encoding, "replace")
    except DataError as e:
        assert str(e) == want
        return
    assert got.entries() == want
    assert new_messages(b"k", got, CONCERN) == old_messages(b"k", want, CONCERN)


def cut(counts: list[int], elements: list[bytes]) -> list[list[bytes]]:
    """The entries of a batch's wire form: entry i is the next counts[i] elements."""
    bounds = [0, *accumulate(counts)]
    return [elements[a:b] for a, b in pairwise(bounds)]


def test_the_messages_hold_the_entries_and_the_engine_takes_them_as_such() -> None:
    rows = [{"n": str(i), "v": i, "pad": "é" * (i % 3)} for i in range(ROWS_PER_MESSAGE + 10)]
    encoded = EncodedRows.of_dicts(rows, "utf-8", "strict")
    got = []
    wire, lists = Engine(), Engine()
    for raw in new_messages(b"s", encoded, CONCERN):
        batch = pb.IngestBatch.FromString(raw)
        elements = batch.elements[:]
        counts = batch_counts(list(batch.counts), elements)
        got += cut(counts, elements)
        wire.xadd_flat(b"s", elements, counts, 1)
    assert got == old_entries(rows)
    lists.xadd_many(b"s", old_entries(rows), 1)
    assert wire.digest() == lists.digest()
    uneven = [{"a": "1"}, {"b": "2", "c": "3"}, {"d": "4"}]
    batch = pb.IngestBatch.FromString(
        message(b"s", EncodedRows.of_dicts(uneven, "utf-8", "strict").chunks[0])
    )
    elements = list(batch.elements)
    assert cut(batch_counts(list(batch.counts), elements), elements) == old_entries(uneven)
    assert batch_counts([0, 0], []) == [0, 0]  # the engine's arity error, not ours
    with pytest.raises(StreamError, match="counts do not add up"):
        batch_counts([2, 2], [b"a", b"1", b"b"])
    with pytest.raises(StreamError, match="counts do not add up"):
        batch_counts([], [b"a"])
