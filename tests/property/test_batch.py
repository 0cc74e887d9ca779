"""Engine.xadd_many against the same entries added by one `XADD key *` each.

The batch promises the same IDs and the same node bytes as single calls (so XINFO's radix-tree
numbers and MEMORY USAGE cannot tell them apart), and one XAPPEND effect that replays as the
single calls' effects do. Three engines with the same config start from the same stream (built
entry by entry, with some entries deleted so that tail nodes carry tombstones); one appends the
batch, one appends it one XADD at a time, one replays the batch's effect. Their replies, rax
keys and listpack bytes must be identical.
"""

from __future__ import annotations

from command_gen import FIELD_SETS, INTISH, field_values
from hypothesis import given, settings
from hypothesis import strategies as st

from xstream.engine import Engine, EngineConfig, StreamError

# Node limits: the tier's four configs, one huge node, and drawn limits (a byte limit met right
# where the live counter widens at 128 entries is the kind of edge only a range finds).
configs = st.builds(
    EngineConfig,
    st.one_of(st.sampled_from([4096, 60, 0, 100, 1 << 20]), st.integers(30, 5000)),
    st.one_of(st.sampled_from([100, 3, 1, 0]), st.integers(0, 400)),
)
KEY = b"k"

# Mostly short entries, so that nodes hold many and their limits are met at every offset.
short_entries = st.builds(
    lambda fields, vals: [x for pair in zip(fields, vals, strict=False) for x in pair],
    st.sampled_from(FIELD_SETS),
    st.lists(st.one_of(st.sampled_from(INTISH), st.binary(max_size=5)), min_size=4, max_size=4),
)


def layout(engine: Engine) -> list[tuple[bytes, bytes]]:
    s = engine.keyspace.stream(KEY)
    return [] if s is None else [(k, bytes(lp)) for k, lp in s.nodes()]


@given(
    config=configs,
    prefix=st.integers(0, 400),
    deletes=st.lists(st.integers(1, 30), max_size=8),
    fvs=st.lists(st.one_of(short_entries, short_entries, field_values()), min_size=1, max_size=3),
    n=st.integers(1, 300),
    run=st.integers(1, 40),
    now=st.sampled_from([0, 1000, 2000]),
)
@settings(max_examples=4 * settings.default.max_examples)
def test_batch_leaves_the_bytes_of_single_xadds(
    config: EngineConfig,
    prefix: int,
    deletes: list[int],
    fvs: list[list[bytes]],
    n: int,
    run: int,
    now: int,
) -> None:
    single, batch, replay = Engine(config), Engine(config), Engine(config)
    for engine in (single, batch, replay):
        for i in range(prefix):
            engine.execute([b"XADD", KEY, b"%d-%d" % (1000, i), *fvs[0]])
        for back in deletes:  # tombstones, mostly in the tail node the batch appends to
            if back <= prefix:
                engine.execute([b"XDEL", KEY, b"1000-%d" % (prefix - back)])
    entries = [fvs[i // run % len(fvs)] for i in range(n)]  # runs of `run` alike entries

    replies: list[bytes] = []
    for fv in entries:
        result = single.execute([b"XADD", KEY, b"*", *fv], now)
        assert isinstance(result.reply, bytes)
        replies.append(result.reply)
    result = batch.xadd_many(KEY, entries, now)

    assert result.reply == replies
    assert [e[0] for e in result.effects] == [b"XAPPEND"]
    for effect in result.effects:
        replay.apply(effect)
    assert layout(batch) == layout(single) == layout(replay)
    assert replay.digest() == single.digest()
    assert batch.digest() == single.digest()
    batch.check_integrity()
    info = [b"XINFO", b"STREAM", KEY]
    assert batch.execute(info).reply == single.execute(info).reply


def test_batch_is_all_or_nothing() -> None:
    """IDs run out inside the batch: nothing is appended, the error is XADD's."""
    engine = Engine()
    engine.execute([b"XADD", KEY, b"18446744073709551615-18446744073709551613", b"f", b"v"])
    before = engine.digest()
    try:
        engine.xadd_many(KEY, [[b"f", b"v"]] * 3, 0)
    except StreamError as e:
        assert "exhausted" in e.line
    else:
        raise AssertionError("a batch past the last ID must fail")
    assert engine.digest() == before
    assert engine.xadd_many(KEY, [[b"f", b"v"]] * 2, 0).reply == [
        b"18446744073709551615-18446744073709551614",
        b"18446744073709551615-18446744073709551615",
    ]
