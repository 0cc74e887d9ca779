"""The stream's rax of listpack nodes, held flat: sorted 16-byte keys in one buffer.

A stream's rax keys are master IDs, all 16 bytes (StreamID.key()), so none is a prefix of
another, and the tree rax.c builds for them depends on the set of keys only: every node is
the head, a leaf (one per key), a branching node (a normal node with one edge per distinct next
byte), or the one node on the edge between a point and its child point that holds the rest of
that edge (a normal node of one char, or a compressed node of two or more); the head itself
holds the keys' common prefix when they share one. rax.c merges every chain of single-child
nodes left by a removal (rax.py, "Invariants"), so no history of inserts and removes leaves
another shape. tests/unit/test_flatrax.py checks this against rax.py's node-for-node Rax, and
tests/compat/test_rax_nodes.py against Redis's XINFO radix-tree-nodes.

So a stream keeps its nodes as two arrays, and no Python object per tree node:

    _keys    [ dead ... | key h | key h+1 | ... | key n-1 ]   one bytearray, 16 bytes a key
    _values  [ None ... | lp h  | lp h+1  | ... | lp n-1  ]   the listpacks, same positions
    _lcps    [ ...      | -     | c h+1   | ... | c n-1   ]   one byte a key: leading bytes it
                                                             shares with the key before it

Slots before `_head` are dead (freed from the front, as trims do, in O(1)); they are compacted
away once they are half of the arrays. Lookups and seeks bisect the keys: O(log n). Appends at
the end are O(1) amortized; inserts and removals elsewhere (XDEL freeing a middle node,
RESTORE) move the arrays' tails, as a list does.

numnodes and node_bytes() (XINFO's radix-tree-nodes, MEMORY USAGE's share of the tree) are
those of rax.c's tree for the keys: `Shape` walks the keys' common-prefix bytes once, keeping
the open path of the tree's rightmost branch; appends extend it (O(1)), any other change drops
it, and the next question walks the bytes again (O(n), one byte a key: XINFO after a trim).
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import pairwise
from typing import Final, Generic, TypeVar

V = TypeVar("V")

KEY_LEN: Final = 16  # a master ID: ms and seq, 8 bytes each, big-endian
SEEK_OPS: Final = frozenset(("^", "$", ">=", ">", "<=", "<", "=="))
_COMPACT_MIN: Final = 64  # dead slots tolerated before compaction is considered


# ---------------------------------------------------------------- rax.c's node sizes (64-bit)


def _normal(size: int) -> int:
    """raxNodeCurrentLength of a non-key normal node with `size` edges."""
    return 4 + size + ((8 - (4 + size) % 8) & 7) + 8 * size


def _run(chars: int) -> int:
    """raxNodeCurrentLength of the non-key single-child node holding `chars` >= 1 chars of an
    edge: a normal node of one char, or a compressed node."""
    if chars == 1:
        return _normal(1)
    return 4 + chars + ((8 - (4 + chars) % 8) & 7) + 8


_LEAF: Final = 16  # a key with a value and no children: header 4, padding 4, value pointer 8
_EMPTY: Final = 8  # the head of an empty tree: header 4, padding 4


def common_prefix(a: bytes, b: bytes) -> int:
    """How many leading bytes two different 16-byte keys share."""
    diff = int.from_bytes(a, "big") ^ int.from_bytes(b, "big")
    return (8 * KEY_LEN - diff.bit_length()) // 8


class Shape:
    """rax.c's node count and bytes for sorted, distinct 16-byte keys given by `add`.

    The tree is seen as points (the head at depth 0, branching nodes at the depth of their
    keys' common prefix, leaves at depth 16) joined by edges; an edge of length l from a
    branching point costs one node for its last l - 1 chars when l >= 2. The head with one
    child holds that child's whole edge itself. Points stay open while they are on the path
    to the last key (they may still gain children); the rest are closed and summed.
    """

    __slots__ = (
        "_bytes",
        "_children",
        "_depths",
        "_head_bytes",
        "_head_child",
        "_head_nodes",
        "_nodes",
    )

    def __init__(self) -> None:
        self._depths: list[int] = [0]  # open points, the head first and the last leaf last
        self._children: list[int] = [0]  # each open point's children so far
        self._nodes = 0  # closed points and their edges' nodes, edges from the head apart
        self._bytes = 0  # the same nodes' raxNodeCurrentLength
        self._head_nodes = 0  # edge nodes below the head (dropped if it keeps one child)
        self._head_bytes = 0
        self._head_child = 0  # depth of the head's latest closed child

    def add(self, p: int) -> None:
        """Add a key greater than every key added so far, sharing `p` leading bytes with the
        previous one (any value for the first key)."""
        depths, children = self._depths, self._children
        if len(depths) == 1:
            p = 0
        while depths[-1] > p:
            depth = depths.pop()
            self._close(depth, children.pop(), max(depths[-1], p))
        if depths[-1] < p:  # a new branching point, above the subtree just closed
            depths.append(p)
            children.append(1)
        children[-1] += 1
        depths.append(KEY_LEN)
        children.append(0)

    def _close(self, depth: int, children: int, parent: int) -> None:
        self._nodes += 1
        self._bytes += _normal(children) if children else _LEAF
        edge = depth - parent
        if parent == 0:  # only the head sits at depth 0
            self._head_child = depth
            if edge >= 2:
                self._head_nodes += 1
                self._head_bytes += _run(edge - 1)
        elif edge >= 2:
            self._nodes += 1
            self._bytes += _run(edge - 1)

    def totals(self) -> tuple[int, int]:
        """(numnodes, bytes) of the tree: the open points closed on a copy."""
        depths, children = self._depths, self._children
        if len(depths) == 1:
            return 1, _EMPTY
        done = self._copy()
        for i in range(len(depths) - 1, 0, -1):
            done._close(depths[i], children[i], depths[i - 1])
        if children[0] == 1:  # the head holds its only child's edge
            return done._nodes + 1, done._bytes + _run(done._head_child)
        nodes = done._nodes + 1 + done._head_nodes
        return nodes, done._bytes + _normal(children[0]) + done._head_bytes

    def _copy(self) -> Shape:
        """The closed sums alone (no open points)."""
        out = Shape()
        out._nodes, out._bytes = self._nodes, self._bytes
        out._head_nodes, out._head_bytes = self._head_nodes, self._head_bytes
        out._head_child = self._head_child
        return out


# ---------------------------------------------------------------- the map


class FlatRax(Generic[V]):
    """Ordered map from 16-byte keys to V, with Rax's methods and rax.c's node counts."""

    __slots__ = ("_head", "_keys", "_lcps", "_shape", "_values", "_version")

    def __init__(self) -> None:
        self._keys = bytearray()  # KEY_LEN bytes per slot, sorted from slot _head on
        self._values: list[V | None] = []  # None in dead slots
        self._lcps = bytearray()  # per slot after _head: bytes shared with the key before
        self._head = 0  # the first live slot
        self._shape: Shape | None = Shape()  # of the live keys; None: walk them again
        self._version = 0  # bumped when a key comes or goes, to catch stale iterators

    def __len__(self) -> int:
        return len(self._values) - self._head

    def __contains__(self, key: bytes) -> bool:
        return self._index(key) >= 0

    def _common(self, slot: int) -> int:
        """Leading bytes the key at `slot` (> _head) shares with the one before it."""
        return common_prefix(self.key_at(slot - 1), self.key_at(slot))

    def key_at(self, slot: int) -> bytes:
        start = slot * KEY_LEN
        return bytes(self._keys[start : start + KEY_LEN])

    def value_at(self, slot: int) -> V:
        return self._values[slot]  # type: ignore[return-value]

    def bisect(self, key: bytes, right: bool) -> int:
        """The slot where `key` would go: before equal keys, or after them if `right`."""
        keys = self._keys
        lo, hi = self._head, len(self._values)
        if lo == hi:
            return lo
        if keys[-KEY_LEN:] < key:  # past the end: every append
            return hi
        first = keys[lo * KEY_LEN : (lo + 1) * KEY_LEN]
        if key < first or (key == first and not right):  # at the front: trims
            return lo
        while lo < hi:
            mid = (lo + hi) // 2
            k = keys[mid * KEY_LEN : (mid + 1) * KEY_LEN]
            if k < key or (right and k == key):
                lo = mid + 1
            else:
                hi = mid
        return lo

    def _index(self, key: bytes) -> int:
        """The slot holding `key`, or -1."""
        i = self.bisect(key, False)
        if i < len(self._values) and self._keys[i * KEY_LEN : (i + 1) * KEY_LEN] == key:
            return i
        return -1

    def find(self, key: bytes) -> V | None:
        i = self._index(key)
        return None if i < 0 else self.value_at(i)

    # ------------------------------------------------------------------ changes

    def insert(self, key: bytes, value: V) -> bool:
        """Set `key` to `value`. True if the key is new; False if an old value was replaced."""
        assert len(key) == KEY_LEN, key
        i = self.bisect(key, False)
        n = len(self._values)
        if i < n and self._keys[i * KEY_LEN : (i + 1) * KEY_LEN] == key:
            self._values[i] = value
            return False
        self._version += 1
        if i == n:
            self._keys += key
            self._values.append(value)
            self._lcps.append(self._common(i) if i > self._head else 0)
            if self._shape is not None:
                self._shape.add(self._lcps[i])
            return True
        self._shape = None
        if i == self._head and i:  # before the first key: reuse a dead slot
            i -= 1
            self._keys[i * KEY_LEN : (i + 1) * KEY_LEN] = key
            self._values[i] = value
            self._head = i
        else:
            self._keys[i * KEY_LEN : i * KEY_LEN] = key
            self._values.insert(i, value)
            self._lcps.insert(i, self._common(i) if i > self._head else 0)
        self._lcps[i + 1] = self._common(i + 1)
        return True

    def remove(self, key: bytes) -> V | None:
        """Delete `key`; return its value, or None if it was absent."""
        i = self._index(key)
        if i < 0:
            return None
        old = self.value_at(i)
        self._version += 1
        self._shape = None
        if i == self._head:
            self._values[i] = None
            self._head += 1
            self._compact()
        else:
            del self._keys[i * KEY_LEN : (i + 1) * KEY_LEN]
            del self._values[i]
            del self._lcps[i]
            if i < len(self._values):
                self._lcps[i] = self._common(i)
        return old

    def _compact(self) -> None:
        """Drop the dead slots once they are half the arrays (all of them when empty)."""
        head = self._head
        if head == len(self._values):
            self._keys = bytearray()
            self._values = []
            self._lcps = bytearray()
            self._head = 0
            self._shape = Shape()
        elif head >= _COMPACT_MIN and 2 * head >= len(self._values):
            del self._keys[: head * KEY_LEN]
            del self._values[:head]
            del self._lcps[:head]
            self._head = 0

    # ------------------------------------------------------------------ ordered access

    def first(self) -> tuple[bytes, V] | None:
        if self._head == len(self._values):
            return None
        return self.key_at(self._head), self.value_at(self._head)

    def last(self) -> tuple[bytes, V] | None:
        n = len(self._values)
        if self._head == n:
            return None
        return self.key_at(n - 1), self.value_at(n - 1)

    def seek(self, op: str, key: bytes = b"") -> FlatRaxIterator[V]:
        """A new iterator positioned as rax.c raxSeek(op, key) would; see FlatRaxIterator."""
        it: FlatRaxIterator[V] = FlatRaxIterator(self)
        it.seek(op, key)
        return it

    def items(self) -> Iterator[tuple[bytes, V]]:
        it = self.seek("^")
        while (entry := it.next()) is not None:
            yield entry

    def reversed_items(self) -> Iterator[tuple[bytes, V]]:
        it = self.seek("$")
        while (entry := it.prev()) is not None:
            yield entry

    # ------------------------------------------------------------------ introspection

    def _shape_now(self) -> Shape:
        shape = self._shape
        if shape is None:  # a walk of one byte per key (~30 ms for 1M keys, compiled)
            shape = Shape()
            lcps = self._lcps
            for slot in range(self._head, len(lcps)):
                shape.add(lcps[slot])
            self._shape = shape
        return shape

    @property
    def numnodes(self) -> int:
        """rax->numnodes of rax.c's tree for these keys, the head included."""
        return self._shape_now().totals()[0]

    def node_bytes(self) -> int:
        """Sum of rax.c raxNodeCurrentLength() over that tree's nodes, for MEMORY USAGE."""
        return self._shape_now().totals()[1]

    def check(self) -> None:
        """Assert the layout: slots aligned, keys increasing, dead slots empty, the kept
        shape equal to a fresh walk."""
        n = len(self._values)
        assert len(self._keys) == n * KEY_LEN == len(self._lcps) * KEY_LEN, (len(self._keys), n)
        assert 0 <= self._head <= n
        assert all(v is None for v in self._values[: self._head]), "a dead slot holds a value"
        keys = [self.key_at(slot) for slot in range(self._head, n)]
        assert all(a < b for a, b in pairwise(keys)), "keys out of order"
        lcps = [common_prefix(a, b) for a, b in pairwise(keys)]
        assert list(self._lcps[self._head + 1 :]) == lcps, "a kept common prefix is stale"
        fresh = Shape()
        for p in [0, *lcps][: len(keys)]:
            fresh.add(p)
        assert self._shape is None or self._shape.totals() == fresh.totals(), "stale shape"


class FlatRaxIterator(Generic[V]):
    """A position in a FlatRax, with RaxIterator's semantics (rax.c raxSeek / raxNext /
    raxPrev): the first step after a seek returns what the seek found; EOF sticks until the
    next seek; a key inserted or removed since the seek makes every step raise RuntimeError.
    """

    __slots__ = ("_eof", "_just_seeked", "_rax", "_slot", "_version")

    def __init__(self, rax: FlatRax[V]) -> None:
        self._rax = rax
        self._version = rax._version  # the map's version when last seeked
        self._slot = 0  # the current slot, unless at EOF
        self._eof = True  # nothing to return until seeked
        self._just_seeked = False  # the next step returns the current element itself

    def seek(self, op: str, key: bytes = b"") -> None:
        if op not in SEEK_OPS:
            raise ValueError(f"invalid rax seek operator {op!r}")
        rax = self._rax
        self._version = rax._version
        self._just_seeked = True
        head, n = rax._head, len(rax._values)
        if op == "^":
            slot = head
        elif op == "$":
            slot = n - 1
        elif op == "==":
            slot = rax._index(key)
        elif op[0] == ">":
            slot = rax.bisect(key, op == ">")
        else:
            slot = rax.bisect(key, op == "<=") - 1
        self._slot = slot
        self._eof = not head <= slot < n

    def next(self) -> tuple[bytes, V] | None:
        """The current element if just seeked, else the following one; None at EOF."""
        return self._step(1)

    def prev(self) -> tuple[bytes, V] | None:
        """The current element if just seeked, else the preceding one; None at EOF."""
        return self._step(-1)

    def _step(self, delta: int) -> tuple[bytes, V] | None:
        rax = self._rax
        if self._version != rax._version:
            raise RuntimeError("rax modified since the iterator was seeked")
        if self._eof:
            return None
        if self._just_seeked:
            self._just_seeked = False
        else:
            self._slot += delta
            if not rax._head <= self._slot < len(rax._values):
                self._eof = True
                return None
        return rax.key_at(self._slot), rax.value_at(self._slot)
