"""FlatRax (the stream's flat rax) against rax.py's node-for-node Rax and a sorted list.

Whatever the history of inserts and removes of 16-byte keys, the flat map must hold the same
entries in the same order, seek and step exactly as the tree does, and report the node count
and node bytes of the tree rax.c would hold (Rax's; tests/compat/test_rax_nodes.py ties both to
Redis's XINFO).
"""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest
from test_rax import SEEK_OPS, Model, sid, stream_id_key

from xstream.engine.flatrax import FlatRax, Shape, common_prefix
from xstream.engine.ids import StreamID
from xstream.engine.rax import Rax
from xstream.engine.stream import Stream

KeyGen = Callable[[random.Random], bytes]


def byte_key(rng: random.Random) -> bytes:
    """16 bytes from a two-letter alphabet: deep shared prefixes, branching at any depth."""
    head = bytes(rng.choice(b"\x00\x01") for _ in range(rng.randrange(17)))
    return head + bytes(16 - len(head))


def same(flat: FlatRax[int], rax: Rax[int], model: Model) -> None:
    flat.check()
    assert len(flat) == len(rax) == len(model.keys)
    assert flat.numnodes == rax.numnodes
    assert flat.node_bytes() == rax.node_bytes()
    assert flat.first() == rax.first()
    assert flat.last() == rax.last()


def steps_agree(flat: FlatRax[int], rax: Rax[int], op: str, key: bytes, rng: random.Random) -> None:
    """The same seek, then the same random walk of next()/prev(), on both."""
    a, b = flat.seek(op, key), rax.seek(op, key)
    for _ in range(rng.randrange(1, 10)):
        if rng.random() < 0.5:
            assert a.next() == b.next()
        else:
            assert a.prev() == b.prev()


def run_random(gen: KeyGen, seed: int, steps: int, remove_bias: float) -> None:
    rng = random.Random(seed)
    flat: FlatRax[int] = FlatRax()
    rax: Rax[int] = Rax()
    model = Model()
    for step in range(steps):
        if model.keys and rng.random() < remove_bias:
            key = rng.choice(model.keys) if rng.random() < 0.8 else gen(rng)
            if rng.random() < 0.3:
                key = model.keys[0]  # the front, as trims free nodes
            expected = model.remove(key)
            assert flat.remove(key) == expected
            assert rax.remove(key) == expected
        else:
            key = gen(rng)
            expected_new = model.insert(key, step)
            assert flat.insert(key, step) == expected_new
            rax.insert(key, step)
        same(flat, rax, model)
        probes = [gen(rng), key, key[:-1], *(model.keys[:1] if model.keys else [])]
        for probe in probes:
            assert flat.find(probe) == model.values.get(probe)
            assert (probe in flat) == (probe in model.values)
            for op in SEEK_OPS:
                steps_agree(flat, rax, op, probe, rng)
        if step % 20 == 0:
            assert list(flat.items()) == list(rax.items())
            assert list(flat.reversed_items()) == list(rax.reversed_items())
    while model.keys:
        key = model.keys[rng.randrange(len(model.keys))]
        assert flat.remove(key) == rax.remove(key) == model.remove(key)
        same(flat, rax, model)
    assert flat.numnodes == 1 and flat.node_bytes() == rax.node_bytes()


@pytest.mark.parametrize("seed", range(4))
def test_random_stream_ids(seed: int) -> None:
    run_random(stream_id_key, seed, steps=300, remove_bias=0.35)


@pytest.mark.parametrize("seed", range(4))
def test_random_keys_branching_at_every_depth(seed: int) -> None:
    run_random(byte_key, seed, steps=300, remove_bias=0.4)


def test_appends_and_front_trims_like_a_stream() -> None:
    """XADD's appends keep the shape incrementally; trims free from the front (dead slots,
    compacted when half the arrays); counts always equal the tree's."""
    rng = random.Random(5)
    flat: FlatRax[int] = FlatRax()
    rax: Rax[int] = Rax()
    model = Model()
    ms, seq = 1_700_000_000_000, 0
    for step in range(1500):
        ms += rng.choice([0, 0, 1, 3, 300, 70_000])
        seq = seq + rng.randrange(1, 200) if rng.random() < 0.5 else 0
        key = sid(ms, seq)
        if key in model.values:
            continue
        for m in (flat, rax):
            assert m.insert(key, step)
        model.insert(key, step)
        if step % 3 == 0:
            head = model.keys[0]
            assert flat.remove(head) == rax.remove(head) == model.remove(head)
            assert flat.seek(">=", head).next() == rax.seek(">=", head).next()
        if step % 50 == 0:
            same(flat, rax, model)
    same(flat, rax, model)
    assert list(flat.items()) == list(rax.items())


def test_insert_before_the_head_reuses_a_dead_slot() -> None:
    flat: FlatRax[int] = FlatRax()
    for ms in range(10):
        flat.insert(sid(ms), ms)
    for ms in range(5):
        assert flat.remove(sid(ms)) == ms
    assert flat.insert(sid(2, 5), 99)  # before the first live key
    assert [k for k, _ in flat.items()] == [sid(2, 5), *(sid(ms) for ms in range(5, 10))]
    flat.check()


def test_overwrite_keeps_iterators_and_a_change_stales_them() -> None:
    flat: FlatRax[int] = FlatRax()
    for ms in range(5):
        flat.insert(sid(ms), ms)
    it = flat.seek(">=", sid(2))
    assert not flat.insert(sid(3), 33)  # an existing key: same slots
    assert it.next() == (sid(2), 2)
    assert it.next() == (sid(3), 33)
    flat.remove(sid(4))
    with pytest.raises(RuntimeError):
        it.next()
    with pytest.raises(ValueError):
        flat.seek("~")


def test_eof_sticks_until_the_next_seek() -> None:
    flat: FlatRax[int] = FlatRax()
    flat.insert(sid(1), 1)
    it = flat.seek(">", sid(1))
    assert it.next() is None and it.prev() is None
    it.seek("<=", sid(9))
    assert it.prev() == (sid(1), 1)
    assert it.prev() is None and it.next() is None


def test_common_prefix_and_the_empty_shape() -> None:
    assert common_prefix(sid(1, 0), sid(1, 1)) == 15
    assert common_prefix(sid(1 << 56), sid(0)) == 0
    assert Shape().totals() == (1, Rax[int]().node_bytes())
    one = Shape()
    one.add(7)  # the first key: its common prefix is not read
    tree: Rax[int] = Rax()
    tree.insert(sid(1), 1)
    assert one.totals() == (tree.numnodes, tree.node_bytes())


def test_a_stream_reports_the_trees_counts() -> None:
    """A stream's nodes by appends and a trim: its flat rax counts as the tree of its keys."""
    s = Stream()
    for i in range(1000):
        s.append(StreamID(1_700_000_000_000 + i // 7, i % 7), [b"f", b"%d" % i], 4096, 10)
    s.trim(500, None, False, 0)
    tree: Rax[bytearray] = Rax()
    for key, lp in s.nodes():
        tree.insert(key, lp)
    assert (len(s.rax), s.rax.numnodes, s.rax.node_bytes()) == (
        len(tree),
        tree.numnodes,
        tree.node_bytes(),
    )
