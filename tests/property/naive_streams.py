"""A naive model of the engine's keyspace, for the property tier.

Streams are sorted Python lists of `(id, [field, value, ...])` with the four metadata fields
Redis keeps (`last_id`, `entries_added`, `max_deleted_entry_id`, and `first_id` derived from the
entries). Commands arrive as small spec objects (see command_gen.py) rather than argv, so the
model never parses: it only decides, in Redis's order of checks, which error or reply the
engine must give. A failing model call changes nothing, like the engine.

Approximate (`~`) trims are the one thing the model cannot predict: which whole nodes go
depends on node layout. For those the test applies the exact threshold the engine shipped in
its effect (`MAXLEN = n` / `MINID = id`) with `trim_exact`, then checks the invariants.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field

from xstream.engine import NULL_ARRAY, OK

U64 = (1 << 64) - 1
Id = tuple[int, int]
MIN: Id = (0, 0)
MAX: Id = (U64, U64)

Entry = tuple[Id, list[bytes]]
Reply = object  # what Engine.execute answers; compared with ==
UNKNOWN: Reply = object()  # a reply only the engine's effect can tell (`~` trims)


class ModelError(Exception):
    """The error the engine must raise: Redis's exact line."""

    def __init__(self, message: str, prefix: str = "ERR") -> None:
        super().__init__(f"{prefix} {message}")
        self.line = f"{prefix} {message}"


WRONGTYPE = ModelError("Operation against a key holding the wrong kind of value", "WRONGTYPE")


def incr(i: Id) -> Id | None:
    if i[1] < U64:
        return (i[0], i[1] + 1)
    if i[0] < U64:
        return (i[0] + 1, 0)
    return None


def decr(i: Id) -> Id | None:
    if i[1] > 0:
        return (i[0], i[1] - 1)
    if i[0] > 0:
        return (i[0] - 1, U64)
    return None


def enc(i: Id) -> bytes:
    return b"%d-%d" % i


def range_item(e: Entry) -> list[object]:
    return [enc(e[0]), list(e[1])]


@dataclass
class MStream:
    entries: list[Entry] = field(default_factory=list)  # live entries, sorted by id
    last_id: Id = MIN  # last ID generated
    entries_added: int = 0  # entries ever appended
    max_deleted: Id = MIN  # greatest ID removed by XDEL

    @property
    def first_id(self) -> Id:
        return self.entries[0][0] if self.entries else MIN

    @property
    def length(self) -> int:
        return len(self.entries)

    def ids(self) -> list[Id]:
        return [e[0] for e in self.entries]

    def copy(self) -> MStream:
        return MStream(list(self.entries), self.last_id, self.entries_added, self.max_deleted)

    def append(self, eid: Id, fv: list[bytes]) -> None:
        assert eid > self.last_id
        self.entries.append((eid, list(fv)))
        self.last_id = eid
        self.entries_added += 1

    def trim_exact(self, maxlen: int | None, minid: Id | None) -> list[Entry]:
        """Remove the oldest entries the rule asks for; returns them."""
        if maxlen is not None:
            n = max(0, len(self.entries) - maxlen)
        else:
            assert minid is not None
            n = bisect_left(self.ids(), minid)
        gone = self.entries[:n]
        del self.entries[:n]
        return gone

    def delete(self, eid: Id) -> bool:
        ids = self.ids()
        i = bisect_left(ids, eid)
        if i < len(ids) and ids[i] == eid:
            del self.entries[i]
            self.max_deleted = max(self.max_deleted, eid)
            return True
        return False

    def range(self, start: Id, end: Id, count: int, rev: bool) -> list[object]:
        """Live entries with start <= id <= end, XRANGE-shaped; count 0 = all."""
        ids = self.ids()
        sel = self.entries[bisect_left(ids, start) : bisect_right(ids, end)]
        if rev:
            sel.reverse()
        if count > 0:
            sel = sel[:count]
        return [range_item(e) for e in sel]


def next_auto_id(last: Id, now_ms: int) -> Id:
    if now_ms > last[0]:
        return (now_ms, 0)
    nxt = incr(last)
    assert nxt is not None  # the caller checked exhaustion
    return nxt


@dataclass
class Model:
    keys: dict[bytes, MStream | bytes] = field(default_factory=dict)

    def copy(self) -> Model:
        return Model({k: v.copy() if isinstance(v, MStream) else v for k, v in self.keys.items()})

    def stream(self, key: bytes) -> MStream | None:
        v = self.keys.get(key)
        if isinstance(v, bytes):
            raise WRONGTYPE
        return v

    def existing(self, key: bytes) -> MStream:
        s = self.stream(key)
        assert s is not None
        return s


# -- command specs -------------------------------------------------------------------------
# Each spec renders its argv and knows the reply (or error) in Redis's order of checks.
# Option words keep the casing the strategy drew, to exercise case-insensitive parsing.


@dataclass
class Trim:
    """`MAXLEN|MINID [=|~] threshold [LIMIT n]` as option groups of XADD or XTRIM."""

    strategy: bytes  # b"maxlen" / b"minid", any case
    op: bytes  # b"", b"=" or b"~"
    maxlen: int | None = None
    minid: Id | None = None
    limit: int | None = None  # None: no LIMIT word
    limit_word: bytes = b"LIMIT"

    @property
    def approx(self) -> bool:
        return self.op == b"~"

    def groups(self) -> list[list[bytes]]:
        threshold = b"%d" % self.maxlen if self.maxlen is not None else enc(self.minid or MIN)
        head = [self.strategy, *([self.op] if self.op else []), threshold]
        if self.limit is None:
            return [head]
        return [head, [self.limit_word, b"%d" % self.limit]]

    def check(self) -> None:
        """The parser's errors (negative MAXLEN during the scan, LIMIT rule after it)."""
        if self.maxlen is not None and self.maxlen < 0:
            raise ModelError("The MAXLEN argument must be >= 0.")
        if self.limit is not None and not self.approx:
            raise ModelError("syntax error, LIMIT cannot be used without the special ~ option")

    def effective_limit(self, node_max_entries: int) -> int:
        """The LIMIT the primary applies (0 = none), as streamParseAddOrTrimArgsOrReply."""
        if not self.approx:
            return 0
        if self.limit is not None:
            return self.limit
        n = 100 * node_max_entries
        return 10000 if n <= 0 else min(n, 1000000)


def arrange(groups: list[list[bytes]], order: list[int]) -> list[bytes]:
    """Option groups in the drawn order (Redis accepts them in any order)."""
    assert not order or sorted(order) == list(range(len(groups)))
    out: list[bytes] = []
    for i in order or range(len(groups)):
        out += groups[i]
    return out


@dataclass
class XAdd:
    key: bytes
    id_form: str  # "auto" (`*`), "explicit", "autoseq" (`<ms>-*`)
    id: Id  # explicit ID, or (ms, 0) for autoseq; unused for auto
    id_text: bytes
    fv: list[bytes]
    nomkstream: bytes | None = None  # the word, any case
    policy: bytes | None = None
    trim: Trim | None = None
    order: list[int] = field(default_factory=list)

    def argv(self) -> list[bytes]:
        groups = [[w] for w in (self.nomkstream, self.policy) if w is not None]
        if self.trim is not None:
            groups += self.trim.groups()
        return [b"XADD", self.key, *arrange(groups, self.order), self.id_text, *self.fv]


@dataclass
class XTrim:
    key: bytes
    trim: Trim
    policy: bytes | None = None
    order: list[int] = field(default_factory=list)

    def argv(self) -> list[bytes]:
        groups = self.trim.groups() + ([[self.policy]] if self.policy is not None else [])
        return [b"XTRIM", self.key, *arrange(groups, self.order)]


@dataclass
class XDel:
    key: bytes
    ids: list[Id]

    def argv(self) -> list[bytes]:
        return [b"XDEL", self.key, *map(enc, self.ids)]


@dataclass
class Bound:
    """A range bound: kind is "-", "+", "id", "ms" (`<ms>`), "(id" or "(ms"."""

    kind: str
    id: Id = MIN

    def text(self) -> bytes:
        if self.kind in ("-", "+"):
            return self.kind.encode()
        body = enc(self.id) if self.kind.endswith("id") else b"%d" % self.id[0]
        return b"(" + body if self.kind.startswith("(") else body

    def resolve(self, start: bool) -> Id:
        if self.kind == "-":
            return MIN
        if self.kind == "+":
            return MAX
        i = self.id if self.kind.endswith("id") else (self.id[0], 0 if start else U64)
        if not self.kind.startswith("("):
            return i
        moved = incr(i) if start else decr(i)
        if moved is None:
            raise ModelError(f"invalid {'start' if start else 'end'} ID for the interval")
        return moved


@dataclass
class XRange:
    key: bytes
    rev: bool
    start: Bound
    end: Bound
    count: int | None = None

    def argv(self) -> list[bytes]:
        name = b"XREVRANGE" if self.rev else b"XRANGE"
        lo, hi = self.start.text(), self.end.text()
        bounds = [hi, lo] if self.rev else [lo, hi]
        tail = [] if self.count is None else [b"COUNT", b"%d" % self.count]
        return [name, self.key, *bounds, *tail]


@dataclass
class XRead:
    keys: list[bytes]
    ids: list[bytes]  # `$`, `+` or a concrete ID text
    count: int | None = None
    block: int | None = None

    def argv(self) -> list[bytes]:
        opts: list[bytes] = []
        if self.count is not None:
            opts += [b"COUNT", b"%d" % self.count]
        if self.block is not None:
            opts += [b"BLOCK", b"%d" % self.block]
        return [b"XREAD", *opts, b"STREAMS", *self.keys, *self.ids]


@dataclass
class XSetId:
    key: bytes
    id: Id
    entries_added: int | None = None
    max_deleted: Id | None = None
    md_first: bool = False  # MAXDELETEDID before ENTRIESADDED

    def argv(self) -> list[bytes]:
        ea = [] if self.entries_added is None else [b"ENTRIESADDED", b"%d" % self.entries_added]
        md = [] if self.max_deleted is None else [b"MAXDELETEDID", enc(self.max_deleted)]
        opts = md + ea if self.md_first else ea + md
        return [b"XSETID", self.key, enc(self.id), *opts]


# -- the model's semantics -------------------------------------------------------------------

EXHAUSTED = "The stream has exhausted the last possible ID, unable to add more items"
SMALLER = "The ID specified in XADD is equal or smaller than the target stream top item"


def choose_id(c: XAdd, last: Id, now_ms: int) -> Id:
    if last == MAX:
        raise ModelError(EXHAUSTED)
    if c.id_form == "auto":
        return next_auto_id(last, now_ms)
    if c.id_form == "explicit":
        if c.id <= last:
            raise ModelError(SMALLER)
        return c.id
    ms = c.id[0]
    if ms == last[0]:
        if last[1] == U64:
            raise ModelError(SMALLER)
        return (ms, last[1] + 1)
    if ms < last[0]:
        raise ModelError(SMALLER)
    return (ms, 0)


def run_xadd(m: Model, c: XAdd, now_ms: int) -> Reply:
    """Append (and trim exactly unless `~`); the caller trims `~` from the effect."""
    if c.trim is not None:
        c.trim.check()
    if c.id_form == "explicit" and c.id == MIN:
        raise ModelError("The ID specified in XADD must be greater than 0-0")
    s = m.stream(c.key)
    if s is None and c.nomkstream is not None:
        return None
    eid = choose_id(c, s.last_id if s is not None else MIN, now_ms)
    if s is None:
        s = m.keys[c.key] = MStream()
    s.append(eid, c.fv)
    t = c.trim
    if t is not None and not t.approx:
        s.trim_exact(t.maxlen, t.minid)
    return enc(eid)


def run_xtrim(m: Model, c: XTrim) -> Reply:
    """The exact trim's count; for `~` only the checks (the caller trims from the effect)."""
    c.trim.check()
    s = m.stream(c.key)
    if s is None:
        return 0
    if c.trim.approx:
        return UNKNOWN
    return len(s.trim_exact(c.trim.maxlen, c.trim.minid))


def run_xdel(m: Model, c: XDel) -> Reply:
    s = m.stream(c.key)
    if s is None:
        return 0
    return sum(s.delete(i) for i in c.ids)


def run_xrange(m: Model, c: XRange) -> Reply:
    start = c.start.resolve(start=True)
    end = c.end.resolve(start=False)
    s = m.stream(c.key)
    if s is None:
        return []
    if c.count is not None and c.count <= 0:
        return NULL_ARRAY
    return s.range(start, end, c.count or 0, c.rev)


def run_xread(m: Model, c: XRead) -> Reply:
    after: list[Id | None] = []  # None: `+`
    for key, text in zip(c.keys, c.ids, strict=True):
        s = m.stream(key)
        if text == b"$":
            after.append(s.last_id if s is not None else MIN)
        elif text == b"+":
            after.append(None)
        else:
            ms, _, seq = text.partition(b"-")
            after.append((int(ms), int(seq or b"0")))
    out: list[object] = []
    count = c.count if c.count is not None and c.count > 0 else 0
    for key, gt in zip(c.keys, after, strict=True):
        s = m.stream(key)
        if s is None or not s.entries:
            continue
        if gt is None:
            found = [range_item(s.entries[-1])]
        else:
            nxt = incr(gt)
            found = [] if nxt is None else s.range(nxt, MAX, count, False)
        if found:
            out.append([key, found])
    return out if out else NULL_ARRAY


def run_xsetid(m: Model, c: XSetId) -> Reply:
    opts: list[str] = ["ea", "md"]
    if c.md_first:
        opts.reverse()
    for o in opts:
        if o == "ea" and c.entries_added is not None and c.entries_added < 0:
            raise ModelError("entries_added must be positive")
        if o == "md" and c.max_deleted is not None and c.id < c.max_deleted:
            raise ModelError(
                "The ID specified in XSETID is smaller than the provided max_deleted_entry_id"
            )
    s = m.stream(c.key)
    if s is None:
        raise ModelError("no such key")
    if c.id < s.max_deleted:
        raise ModelError("The ID specified in XSETID is smaller than current max_deleted_entry_id")
    if s.entries:
        if c.id < s.entries[-1][0]:
            raise ModelError(
                "The ID specified in XSETID is smaller than the target stream top item"
            )
        if c.entries_added is not None and s.length > c.entries_added:
            raise ModelError(
                "The entries_added specified in XSETID is smaller than the target stream length"
            )
    s.last_id = c.id
    if c.entries_added is not None:
        s.entries_added = c.entries_added
    if c.max_deleted is not None and c.max_deleted != MIN:
        s.max_deleted = c.max_deleted
    return OK


def run_xlen(m: Model, key: bytes) -> Reply:
    s = m.stream(key)
    return s.length if s is not None else 0


def run_del(m: Model, keys: list[bytes]) -> Reply:
    gone = [k for k in dict.fromkeys(keys) if m.keys.pop(k, None) is not None]
    return len(gone)


def run_xadd_many(m: Model, key: bytes, entries: list[list[bytes]], now_ms: int) -> Reply:
    """Engine.xadd_many: `XADD key * ...` per entry, all or nothing."""
    if not entries:
        return []
    s = m.stream(key)
    last = s.last_id if s is not None else MIN
    if last == MAX:
        raise ModelError(EXHAUSTED)
    first = next_auto_id(last, now_ms)
    idv = first[0] << 64 | first[1]
    if idv + len(entries) - 1 > (MAX[0] << 64 | MAX[1]):
        raise ModelError(EXHAUSTED)
    if s is None:
        s = m.keys[key] = MStream()
    ids = []
    for k, fv in enumerate(entries):
        eid = ((idv + k) >> 64, (idv + k) & U64)
        s.append(eid, fv)
        ids.append(enc(eid))
    return ids
