"""A compressed radix tree that mirrors Redis's `rax` node for node.

A stream keeps its listpacks in a rax keyed by the 16-byte big-endian encoding of each
listpack's master ID. `XINFO STREAM` reports `radix-tree-nodes`, which is `rax->numnodes`, so
this tree must split and merge nodes exactly where `rax.c` does, quirks included; any byte
strings work as keys, including keys that are prefixes of one another.

Characters live on the edges. A node's key is the concatenation of the edge bytes on the path
from the head to it. There are two kinds of node:

    normal node, `size` children, edge bytes sorted:

        [iskey?][ a  c  x ]          chars = b"acx", children = [A, C, X]
                  |  |  |
                  A  C  X

    compressed node: a run of `size` >= 2 bytes standing for a chain of single-child nodes,
    of which only the last one is stored:

        [iskey?]"foo" --> F          chars = b"foo", children = [F]

Either kind may hold a key (`iskey`); that key is the path *to* the node, not through its
chars. Storing "foo", "foobar" and "footer":

        "foo" --> [b t](foo) --b--> "ar" --> [](foobar)
                           \\--t--> "er" --> [](footer)

Invariants (asserted by `check`):

* `numnodes` counts every node, the head included; an empty tree is the head alone (1 node).
* A compressed node holds >= 2 chars and exactly one child; a normal node holds one child per
  edge byte, bytes strictly increasing. Every leaf other than the head holds a key.
* rax.c re-compresses after a removal only in two events: a leaf is unlinked and its parent
  is left with one child, or a key is removed from a normal node with one child. Removing a
  key from a compressed node that has a child (possible only when keys are prefixes of other
  keys) leaves the chain as it is, and so does this tree. While no key has been a proper
  prefix of another since the tree was last empty (stream IDs are all 16 bytes), no
  single-child non-key node has a single-child non-key child.

Iterators (`seek`) hold a path of nodes: any insert of a new key or any remove invalidates
them, and using one afterwards raises RuntimeError. Callers re-seek after modifying, e.g. trim
does `remove(key)` and then `seek(">=", key)`. Overwriting an existing key's value does not
invalidate iterators.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterator, Sequence
from typing import Final, Generic, TypeVar

V = TypeVar("V")
_Move = Callable[[], bool]  # an iterator step; False when it runs off the tree

NODE_MAX_SIZE: Final = (1 << 29) - 1  # rax.c RAX_NODE_MAX_SIZE: longest run a header counts
SEEK_OPS: Final = frozenset(("^", "$", ">=", ">", "<=", "<", "=="))
_PTR: Final = 8  # pointer size of the 64-bit build whose allocations node_bytes() reports
_HEADER: Final = 4  # raxNode header: iskey:1 isnull:1 iscompr:1 size:29


# the leaves' children: immutable, replaced (never mutated) on growth
_NO_CHILDREN: Final[tuple[()]] = ()


class _Node(Generic[V]):
    __slots__ = ("chars", "children", "iscompr", "iskey", "value")

    def __init__(self) -> None:
        self.chars = b""  # run (compressed) or sorted edge bytes (normal); b"" for a leaf
        # one child (compressed) or one per edge byte; leaves share one empty tuple, which
        # saves a list per stream node (every rax key is a leaf)
        self.children: Sequence[_Node[V]] = _NO_CHILDREN  # a list once it has children
        self.iscompr = False  # True: chars is a run of >= 2 bytes with a single child
        self.iskey = False  # True: the path to this node is a key
        self.value: V | None = None  # the key's value; None when not a key (or a NULL value)

    def compressible(self) -> bool:
        """rax.c's test for a chain member: not a key, and exactly one child."""
        return not self.iskey and (self.iscompr or len(self.chars) == 1)

    def length(self) -> int:
        """rax.c raxNodeCurrentLength() on a 64-bit build."""
        size = len(self.chars)
        padding = (_PTR - (size + _HEADER) % _PTR) & (_PTR - 1)
        pointers = _PTR if self.iscompr else _PTR * size
        value = _PTR if self.iskey and self.value is not None else 0
        return _HEADER + size + padding + pointers + value


class Rax(Generic[V]):
    """Ordered map from bytes to V with rax.c's node layout; see the module comment."""

    __slots__ = ("_head", "_numele", "_numnodes", "_prefix_keys_seen", "_version")

    def __init__(self) -> None:
        self._head: _Node[V] = _Node()  # never replaced: splits and merges mutate in place
        self._numele = 0  # number of keys
        self._numnodes = 1  # rax->numnodes; the head counts
        self._prefix_keys_seen = False  # some key had children since the tree was last empty
        self._version = 0  # bumped on every structural change, to catch stale iterators

    def __len__(self) -> int:
        return self._numele

    def __contains__(self, key: bytes) -> bool:
        return self._lookup(key) is not None

    @property
    def numnodes(self) -> int:
        return self._numnodes

    def find(self, key: bytes) -> V | None:
        node = self._lookup(key)
        return None if node is None else node.value

    def _lookup(self, key: bytes) -> _Node[V] | None:
        h = self._head
        i, n = 0, len(key)
        while i < n:
            chars = h.chars
            if not chars:
                return None
            if h.iscompr:
                end = i + len(chars)
                if key[i:end] != chars:
                    return None
                i = end
                h = h.children[0]
            else:
                pos = chars.find(key[i])
                if pos < 0:
                    return None
                i += 1
                h = h.children[pos]
        return h if h.iskey else None

    def _walk(
        self, key: bytes, path: list[tuple[_Node[V], int]] | None
    ) -> tuple[_Node[V], int, int]:
        """raxLowWalk: follow `key` as far as it matches.

        Returns (stop node, bytes of `key` consumed, split position inside the stop node's run:
        the count of its chars matched, 0 unless the walk stopped inside a compressed node).
        Each (node, child index) passed through is appended to `path`.
        """
        h = self._head
        i, n = 0, len(key)
        while h.chars and i < n:
            chars = h.chars
            if h.iscompr:
                size = len(chars)
                if key[i : i + size] != chars:
                    j = 0
                    while i < n and j < size and chars[j] == key[i]:
                        i += 1
                        j += 1
                    return h, i, j
                i += size
                pos = 0
            else:
                pos = chars.find(key[i])
                if pos < 0:
                    return h, i, 0
                i += 1
            if path is not None:
                path.append((h, pos))
            h = h.children[pos]
        return h, i, 0

    # ------------------------------------------------------------------ insert

    def insert(self, key: bytes, value: V) -> bool:
        """Set `key` to `value`. True if the key is new; False if an old value was replaced."""
        h, i, j = self._walk(key, None)
        n = len(key)
        if i == n and (not h.iscompr or j == 0):
            # The node for the key exists: it is a key already, or becomes one.
            if h.iskey:
                h.value = value
                return False
            if h.children:
                self._prefix_keys_seen = True
            return self._make_key(h, value)
        if h.iscompr and i == n:
            self._split_for_prefix(h, j, value)
            return True
        if h.iscompr:
            h = self._split_on_mismatch(h, j)
        elif h.iskey:
            self._prefix_keys_seen = True
        self._extend(h, key, i, value)
        return True

    def _make_key(self, h: _Node[V], value: V) -> bool:
        h.iskey = True
        h.value = value
        self._numele += 1
        self._version += 1
        return True

    def _split_on_mismatch(self, h: _Node[V], j: int) -> _Node[V]:
        """rax.c "ALGO 1": the key leaves compressed node `h` at run index `j`.

        `h` keeps run[:j] (j > 0) or becomes the split node itself (j == 0). The split node is a
        normal node whose one edge is run[j], leading to a postfix node holding run[j+1:] (if
        any) and then to h's old child. Returns the split node, which the caller extends with
        the key's own edge.
        """
        run, nxt = h.chars, h.children[0]
        postfix = nxt
        if j + 1 < len(run):
            postfix = _Node()
            postfix.chars = run[j + 1 :]
            postfix.iscompr = len(postfix.chars) > 1
            postfix.children = [nxt]
            self._numnodes += 1
        if j == 0:
            split = h  # the split node replaces h and inherits its key
        else:
            split = _Node()
            h.chars = run[:j]
            h.iscompr = j > 1
            h.children = [split]
            self._numnodes += 1
        split.chars = run[j : j + 1]
        split.iscompr = False
        split.children = [postfix]
        return split

    def _split_for_prefix(self, h: _Node[V], j: int, value: V) -> None:
        """rax.c "ALGO 2": the key ends inside compressed node `h`, after `j` > 0 run bytes.

        `h` keeps run[:j] and its own key; a new postfix node holding run[j:] becomes the key.
        """
        postfix: _Node[V] = _Node()
        postfix.chars = h.chars[j:]
        postfix.iscompr = len(postfix.chars) > 1
        postfix.children = h.children
        postfix.iskey = True
        postfix.value = value
        h.chars = h.chars[:j]
        h.iscompr = j > 1
        h.children = [postfix]
        self._numnodes += 1
        self._numele += 1
        self._version += 1
        self._prefix_keys_seen = True

    def _extend(self, h: _Node[V], key: bytes, i: int, value: V) -> None:
        """Hang key[i:] below normal node `h`: a childless node takes the rest as one run
        (then a leaf); a node with children gets one more edge byte."""
        n = len(key)
        while i < n:
            child: _Node[V] = _Node()
            if not h.chars and n - i > 1:
                size = min(n - i, NODE_MAX_SIZE)
                h.chars = key[i : i + size]
                h.iscompr = True
                h.children = [child]
                i += size
            else:
                pos = bisect_left(h.chars, key[i])
                h.chars = h.chars[:pos] + key[i : i + 1] + h.chars[pos:]
                if isinstance(h.children, list):
                    h.children.insert(pos, child)
                else:
                    h.children = [child]
                i += 1
            self._numnodes += 1
            h = child
        self._make_key(h, value)

    # ------------------------------------------------------------------ remove

    def remove(self, key: bytes) -> V | None:
        """Delete `key`; return its value, or None if it was absent."""
        path: list[tuple[_Node[V], int]] = []
        h, i, j = self._walk(key, path)
        if i != len(key) or j != 0 or not h.iskey:
            return None
        old = h.value
        h.iskey = False
        h.value = None
        self._numele -= 1
        self._version += 1
        start: _Node[V] | None = None
        if not h.chars:
            start = self._unlink_leaf(h, path)
        elif len(h.chars) == 1:
            start = h  # a normal node with one child stopped being a key
        # WARNING: a compressed node that loses its key is not re-compressed: rax.c does not.
        if start is not None:
            self._recompress(start, path)
        if self._numele == 0:
            self._prefix_keys_seen = False
        return old

    def _unlink_leaf(self, h: _Node[V], path: list[tuple[_Node[V], int]]) -> _Node[V] | None:
        """Free leaf `h` and the single-child non-key nodes above it, then cut the edge from
        the first ancestor that stays. Returns that ancestor if it may now head a chain."""
        freed = False
        pos = 0
        while h is not self._head:
            freed = True
            self._numnodes -= 1
            h, pos = path.pop()
            if h.iskey or (not h.iscompr and len(h.chars) != 1):
                break
        if not freed:
            return None
        if h.iscompr:
            h.chars = b""
            h.iscompr = False
            h.children = _NO_CHILDREN
        else:
            h.chars = h.chars[:pos] + h.chars[pos + 1 :]
            assert isinstance(h.children, list), "a normal node with an edge has children"
            del h.children[pos]
        return h if len(h.chars) == 1 and not h.iskey else None

    def _recompress(self, h: _Node[V], path: list[tuple[_Node[V], int]]) -> None:
        """Merge the chain of single-child non-key nodes through `h` into one compressed node.

        The chain starts at the highest such ancestor of `h` and runs down to the first node
        that is a key or has another number of children than one; the merged node keeps the
        identity of the chain's first node, so the parent's link stays valid.
        """
        while path and path[-1][0].compressible():
            h = path.pop()[0]
        chain = [h]
        size = len(h.chars)
        nxt = h.children[-1]
        while nxt.compressible() and size + len(nxt.chars) <= NODE_MAX_SIZE:
            chain.append(nxt)
            size += len(nxt.chars)
            nxt = nxt.children[-1]
        if len(chain) == 1:
            return
        h.chars = b"".join(node.chars for node in chain)
        h.iscompr = True
        h.children = [nxt]
        self._numnodes -= len(chain) - 1

    # ------------------------------------------------------------------ ordered access

    def first(self) -> tuple[bytes, V] | None:
        """The smallest key and its value."""
        if not self._numele:
            return None
        h, key = self._head, bytearray()
        while not h.iskey:
            key += h.chars if h.iscompr else h.chars[:1]
            h = h.children[0]
        return bytes(key), h.value  # type: ignore[return-value]

    def last(self) -> tuple[bytes, V] | None:
        """The greatest key and its value."""
        if not self._numele:
            return None
        h, key = self._head, bytearray()
        while h.children:
            key += h.chars if h.iscompr else h.chars[-1:]
            h = h.children[-1]
        return bytes(key), h.value  # type: ignore[return-value]

    def seek(self, op: str, key: bytes = b"") -> RaxIterator[V]:
        """A new iterator positioned as rax.c raxSeek(op, key) would; see RaxIterator."""
        it: RaxIterator[V] = RaxIterator(self)
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

    def node_bytes(self) -> int:
        """Sum of rax.c raxNodeCurrentLength() over all nodes (64-bit), for MEMORY USAGE."""
        total = 0
        stack = [self._head]
        while stack:
            node = stack.pop()
            total += node.length()
            stack.extend(node.children)
        return total

    def check(self) -> None:
        """Assert the invariants listed in the module comment."""
        nodes = keys = 0
        previous: bytes | None = None
        stack: list[tuple[_Node[V], bytes]] = [(self._head, b"")]
        while stack:
            node, key = stack.pop()
            nodes += 1
            self._check_node(node)
            if node.iskey:
                keys += 1
                assert previous is None or previous < key, (previous, key)
                previous = key
            if node.iscompr:
                stack.append((node.children[0], key + node.chars))
            else:  # pushed in reverse so that keys pop in increasing order
                for pos in range(len(node.chars) - 1, -1, -1):
                    stack.append((node.children[pos], key + node.chars[pos : pos + 1]))
        assert nodes == self._numnodes, (nodes, self._numnodes)
        assert keys == self._numele, (keys, self._numele)
        assert keys or not self._head.children, "an empty tree is the head alone"

    def _check_node(self, node: _Node[V]) -> None:
        size = len(node.chars)
        if node.iscompr:
            assert 2 <= size <= NODE_MAX_SIZE and len(node.children) == 1, node.chars
        else:
            assert len(node.children) == size, node.chars
            assert all(a < b for a, b in zip(node.chars, node.chars[1:], strict=False)), node.chars
        if not node.children:
            assert node.iskey or node is self._head, "a leaf must hold a key"
        if not node.iskey:
            assert node.value is None
        if node.compressible() and not self._prefix_keys_seen:
            assert not node.children[0].compressible(), "chain left uncompressed"


class RaxIterator(Generic[V]):
    """A position in a Rax, with rax.c raxSeek / raxNext / raxPrev semantics.

    After `seek`, the first `next()` or `prev()` returns the element the seek found (">=": the
    smallest key >= k; "<=": the greatest key <= k; "^" first; "$" last; "==" k itself), and
    later calls step forward or backward from it. A seek that finds nothing, or a step past
    either end, leaves the iterator at EOF: every call returns None until the next seek.
    Inserting a new key into, or removing one from, the tree invalidates the iterator: calls
    raise RuntimeError until it is seeked again.
    """

    __slots__ = (
        "_eof",
        "_just_seeked",
        "_key",
        "_node",
        "_offsets",
        "_parents",
        "_rax",
        "_version",
    )

    def __init__(self, rax: Rax[V]) -> None:
        self._rax = rax
        self._version = rax._version  # the tree's version when last seeked
        self._node = rax._head  # current node; a key node unless at EOF
        self._parents: list[_Node[V]] = []  # nodes from the head down to the current node
        self._offsets: list[int] = []  # child index taken in each of _parents
        self._key = bytearray()  # edge bytes from the head to the current node
        self._eof = True  # nothing to return until seeked
        self._just_seeked = False  # the next step returns the current element itself

    def seek(self, op: str, key: bytes = b"") -> None:
        if op not in SEEK_OPS:
            raise ValueError(f"invalid rax seek operator {op!r}")
        rax = self._rax
        self._version = rax._version
        self._node = rax._head
        self._parents.clear()
        self._offsets.clear()
        self._key.clear()
        self._just_seeked = True
        self._eof = rax._numele == 0
        if self._eof:
            return
        if op == "^":
            found = self._node.iskey or self._descend_first()
        elif op == "$":
            found = self._descend_last()
        else:
            found = self._seek_key(op, key)
        self._eof = not found

    def next(self) -> tuple[bytes, V] | None:
        """The current element if just seeked, else the following one; None at EOF."""
        if not self._step(self._step_next):
            return None
        return bytes(self._key), self._node.value  # type: ignore[return-value]

    def prev(self) -> tuple[bytes, V] | None:
        """The current element if just seeked, else the preceding one; None at EOF."""
        if not self._step(self._step_prev):
            return None
        return bytes(self._key), self._node.value  # type: ignore[return-value]

    def _step(self, move: _Move) -> bool:
        if self._version != self._rax._version:
            raise RuntimeError("rax modified since the iterator was seeked")
        if self._eof:
            return False
        if self._just_seeked:
            self._just_seeked = False
            return True
        if not move():
            self._eof = True
        return not self._eof

    # Seeking: walk down along the key, then settle on the nearest key in the wanted direction.

    def _seek_key(self, op: str, key: bytes) -> bool:
        gt = op[0] == ">"
        i, n = 0, len(key)
        while i < n:
            h = self._node
            chars = h.chars
            if h.iscompr:
                size = len(chars)
                if key[i : i + size] == chars:
                    self._push(0)
                    i += size
                    continue
                if op == "==":
                    return False
                j = 0
                while i + j < n and j < size and chars[j] == key[i + j]:
                    j += 1
                if i + j == n or chars[j] > key[i + j]:
                    # h's own key (if any) < key < every key below h.
                    return self._step_next() if gt else h.iskey or self._step_prev()
                # Every key at or below h < key.
                return self._step_up_next() if gt else self._descend_last()
            pos = bisect_left(chars, key[i])
            if pos < len(chars) and chars[pos] == key[i]:
                self._push(pos)
                i += 1
                continue
            if op == "==":
                return False
            return self._seek_gap(pos, gt)
        # The whole key was consumed on a node boundary: the current node stands for it.
        if self._node.iskey and op in ("==", ">=", "<="):
            return True
        if op == "==":
            return False
        return self._step_next() if gt else self._step_prev()

    def _seek_gap(self, pos: int, gt: bool) -> bool:
        """The key leaves normal node h between edges pos-1 and pos: h's key and the subtrees
        before pos are smaller, the subtrees from pos on are greater."""
        h = self._node
        if gt:
            if pos < len(h.chars):
                self._push(pos)
                return self._node.iskey or self._descend_first()
            return self._step_up_next()
        if pos > 0:
            self._push(pos - 1)
            return self._descend_last()
        return h.iskey or self._step_prev()

    # Moves. Each returns False when it runs off the tree (EOF; the position is then garbage).

    def _push(self, pos: int) -> None:
        h = self._node
        self._parents.append(h)
        self._offsets.append(pos)
        self._key += h.chars if h.iscompr else h.chars[pos : pos + 1]
        self._node = h.children[pos]

    def _pop(self) -> int:
        h = self._parents.pop()
        del self._key[len(self._key) - (len(h.chars) if h.iscompr else 1) :]
        self._node = h
        return self._offsets.pop()

    def _descend_first(self) -> bool:
        """From a node with children, go to the smallest key below it."""
        self._push(0)
        while not self._node.iskey:
            self._push(0)
        return True

    def _descend_last(self) -> bool:
        """Go to the greatest key at or below the current node (a rightmost leaf)."""
        while self._node.children:
            self._push(len(self._node.children) - 1)
        assert self._node.iskey
        return True

    def _step_next(self) -> bool:
        """Go to the smallest key greater than the current node's path."""
        if self._node.children:
            return self._descend_first()
        return self._step_up_next()

    def _step_up_next(self) -> bool:
        """Go to the smallest key after the whole subtree of the current node."""
        while self._parents:
            pos = self._pop() + 1
            h = self._node
            if not h.iscompr and pos < len(h.chars):
                self._push(pos)
                return self._node.iskey or self._descend_first()
        return False

    def _step_prev(self) -> bool:
        """Go to the greatest key smaller than the current node's path."""
        while self._parents:
            pos = self._pop()
            h = self._node
            if not h.iscompr and pos > 0:
                self._push(pos - 1)
                return self._descend_last()
            if h.iskey:
                return True
        return False
