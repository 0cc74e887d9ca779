"""SortedKeys: distinct keys kept in order, for the PELs (Redis keeps those in a rax).

A flat sorted list costs O(n) per insertion or removal away from its end (the list's tail is
moved), which made XACK of a PEL's oldest entries cost as much as the whole PEL. Here the
keys live in blocks, each a short sorted list, with the largest key of each block beside it:

    maxes   [ m0        , m1          , m2    ]      mi = blocks[i][-1], increasing
    blocks  [[k .. m0]  , [k .. m1]   , [.. m2]]     every key of block i < every key of i+1

A lookup bisects `maxes` for the block, then the block: O(log n). An insertion or removal
moves at most one block's tail (< 2 * LOAD pointers); a block longer than 2 * LOAD is split in
two halves and one shorter than LOAD / 4 is merged into a neighbour (then split if too long),
so there are O(n / LOAD) blocks and `maxes` moves rarely.

Invariants (check() asserts them): no block is empty; maxes[i] is blocks[i][-1]; the
concatenation of the blocks is strictly increasing; `_len` is its length. Keys compare with
`<` and are never equal to one another (callers keep a key in at most once).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right, insort
from collections.abc import Iterator
from itertools import pairwise
from typing import Any, Final, Generic, TypeVar

K = TypeVar("K", bound=Any)  # a totally ordered key: StreamID, (time, StreamID)

LOAD: Final = 256  # a block's target length: split past 2 * LOAD, merged below LOAD // 4


class SortedKeys(Generic[K]):
    __slots__ = ("_blocks", "_len", "_maxes")

    def __init__(self) -> None:
        self._blocks: list[list[K]] = []  # the keys, in order, LOAD or so per block
        self._maxes: list[K] = []  # each block's last key
        self._len = 0  # keys in all

    def __len__(self) -> int:
        return self._len

    def add(self, key: K) -> None:
        """Insert a key not present."""
        blocks, maxes = self._blocks, self._maxes
        self._len += 1
        if not maxes:
            blocks.append([key])
            maxes.append(key)
            return
        i = bisect_left(maxes, key)  # the first block whose last key is >= key
        if i == len(maxes):  # past every key: the common case (IDs and times grow)
            i -= 1
            block = blocks[i]
            block.append(key)
            maxes[i] = key
        else:
            block = blocks[i]
            insort(block, key)
        if len(block) > 2 * LOAD:
            self._split(i)

    def remove(self, key: K) -> None:
        """Remove a key present."""
        blocks, maxes = self._blocks, self._maxes
        i = bisect_left(maxes, key)
        block = blocks[i]
        j = bisect_left(block, key)
        assert block[j] == key, "SortedKeys.remove of an absent key"
        del block[j]
        self._len -= 1
        if not block:
            del blocks[i]
            del maxes[i]
            return
        if j == len(block):
            maxes[i] = block[-1]
        if len(block) < LOAD // 4 and len(blocks) > 1:
            self._merge(i)

    def first(self) -> K | None:
        return self._blocks[0][0] if self._blocks else None

    def last(self) -> K | None:
        return self._maxes[-1] if self._maxes else None

    def __iter__(self) -> Iterator[K]:
        """Every key, in order (the structure must not change while this runs)."""
        for block in self._blocks:
            yield from block

    def since(self, key: K, *, inclusive: bool = True) -> Iterator[K]:
        """The keys >= key (> key when not inclusive), in order, lazily (the structure must
        not change while this runs)."""
        blocks = self._blocks
        find = bisect_left if inclusive else bisect_right
        i = find(self._maxes, key)
        if i == len(blocks):
            return
        j = find(blocks[i], key)
        yield from blocks[i][j:]
        for block in blocks[i + 1 :]:
            yield from block

    def _split(self, i: int) -> None:
        block = self._blocks[i]
        half = len(block) // 2
        self._blocks.insert(i + 1, block[half:])
        del block[half:]
        self._maxes.insert(i, block[-1])  # the old max now ends block i + 1

    def _merge(self, i: int) -> None:
        """Merge short block i with a neighbour, splitting the result if too long."""
        blocks, maxes = self._blocks, self._maxes
        j = i if i + 1 < len(blocks) else i - 1  # blocks j and j + 1 become block j
        blocks[j] += blocks[j + 1]
        maxes[j] = maxes[j + 1]
        del blocks[j + 1]
        del maxes[j + 1]
        if len(blocks[j]) > 2 * LOAD:
            self._split(j)

    def check(self) -> None:
        """Assert the invariants (see the module comment)."""
        assert len(self._blocks) == len(self._maxes), "SortedKeys: blocks and maxes differ"
        assert all(self._blocks), "SortedKeys: an empty block"
        assert all(b[-1] == m for b, m in zip(self._blocks, self._maxes, strict=True))
        keys = list(self)
        assert all(a < b for a, b in pairwise(keys)), "SortedKeys: keys out of order"
        assert len(keys) == self._len, "SortedKeys: wrong length"
