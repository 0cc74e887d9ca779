"""SortedKeys (sortedkeys.py), the PELs' ordered index: random insertions and removals
against a plain sorted list, with the block invariants checked at every step."""

from __future__ import annotations

import random

from xstream.engine.groups import ConsumerGroup, time_key
from xstream.engine.ids import StreamID
from xstream.engine.sortedkeys import LOAD, SortedKeys


def _same(keys: SortedKeys[int], model: list[int]) -> None:
    keys.check()
    assert list(keys) == model
    assert len(keys) == len(model)
    assert keys.first() == (model[0] if model else None)
    assert keys.last() == (model[-1] if model else None)


def test_random_insertions_and_removals_match_a_sorted_list() -> None:
    rng = random.Random(7)
    keys: SortedKeys[int] = SortedKeys()
    model: list[int] = []
    present: set[int] = set()
    for step in range(12 * LOAD):
        grow = step < 6 * LOAD or rng.random() < 0.3
        if grow or not present:
            k = rng.randrange(1 << 20)
            if k in present:
                continue
            present.add(k)
            keys.add(k)
            model.append(k)
            model.sort()
        else:
            k = rng.choice(model)
            present.discard(k)
            keys.remove(k)
            model.remove(k)
        if step % 97 == 0:
            _same(keys, model)
    _same(keys, model)
    for k in list(model):
        keys.remove(k)
        model.remove(k)
    _same(keys, model)


def test_appends_and_removals_from_the_front_as_xack_does() -> None:
    keys: SortedKeys[int] = SortedKeys()
    for k in range(10 * LOAD):
        keys.add(k)
    keys.check()
    assert len(keys._blocks) > 5  # split into blocks as it grew
    for k in range(9 * LOAD):
        keys.remove(k)
    _same(keys, list(range(9 * LOAD, 10 * LOAD)))


def test_since_starts_at_or_after_a_key() -> None:
    keys: SortedKeys[StreamID] = SortedKeys()
    for seq in range(0, 6 * LOAD, 2):
        keys.add(StreamID(5, seq))
    for probe in (0, 1, 2, LOAD, 2 * LOAD + 1, 6 * LOAD - 2, 6 * LOAD):
        start = StreamID(5, probe)
        expected = [StreamID(5, s) for s in range(0, 6 * LOAD, 2) if s >= probe]
        assert list(keys.since(start)) == expected
        later = [i for i in expected if i != start]
        assert list(keys.since(start, inclusive=False)) == later
    assert list(keys.since(StreamID(6, 0))) == []
    assert list(SortedKeys[int]().since(3)) == []


def test_time_keys_order_as_time_then_timing() -> None:
    u = (1 << 64) - 1
    pairs = [(t, n) for t in (-5, -1, 0, 1, 1_700_000_000_000, 1 << 63) for n in (0, 1, u)]
    keys = sorted(time_key(t, n) for t, n in pairs)
    assert keys == [time_key(t, n) for t, n in sorted(pairs)]
    assert len(set(keys)) == len(pairs)
    g = ConsumerGroup(b"g", StreamID(0, 0), 0, {})
    c = g.create_consumer(b"c", 0)
    added = [(t, StreamID(ms, r)) for r, t in enumerate((7, -1, 7, 0, 7)) for ms in (9, 3, 5)]
    for t, i in added:
        g.add_pending(i, c, t, 1)
    assert list(g.by_time()) == sorted(added, key=lambda p: p[0])  # a stable sort: added order
