"""Engine.apply_record's run path (engine/replay.py) against the general path: a record's
effects applied whole leave the same state as the same effects `apply`d one by one.

A primary engine runs random writes (XADD with `*`, `<ms>-*` and explicit IDs on keys that
interleave, same-millisecond runs, fields that change, values of every listpack encoding,
trims, XDEL, batches by xadd_many, other databases), and its effects are cut into records at
random points, as a RESP pipeline's writes are. Two replicas with other (small) node limits
take them: one a record at a time (`apply_record`), the other an effect at a time (`apply`).
After every record both pass check_integrity(), their digests are equal (to each other and
to the primary's), every stream's node bytes and metadata are equal, and the signaled and
touched keys are the same. Records that cannot apply (an ID not above the last, WRONGTYPE)
raise the same error on both paths, after the same prefix applied.
"""

from __future__ import annotations

from itertools import pairwise

import pytest
from hypothesis import given
from hypothesis import strategies as st

from xstream.engine import Engine, EngineConfig, StreamError, ids, replay
from xstream.engine.stream import Stream

LIMITS = [EngineConfig(60, 3), EngineConfig(0, 1), EngineConfig(120, 0), EngineConfig(300, 7)]
KEYS = [b"a", b"b"]
FIELD_SETS = [[b"user_id", b"action"], [b"f"], [b"7", b"x"], [b"g", b"h", b"i"]]

values = st.one_of(
    st.sampled_from([b"", b"0", b"-0", b"007", b"42", b"4095", b"40000", b"-12", b"click"]),
    st.integers(-(2**63), 2**64).map(lambda n: b"%d" % n),
    st.integers(0, 70).map(lambda n: b"v" * n),
    st.binary(max_size=8),
)


@st.composite
def field_values(draw: st.DrawFn) -> list[bytes]:
    fields = draw(st.sampled_from(FIELD_SETS))
    out: list[bytes] = []
    for f in fields:
        out += [f, draw(values)]
    return out


@st.composite
def commands(draw: st.DrawFn) -> tuple[str, int, int, list[bytes] | list[list[bytes]]]:
    """(kind, db, clock step, argv or entries)."""
    key = draw(st.sampled_from(KEYS))
    db = draw(st.sampled_from([0, 0, 0, 3]))
    step = draw(st.sampled_from([0, 0, 0, 1, 7]))
    kind = draw(st.sampled_from(["auto"] * 6 + ["ms", "explicit", "trim", "xdel", "many"]))
    fv = draw(field_values())
    if kind == "auto":
        return kind, db, step, [b"XADD", key, b"*", *fv]
    if kind == "ms":
        return kind, db, step, [b"XADD", key, b"%d-*" % draw(st.integers(0, 3000)), *fv]
    if kind == "explicit":
        ms, seq = draw(st.integers(0, 3000)), draw(st.sampled_from([0, 1, 5, 2**64 - 1]))
        return kind, db, step, [b"XADD", key, b"%d-%d" % (ms, seq), *fv]
    if kind == "trim":
        how = draw(st.sampled_from([b"=", b"~"]))
        n = draw(st.integers(0, 6))
        return kind, db, step, [b"XADD", key, b"MAXLEN", how, b"%d" % n, b"*", *fv]
    if kind == "xdel":
        return kind, db, step, [b"XDEL", key, b"%d-%d" % (draw(st.integers(0, 3000)), 0)]
    entries = draw(st.lists(field_values(), min_size=1, max_size=12))
    return kind, db, step, [key, *entries]  # type: ignore[list-item]


def primary_effects(cmds: list[tuple[str, int, int, list]]) -> list[list[list[bytes]]]:  # type: ignore[type-arg]
    """The effects the primary ships for each of `cmds` (errors ship nothing)."""
    primary = Engine(EngineConfig(200, 5))
    now = 1000
    shipped: list[list[list[bytes]]] = []
    for kind, db, step, what in cmds:
        now += step
        try:
            if kind == "many":
                r = primary.xadd_many(what[0], what[1:], now, db)
            else:
                r = primary.execute(what, now, db)
        except StreamError:
            continue
        if r.effects:
            shipped.append(r.effects)
    return shipped


def cut(shipped: list[list[list[bytes]]], cuts: list[int]) -> list[list[list[bytes]]]:
    """Records of whole commands' effects, cut at the given positions, as the node's Batch
    makes them: after effects in another database, db 0's get their SELECT 0."""
    points = sorted({c % (len(shipped) + 1) for c in cuts} | {0, len(shipped)})
    records = []
    for a, b in pairwise(points):
        record: list[list[bytes]] = []
        db = 0
        for effects in shipped[a:b]:
            selects = effects[0][0] == b"SELECT"
            if not selects and db:
                record.append([b"SELECT", b"0"])
            db = int(effects[0][1]) if selects else 0
            record += effects
        if record:
            records.append(record)
    return records


def layout(e: Engine) -> list[tuple[object, ...]]:
    """Every stream's node bytes and metadata, in every database."""
    out: list[tuple[object, ...]] = []
    for db, ks in enumerate(e.dbs):
        for key in sorted(ks.data):
            s = ks.data[key]
            if isinstance(s, Stream):
                nodes = [(k, bytes(lp)) for k, lp in s.nodes()]
                meta = (s.length, s.last_id, s.first_id, s.max_deleted_entry_id)
                out.append((db, key, nodes, meta, s.entries_added, s.max_trimmed_entry_id))
    return out


def one_by_one(e: Engine, effects: list[list[bytes]]) -> tuple[list, list]:  # type: ignore[type-arg]
    """What apply_record does, through `apply` alone: (signaled, touched)."""
    e.apply_db = 0
    signaled: list[tuple[int, bytes]] = []
    touched: list[tuple[int, bytes]] = []
    for effect in effects:
        r = e.apply(effect)
        signaled += r.signaled
        touched += r.touched
    return signaled, touched


def check_same(whole: Engine, single: Engine) -> None:
    whole.check_integrity()
    single.check_integrity()
    assert whole.digest() == single.digest()
    assert layout(whole) == layout(single)


@pytest.mark.parametrize("limits", LIMITS, ids=lambda c: f"{c.node_max_bytes}x{c.node_max_entries}")
@given(
    cmds=st.lists(commands(), min_size=1, max_size=60),
    cuts=st.lists(st.integers(0, 200), max_size=8),
)
def test_records_apply_as_effects_one_by_one(
    limits: EngineConfig,
    cmds: list[tuple[str, int, int, list]],  # type: ignore[type-arg]
    cuts: list[int],
) -> None:
    effects = primary_effects(cmds)
    whole, single = Engine(limits), Engine(limits)
    for record in cut(effects, cuts):
        got = whole.apply_record(record)
        assert (got.signaled, got.touched) == one_by_one(single, record)
        check_same(whole, single)
    same_primary = Engine(EngineConfig(200, 5))
    for record in cut(effects, []):
        same_primary.apply_record(record)
    assert whole.digest() == same_primary.digest()


def _xadd(key: bytes, eid: bytes, *fv: bytes) -> list[bytes]:
    return [b"XADD", key, eid, *fv]


BROKEN_RECORDS = {
    "id not above the last": [
        _xadd(b"a", b"5-0", b"f", b"1"),
        _xadd(b"a", b"6-0", b"f", b"2"),
        _xadd(b"a", b"6-0", b"f", b"3"),
        _xadd(b"a", b"7-0", b"f", b"4"),
    ],
    "0-0 on a new stream": [_xadd(b"n", b"0-0", b"f", b"1")],
    "wrong type": [
        _xadd(b"a", b"1-1", b"f", b"1"),
        [b"SET", b"s", b"x"],
        _xadd(b"s", b"2-1", b"f", b"1"),
    ],
    "odd arity": [_xadd(b"a", b"1-1", b"f", b"1"), _xadd(b"a", b"1-2", b"f", b"1", b"g")],
    "xappend id not above the last": [
        [b"XAPPEND", b"a", b"5-0", b"2,2", b"f", b"1", b"f", b"2"],
        [b"XAPPEND", b"a", b"5-1", b"2", b"f", b"3"],
    ],
    "xappend 0-0 on a new stream": [[b"XAPPEND", b"n", b"0-0", b"2", b"f", b"1"]],
    "xappend wrong type": [[b"SET", b"s", b"x"], [b"XAPPEND", b"s", b"2-1", b"2", b"f", b"1"]],
    "xappend counts off": [[b"XAPPEND", b"a", b"5-0", b"2,4", b"f", b"1", b"f", b"2"]],
}

# XAPPENDs that replay.apply_xappend leaves to the general path, which applies them.
XAPPENDS_ELSEWHERE = {
    "seq carry": [b"XAPPEND", b"a", b"5-%d" % (2**64 - 2), b"2,2,4", *[b"f", b"1"] * 3, b"g", b"2"],
    "lower case": [b"xappend", b"a", b"5-0", b"2,2", b"f", b"1", b"f", b"2"],
    "counts int() reads": [b"XAPPEND", b"a", b"5-0", b" 2,+2", b"f", b"1", b"f", b"2"],
    "id of another form": [b"XAPPEND", b"a", b"5", b"2,2", b"f", b"1", b"f", b"2"],
}


@pytest.mark.parametrize("name", list(BROKEN_RECORDS))
def test_a_record_that_fails_fails_alike(name: str) -> None:
    record = BROKEN_RECORDS[name]
    whole, single = Engine(EngineConfig(60, 3)), Engine(EngineConfig(60, 3))
    with pytest.raises(StreamError) as by_record:
        whole.apply_record(record)
    with pytest.raises(StreamError) as by_effect:
        one_by_one(single, record)
    assert str(by_record.value) == str(by_effect.value)
    check_same(whole, single)


@pytest.mark.parametrize("name", list(XAPPENDS_ELSEWHERE))
def test_an_xappend_off_the_run_path_applies_alike(name: str) -> None:
    record = [
        _xadd(b"a", b"1-1", b"f", b"0"),
        XAPPENDS_ELSEWHERE[name],
        _xadd(b"a", b"9-0", b"f", b"9"),
    ]
    whole, single = Engine(EngineConfig(60, 3)), Engine(EngineConfig(60, 3))
    got = whole.apply_record(record)
    assert (got.signaled, got.touched) == one_by_one(single, record)
    check_same(whole, single)
    assert whole.dbs[0].data[b"a"].length == 2 + len(XAPPENDS_ELSEWHERE[name][3].split(b","))


def test_xappends_on_the_run_path_apply_as_the_command() -> None:
    """Runs of XAPPENDs (as Ingest batches ship them) across node limits, fields that change
    mid-batch and a stream they create: the bytes and metadata of the command's path."""
    first = [b"XAPPEND", b"a", b"3-5", b"4,4,2", b"f", b"1", b"g", b"x", b"f", b"2", b"g", b"y"]
    first += [b"f", b"040000"]
    later = [b"XAPPEND", b"a", b"3-8", b"2,2", b"h", b"123456789012", b"h", b"-7"]
    for limits in LIMITS:
        whole, single = Engine(limits), Engine(limits)
        record = [first, later, [b"XAPPEND", b"b", b"1-0", b"2", b"f", b""]]
        got = whole.apply_record(record)
        assert (got.signaled, got.touched) == one_by_one(single, record)
        check_same(whole, single)


@pytest.mark.parametrize("max_bytes", range(1390, 1480, 7))
def test_the_live_counter_widening_at_128_entries_is_counted(max_bytes: int) -> None:
    """A node of ~128 one-byte entries reaches its byte limit about when its live counter
    widens (128 needs one more byte than 127): the run path sees the same size as `append`."""
    record = [_xadd(b"a", b"1-%d" % i, b"f", b"v") for i in range(1, 400)]
    record[200] = _xadd(b"a", b"1-201", b"f", b"v", b"g", b"w")  # other fields, mid-run
    whole, single = Engine(EngineConfig(max_bytes, 0)), Engine(EngineConfig(max_bytes, 0))
    whole.apply_record(record)
    one_by_one(single, record)
    check_same(whole, single)


@given(st.one_of(st.binary(max_size=42), st.from_regex(rb"\A[0-9]{0,21}-[0-9*]{0,21}\Z")))
def test_shipped_ids_read_as_xadd_reads_them(arg: bytes) -> None:
    """replay.shipped_id takes exactly ids.py's fast-path forms, with the same answer."""
    plain = ids._plain(arg)
    assert replay.shipped_id(arg) == plain
    if plain is not None:
        assert ids.parse_strict(arg) == plain
