"""Rax node counts against a real redis-server's `XINFO STREAM` radix-tree-keys / -nodes.

With `stream-node-max-entries 1` every XADD opens a new listpack, so each entry ID is its own
rax key, and XDEL of that entry (or XTRIM past it) removes the key again. After every command
the counts Redis reports must equal `len(rax)` and `rax.numnodes` of a Rax fed the same keys,
and of the FlatRax streams hold (its counts derived from the sorted keys alone).
"""

from __future__ import annotations

import random
import struct
from collections.abc import Callable, Iterator

import pytest
import redis
from redis_conn import RedisServer

from xstream.engine.flatrax import FlatRax
from xstream.engine.rax import Rax

RedisFactory = Callable[..., RedisServer]

UINT64_MAX = (1 << 64) - 1
STREAM = "s"


@pytest.fixture
def server(redis_factory: RedisFactory) -> Iterator[redis.Redis]:
    """A flushed redis-server (shared harness) where every entry is its own rax key."""
    client = redis.Redis(host="127.0.0.1", port=redis_factory(stream_node_max_entries=1).port)
    try:
        yield client
    finally:
        client.close()


class Mirror:
    """A stream in Redis and a Rax holding the same node keys, compared after each step."""

    def __init__(self, client: redis.Redis) -> None:
        self.client = client
        self.rax: Rax[int] = Rax()
        self.flat: FlatRax[int] = FlatRax()
        self.live: list[tuple[int, int]] = []  # IDs in the stream, in insertion order
        self.steps = 0
        client.delete(STREAM)

    def add(self, ms: int, seq: int) -> None:
        self.client.execute_command("XADD", STREAM, f"{ms}-{seq}", "f", "v")
        assert self.rax.insert(struct.pack(">QQ", ms, seq), 1)
        assert self.flat.insert(struct.pack(">QQ", ms, seq), 1)
        self.live.append((ms, seq))
        self.compare(f"XADD {ms}-{seq}")

    def delete(self, ms: int, seq: int) -> None:
        assert self.client.execute_command("XDEL", STREAM, f"{ms}-{seq}") == 1
        assert self.rax.remove(struct.pack(">QQ", ms, seq)) == 1
        assert self.flat.remove(struct.pack(">QQ", ms, seq)) == 1
        self.live.remove((ms, seq))
        self.compare(f"XDEL {ms}-{seq}")

    def trim_maxlen(self, maxlen: int) -> None:
        """XTRIM MAXLEN = n drops whole nodes from the head, oldest first."""
        self.client.execute_command("XTRIM", STREAM, "MAXLEN", "=", maxlen)
        ordered = sorted(self.live)
        for ms, seq in ordered[: max(0, len(ordered) - maxlen)]:
            assert self.rax.remove(struct.pack(">QQ", ms, seq)) == 1
            assert self.flat.remove(struct.pack(">QQ", ms, seq)) == 1
            self.live.remove((ms, seq))
        self.compare(f"XTRIM MAXLEN = {maxlen}")

    def compare(self, what: str) -> None:
        self.rax.check()
        self.flat.check()
        self.steps += 1
        info = self.client.execute_command("XINFO", "STREAM", STREAM)
        if isinstance(info, list):  # RESP2 without redis-py's dict callback
            info = dict(zip(info[::2], info[1::2], strict=True))
        redis_counts = (info[b"radix-tree-keys"], info[b"radix-tree-nodes"])
        ours = (len(self.rax), self.rax.numnodes)
        assert ours == redis_counts, f"after step {self.steps} ({what}): rax {ours} != redis"
        flat = (len(self.flat), self.flat.numnodes, self.flat.node_bytes())
        assert flat == (*ours, self.rax.node_bytes()), f"after step {self.steps}: flat {flat}"

    def delete_all(self, rng: random.Random) -> None:
        order = list(self.live)
        rng.shuffle(order)
        for ms, seq in order:
            self.delete(ms, seq)
        assert self.rax.numnodes == 1
        assert self.flat.numnodes == 1


def increasing_ids(rng: random.Random, count: int, spread: list[int]) -> list[tuple[int, int]]:
    """Distinct random IDs in increasing order, ms drawn from one of `spread`'s ranges."""
    ids: set[tuple[int, int]] = set()
    while len(ids) < count:
        ms = rng.randrange(1, rng.choice(spread))
        ids.add((ms, rng.choice([0, rng.randrange(4), rng.getrandbits(64)])))
    return sorted(ids)


@pytest.mark.compat
def test_sequential_ids(server: redis.Redis) -> None:
    mirror = Mirror(server)
    for ms in range(1, 300):
        mirror.add(ms, 0)
    for ms in range(1, 300, 7):
        mirror.delete(ms, 0)
    mirror.delete_all(random.Random(1))


@pytest.mark.compat
def test_same_millisecond_sequences(server: redis.Redis) -> None:
    mirror = Mirror(server)
    for seq in range(600):
        mirror.add(1_700_000_000_000, seq)
    mirror.delete_all(random.Random(2))


@pytest.mark.compat
def test_realistic_timestamps_with_tail_appends_and_head_deletes(server: redis.Redis) -> None:
    rng = random.Random(3)
    mirror = Mirror(server)
    ms, seq = 1_700_000_000_000, 0
    for step in range(500):
        if rng.random() < 0.4:
            ms += rng.choice([1, 1, 2, 17, 250, 1000, 65_536])
            seq = 0
        else:
            seq += 1
        mirror.add(ms, seq)
        if step % 4 == 3:
            mirror.delete(*min(mirror.live))
    mirror.delete_all(rng)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.compat
def test_random_ids_random_deletes(server: redis.Redis, seed: int) -> None:
    rng = random.Random(seed)
    mirror = Mirror(server)
    spread = [300, 1 << 16, 1 << 40, UINT64_MAX]
    for ms, seq in increasing_ids(rng, 250, spread):
        mirror.add(ms, seq)
        if mirror.live and rng.random() < 0.35:
            mirror.delete(*rng.choice(mirror.live))
    mirror.delete_all(rng)


@pytest.mark.compat
def test_ids_differing_in_early_bytes(server: redis.Redis) -> None:
    rng = random.Random(4)
    mirror = Mirror(server)
    ids = sorted(
        {
            (top << 56 | mid << 32, seq)
            for top in range(1, 9)
            for mid in range(3)
            for seq in (0, 1, 1 << 40, 1 << 63)
        }
    )
    for ms, seq in ids:
        mirror.add(ms, seq)
    for ms, seq in rng.sample(mirror.live, len(mirror.live) // 2):
        mirror.delete(ms, seq)
    mirror.delete_all(rng)


@pytest.mark.compat
def test_extreme_ids(server: redis.Redis) -> None:
    mirror = Mirror(server)
    for ms, seq in [(0, 1), (0, 2), (0, 255), (0, 256), (1, 0), (255, UINT64_MAX)]:
        mirror.add(ms, seq)
    for ms, seq in [(1 << 63, 0), (UINT64_MAX, 0), (UINT64_MAX, UINT64_MAX - 1)]:
        mirror.add(ms, seq)
    mirror.add(UINT64_MAX, UINT64_MAX)
    mirror.delete(0, 1)
    mirror.delete(UINT64_MAX, UINT64_MAX)
    mirror.delete_all(random.Random(5))


@pytest.mark.compat
def test_emptied_stream_grows_again(server: redis.Redis) -> None:
    rng = random.Random(6)
    mirror = Mirror(server)
    base = 1
    for _round in range(5):
        for ms, seq in increasing_ids(rng, 60, [1 << 12, 1 << 30]):
            mirror.add(base + ms, seq)
        base = max(mirror.live)[0] + 1
        mirror.delete_all(rng)


@pytest.mark.compat
def test_trim_from_the_head(server: redis.Redis) -> None:
    rng = random.Random(7)
    mirror = Mirror(server)
    ms = 1
    for step in range(400):
        ms += rng.choice([1, 3, 256, 4096, 1 << 20])
        mirror.add(ms, rng.randrange(3))
        if step % 25 == 24:
            mirror.trim_maxlen(rng.randrange(0, 30))
    mirror.trim_maxlen(0)
    assert mirror.rax.numnodes == 1
