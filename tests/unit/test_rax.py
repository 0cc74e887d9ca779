"""Rax against a sorted list: membership, order, every seek operator, node counts."""

from __future__ import annotations

import random
import struct
from bisect import bisect_left, bisect_right
from collections.abc import Callable

import pytest

from xstream.engine.rax import Rax, RaxIterator

UINT64_MAX = (1 << 64) - 1
SEEK_OPS = ("^", "$", ">=", ">", "<=", "<", "==")
KeyGen = Callable[[random.Random], bytes]


def sid(ms: int, seq: int = 0) -> bytes:
    return struct.pack(">QQ", ms, seq)


class Model:
    """The same map as a sorted list of keys plus a dict."""

    def __init__(self) -> None:
        self.keys: list[bytes] = []
        self.values: dict[bytes, int] = {}

    def insert(self, key: bytes, value: int) -> bool:
        new = key not in self.values
        if new:
            self.keys.insert(bisect_left(self.keys, key), key)
        self.values[key] = value
        return new

    def remove(self, key: bytes) -> int | None:
        if key not in self.values:
            return None
        del self.keys[bisect_left(self.keys, key)]
        return self.values.pop(key)

    def seek_index(self, op: str, key: bytes) -> int | None:
        """Index of the element a seek lands on, None for EOF."""
        keys = self.keys
        index = {
            "^": 0,
            "$": len(keys) - 1,
            ">=": bisect_left(keys, key),
            ">": bisect_right(keys, key),
            "<=": bisect_right(keys, key) - 1,
            "<": bisect_left(keys, key) - 1,
            "==": bisect_left(keys, key) if key in self.values else -1,
        }[op]
        return index if 0 <= index < len(keys) else None

    def entry(self, index: int) -> tuple[bytes, int]:
        key = self.keys[index]
        return key, self.values[key]


def walk_and_compare(
    it: RaxIterator[int], model: Model, start: int | None, rng: random.Random
) -> None:
    """Random next()/prev() steps from a fresh seek, compared with moving an index in the model."""
    pos = start
    first = True
    for _ in range(rng.randrange(1, 12)):
        forward = rng.random() < 0.5
        got = it.next() if forward else it.prev()
        if pos is not None and not first:
            pos += 1 if forward else -1
            if not 0 <= pos < len(model.keys):
                pos = None  # EOF sticks until the next seek
        first = False
        assert got == (None if pos is None else model.entry(pos))


def check_seeks(rax: Rax[int], model: Model, probes: list[bytes], rng: random.Random) -> None:
    for key in probes:
        for op in SEEK_OPS:
            start = model.seek_index(op, key)
            walk_and_compare(rax.seek(op, key), model, start, rng)


def probes_for(model: Model, gen: KeyGen, rng: random.Random) -> list[bytes]:
    probes = [gen(rng) for _ in range(3)]
    if model.keys:
        key = rng.choice(model.keys)
        probes += [key, key[:-1], key + b"\x00", key[: rng.randrange(len(key) + 1)]]
    return probes


def run_random(gen: KeyGen, seed: int, steps: int, remove_bias: float) -> None:
    rng = random.Random(seed)
    rax: Rax[int] = Rax()
    model = Model()
    for step in range(steps):
        if model.keys and rng.random() < remove_bias:
            key = rng.choice(model.keys) if rng.random() < 0.8 else gen(rng)
            assert rax.remove(key) == model.remove(key)
        else:
            key = gen(rng)
            assert rax.insert(key, step) == model.insert(key, step)
        rax.check()
        assert len(rax) == len(model.keys)
        for probe in probes_for(model, gen, rng):
            assert rax.find(probe) == model.values.get(probe)
            assert (probe in rax) == (probe in model.values)
        check_seeks(rax, model, probes_for(model, gen, rng), rng)
        if step % 25 == 0:
            assert list(rax.items()) == [model.entry(i) for i in range(len(model.keys))]
            assert list(rax.reversed_items()) == list(reversed(list(rax.items())))
    while model.keys:  # drain in random order; the tree must shrink back to the head alone
        key = model.keys[rng.randrange(len(model.keys))]
        assert rax.remove(key) == model.remove(key)
        rax.check()
    assert len(rax) == 0
    assert rax.numnodes == 1


# Key generators: stream IDs of several shapes, and general bytes with many shared prefixes.


def stream_id_key(rng: random.Random) -> bytes:
    shape = rng.randrange(6)
    if shape == 0:
        return sid(rng.randrange(1_700_000_000_000, 1_700_000_000_300), rng.randrange(4))
    if shape == 1:
        return sid(rng.randrange(64), rng.randrange(64))
    if shape == 2:
        return sid(rng.choice([0, UINT64_MAX]), rng.choice([0, 1, UINT64_MAX - 1, UINT64_MAX]))
    if shape == 3:
        return sid(rng.randrange(8) << 56, rng.randrange(3) << 40)
    if shape == 4:
        return sid(rng.getrandbits(64), rng.getrandbits(64))
    return sid(5, rng.randrange(1000))


def short_key(rng: random.Random) -> bytes:
    return bytes(rng.choice(b"ab\x00\xff") for _ in range(rng.randrange(0, 6)))


def text_key(rng: random.Random) -> bytes:
    words = [b"f", b"fo", b"foo", b"foobar", b"footer", b"first", b"annibale", b"anni", b"ago"]
    key = rng.choice(words)
    return key + bytes(rng.choice(b"aeiorst") for _ in range(rng.randrange(0, 3)))


@pytest.mark.parametrize("seed", range(4))
def test_random_stream_ids(seed: int) -> None:
    run_random(stream_id_key, seed, steps=400, remove_bias=0.35)


@pytest.mark.parametrize("seed", range(4))
def test_random_short_keys_with_prefixes(seed: int) -> None:
    run_random(short_key, seed, steps=300, remove_bias=0.45)


@pytest.mark.parametrize("seed", range(3))
def test_random_words_with_prefixes(seed: int) -> None:
    run_random(text_key, seed, steps=300, remove_bias=0.4)


def test_sequential_ids_like_a_stream() -> None:
    """Appends at the tail and trims at the head, as XADD and XTRIM do, with a re-seek after
    each remove."""
    rng = random.Random(7)
    rax: Rax[int] = Rax()
    model = Model()
    ms, seq = 1_700_000_000_000, 0
    for step in range(600):
        if rng.random() < 0.3:
            ms += rng.randrange(1, 2000)
            seq = 0
        else:
            seq += rng.randrange(1, 100)
        key = sid(ms, seq)
        assert rax.insert(key, step)
        model.insert(key, step)
        if step % 3 == 0:
            first = rax.first()
            assert first is not None and first == model.entry(0)
            assert rax.remove(first[0]) == model.remove(first[0])
            it = rax.seek(">=", first[0])
            assert it.next() == (model.entry(0) if model.keys else None)
        rax.check()
        assert rax.last() == (model.entry(len(model.keys) - 1) if model.keys else None)
        assert len(rax) == len(model.keys)


def test_redis_header_example() -> None:
    """The trees drawn in rax.h: "foo", "foobar", "footer", then "first" splits "foo"."""
    rax: Rax[int] = Rax()
    counts = []
    for value, key in enumerate([b"foo", b"foobar", b"footer", b"first"]):
        rax.insert(key, value)
        rax.check()
        counts.append(rax.numnodes)
    # "foo" -> []; "foo" -> "bar"(foo) -> []; "foo" -> [b t](foo) -> "ar"/"er" -> [];
    # then [f] -> [i o] -> "rst" -> [] and -> [o] -> [b t](foo) -> ...
    assert counts == [2, 3, 6, 10]
    assert [key for key, _ in rax.items()] == [b"first", b"foo", b"foobar", b"footer"]


def test_key_removed_from_compressed_node_is_not_recompressed() -> None:
    """rax.c only re-compresses when the emptied key node has exactly one child byte."""
    rax: Rax[int] = Rax()
    rax.insert(b"ab", 1)
    rax.insert(b"abcd", 2)  # "ab" -> "cd"(ab) -> [](abcd)
    assert rax.numnodes == 3
    assert rax.remove(b"ab") == 1
    rax.check()
    assert rax.numnodes == 3  # "ab" -> "cd" -> [] stays
    rax.insert(b"a", 3)  # splits "ab" into [a] -> [b](a)
    assert rax.numnodes == 4
    assert rax.remove(b"a") == 3  # [b] had one child: the chain merges to "abcd"... up to "cd"
    rax.check()
    assert rax.numnodes == 2
    assert list(rax.items()) == [(b"abcd", 2)]


def test_prefix_keys_and_empty_key() -> None:
    rax: Rax[str] = Rax()
    for key in [b"abc", b"", b"a", b"ab", b"abcd"]:
        assert rax.insert(key, key.decode() or "empty")
        rax.check()
    assert [key for key, _ in rax.items()] == [b"", b"a", b"ab", b"abc", b"abcd"]
    assert rax.find(b"") == "empty"
    assert rax.remove(b"abcde") is None
    assert rax.remove(b"abcd") == "abcd"
    assert rax.seek("<", b"abcd").prev() == (b"abc", "abc")
    assert rax.seek(">", b"").next() == (b"a", "a")
    for key in [b"ab", b"", b"abc", b"a"]:
        assert rax.remove(key) is not None
        rax.check()
    assert rax.numnodes == 1


def test_overwrite_keeps_iterators_valid() -> None:
    rax: Rax[int] = Rax()
    rax.insert(sid(1), 1)
    rax.insert(sid(2), 2)
    it = rax.seek("^")
    assert it.next() == (sid(1), 1)
    assert rax.insert(sid(2), 20) is False
    assert it.next() == (sid(2), 20)
    assert rax.numnodes == 6  # "<7 zero bytes>" -> [\x01 \x02] -> two "<8 bytes>" -> two []


def test_modification_invalidates_iterators() -> None:
    rax: Rax[int] = Rax()
    rax.insert(sid(1), 1)
    rax.insert(sid(2), 2)
    it = rax.seek(">=", sid(1))
    rax.remove(sid(1))
    with pytest.raises(RuntimeError):
        it.next()
    it.seek(">=", sid(1))
    assert it.next() == (sid(2), 2)


def test_empty_tree_and_bad_operator() -> None:
    rax: Rax[int] = Rax()
    rax.check()
    assert rax.numnodes == 1
    assert rax.first() is None and rax.last() is None
    for op in SEEK_OPS:
        it = rax.seek(op, sid(1))
        assert it.next() is None and it.prev() is None
    with pytest.raises(ValueError):
        rax.seek("=>", b"")


def test_eof_sticks_until_next_seek() -> None:
    rax: Rax[int] = Rax()
    for ms in range(1, 4):
        rax.insert(sid(ms), ms)
    it = rax.seek("$")
    assert it.next() == (sid(3), 3)
    assert it.next() is None
    assert it.prev() is None
    it.seek("==", sid(2))
    assert it.prev() == (sid(2), 2)
    assert it.prev() == (sid(1), 1)
    assert it.prev() is None


def test_node_bytes_follow_rax_node_layout() -> None:
    rax: Rax[bytes] = Rax()
    assert rax.node_bytes() == 8  # header + 4 padding
    rax.insert(sid(0, 1), b"lp")
    # head: "<16 bytes>" compressed: 4 + 16 + 4 padding + 1 child pointer = 32;
    # leaf key: 4 + 4 padding + value pointer = 16.
    assert rax.node_bytes() == 48
    rax.insert(sid(0, 2), b"lp")
    # head "<15 bytes>": 4+15+5+8 = 32; [\x01 \x02]: 4+2+2+16 = 24; two leaves: 32.
    assert rax.node_bytes() == 88


def test_check_detects_corruption() -> None:
    rax: Rax[int] = Rax()
    rax.insert(sid(1), 1)
    rax._numnodes += 1
    with pytest.raises(AssertionError):
        rax.check()
