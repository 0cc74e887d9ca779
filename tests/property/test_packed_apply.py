"""Engine.apply_payload (an XAPPEND appended from its record's payload, engine/packed.py)
against apply_record of the decoded record: the same node bytes, metadata, digest, signaled
and touched keys, across node limits, fields that change mid-batch, values of every listpack
encoding and streams that exist already; any payload it does not take (another command, more
than one argv, a form the general path reads, an XAPPEND that would fail, a damaged payload)
is refused with nothing changed, and the decoded path then does what it always did.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_replay_runs import LIMITS, check_same, field_values, layout, one_by_one

from xstream.engine import Engine, EngineConfig, StreamError, replay
from xstream.engine.commands.append import plain_bounds
from xstream.node import records


def payload(effects: list[list[bytes]]) -> bytes:
    """A record's payload, as records.encode writes it and a replica checksums it."""
    return records.encode(effects)[records.HEADER.size :]


def xappend(key: bytes, first: bytes, entries: list[list[bytes]]) -> list[bytes]:
    counts = b",".join(b"%d" % len(e) for e in entries)
    return [b"XAPPEND", key, first, counts, *[x for e in entries for x in e]]


@st.composite
def batches(draw: st.DrawFn) -> list[list[bytes]]:
    """XAPPENDs to two keys with ascending IDs, as a primary ships Ingest batches."""
    out = []
    ms = {b"a": 5, b"b": 5}
    for _ in range(draw(st.integers(1, 6))):
        key = draw(st.sampled_from([b"a", b"b"]))
        ms[key] += draw(st.integers(1, 3))
        seq = draw(st.sampled_from([0, 3, 10**18]))  # (20 digits: the general path)
        entries = draw(st.lists(field_values(), min_size=1, max_size=30))
        out.append(xappend(key, b"%d-%d" % (ms[key], seq), entries))
    return out


@pytest.mark.parametrize("limits", LIMITS, ids=lambda c: f"{c.node_max_bytes}x{c.node_max_entries}")
@given(batches())
def test_an_xappend_applies_from_its_payload_as_decoded(
    limits: EngineConfig, argvs: list[list[bytes]]
) -> None:
    packed, decoded = Engine(limits), Engine(limits)
    for argv in argvs:
        got = packed.apply_payload(payload([argv]))
        assert got is not None
        want = decoded.apply_record([argv])
        assert (got.signaled, got.touched) == (want.signaled, want.touched)
        check_same(packed, decoded)


def test_long_runs_fill_nodes_as_decoded() -> None:
    """Ingest-sized batches: nodes filled by count, by bytes, the live counter widening past
    127, values of 64 bytes and more (the general encoder) and numbers past 18 digits."""
    rows = [[b"user_id", b"%012d" % (i * 7919), b"action", b"click", b"amount", b"42"]
            for i in range(600)]  # fmt: skip
    rows[300] = [b"user_id", b"x" * 70, b"action", b"9" * 25, b"amount", b"-3"]
    rows[301] = [b"other", b"1"]
    for limits in [*LIMITS, EngineConfig(4096, 100), EngineConfig(0, 0), EngineConfig(1500, 0)]:
        packed, decoded = Engine(limits), Engine(limits)
        for first, part in [(b"7-0", rows[:250]), (b"8-0", rows[250:])]:
            assert packed.apply_payload(payload([xappend(b"s", first, part)])) is not None
            decoded.apply_record([xappend(b"s", first, part)])
            check_same(packed, decoded)


REFUSED = {
    "two argvs": [xappend(b"a", b"9-0", [[b"f", b"1"]]), xappend(b"a", b"10-0", [[b"f", b"2"]])],
    "an xadd": [[b"XADD", b"a", b"9-0", b"f", b"1"]],
    "lower case": [[b"xappend", b"a", b"9-0", b"2", b"f", b"1"]],
    "counts int() reads": [[b"XAPPEND", b"a", b"9-0", b" 2", b"f", b"1"]],
    "counts off": [[b"XAPPEND", b"a", b"9-0", b"2,2", b"f", b"1"]],
    "odd count": [[b"XAPPEND", b"a", b"9-0", b"3", b"f", b"1", b"g"]],
    "id of another form": [[b"XAPPEND", b"a", b"9", b"2", b"f", b"1"]],
    "seq carry": [xappend(b"a", b"9-%d" % (2**64 - 1), [[b"f", b"1"], [b"f", b"2"]])],
    "id not above the last": [xappend(b"a", b"5-0", [[b"f", b"1"]])],
    "wrong type": [xappend(b"s", b"9-0", [[b"f", b"1"]])],
    "a users record": [[b"ACL", b"x"]],
    "too short": [[b"XAPPEND", b"a", b"9-0", b"2", b"f"]],
}


@pytest.mark.parametrize("name", list(REFUSED))
def test_other_payloads_are_refused_with_nothing_changed(name: str) -> None:
    engine = Engine(EngineConfig(60, 3))
    engine.apply_record([xappend(b"a", b"5-0", [[b"f", b"0"]]), [b"SET", b"s", b"x"]])
    before = layout(engine), engine.digest()
    assert engine.apply_payload(payload(REFUSED[name])) is None
    assert (layout(engine), engine.digest()) == before


def test_a_damaged_payload_is_refused_and_does_not_decode() -> None:
    good = payload([xappend(b"a", b"9-0", [[b"f", b"1"], [b"g", b"2"]])])
    assert Engine().apply_payload(b"") is None  # (never a record's: a payload is not empty)
    for bad in [good[:-1], good + b"x", good[:3]]:
        engine = Engine()
        assert engine.apply_payload(bad) is None
        assert engine.key_count() == 0
        with pytest.raises((records.CorruptRecordError, StreamError)):
            engine.apply_record(records.decode_payload(bad))


def test_refused_xappends_apply_decoded_as_one_by_one() -> None:
    """What the decoded path does with the ones it takes (the seq carry's general path)."""
    record = REFUSED["seq carry"]
    whole, single = Engine(EngineConfig(60, 3)), Engine(EngineConfig(60, 3))
    assert whole.apply_payload(payload(record)) is None
    got = whole.apply_record(record)
    assert (got.signaled, got.touched) == one_by_one(single, record)
    check_same(whole, single)


@given(st.one_of(st.binary(max_size=12), st.from_regex(rb"\A[0-9,+ ]{0,14}\Z")))
def test_plain_counts_takes_what_plain_bounds_takes(arg: bytes) -> None:
    bounds = plain_bounds(arg, 4)
    counts = replay.plain_counts(arg)
    if bounds is None:
        assert counts is None
    else:
        assert counts is not None
        assert [4 + sum(counts[:k]) for k in range(len(counts) + 1)] == bounds


@pytest.mark.parametrize("max_bytes", range(30, 160, 3))
def test_entries_of_the_masters_arity_but_other_fields_fill_nodes_as_decoded(
    max_bytes: int,
) -> None:
    """An entry with as many fields as the master's, the first ones alike, is found not to be
    a same-fields one part way: its size is counted whole, once, for the room test."""
    rows = [[b"f", b"1", b"g", b"2"], [b"f", b"3", b"h", b"4"], [b"x", b"5", b"g", b"6"]] * 9
    argv = xappend(b"s", b"3-0", rows)
    packed, decoded = Engine(EngineConfig(max_bytes, 0)), Engine(EngineConfig(max_bytes, 0))
    assert packed.apply_payload(payload([argv])) is not None
    decoded.apply_record([argv])
    check_same(packed, decoded)
