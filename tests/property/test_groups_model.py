"""Consumer groups against a naive model: a hypothesis state machine.

The model is a dict of streams, each a dict of live entries plus, per group, its last ID, its
read counter, a PEL `id -> [owner, delivery time, delivery count]` and its consumers' seen /
active times. Rules: XADD, XDEL, XGROUP CREATE/SETID/CREATECONSUMER/DELCONSUMER/DESTROY,
XREADGROUP `>` and history (COUNT, NOACK), XACK, XCLAIM (IDLE/TIME/RETRYCOUNT/FORCE/JUSTID/
LASTID), XPENDING (summary, extended, IDLE, consumer), XINFO GROUPS and CONSUMERS. Every reply,
or error line, must equal the model's.

entries-read and lag are compared only on streams no XDEL has touched: there the model can
follow Redis's counter rules without tombstones (a stream's entries are then exactly the ones
added, so a group's read position is known whenever Redis knows it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    rule,
    run_state_machine_as_test,
)

from xstream.engine import NULL_ARRAY, OK, Engine, EngineConfig, StreamError
from xstream.engine.reply import Reply, flatten

Id = tuple[int, int]
ZERO: Id = (0, 0)
KEYS = [b"s", b"t"]
GROUPS = [b"g", b"h"]
CONSUMERS = [b"a", b"b", b"c"]
NEEDS_KEY = (
    "ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want "
    "to use the MKSTREAM option to create an empty stream automatically."
)


class ModelError(Exception):
    def __init__(self, line: str) -> None:
        super().__init__(line)
        self.line = line


def enc(i: Id) -> bytes:
    return b"%d-%d" % i


def dec(text: bytes) -> Id:
    ms, _, seq = text.partition(b"-")
    return int(ms), int(seq) if seq else 0


@dataclass
class MGroup:
    last_id: Id
    entries_read: int  # -1 unknown
    pel: dict[Id, list[object]] = field(default_factory=dict)  # id -> [owner, time, count]
    consumers: dict[bytes, list[int]] = field(default_factory=dict)  # name -> [seen, active]

    def owned(self, consumer: bytes) -> list[Id]:
        return sorted(i for i, n in self.pel.items() if n[0] == consumer)


@dataclass
class MStream:
    entries: dict[Id, list[bytes]] = field(default_factory=dict)
    last_id: Id = ZERO
    entries_added: int = 0
    tombstoned: bool = False  # an XDEL happened: counters no longer compared
    groups: dict[bytes, MGroup] = field(default_factory=dict)

    def first(self) -> Id:
        return min(self.entries) if self.entries else ZERO

    # Redis's counter rules for a stream without tombstones (max-deleted-entry-id 0-0)
    def estimate(self, i: Id) -> int:
        if not self.entries_added:
            return 0
        if not self.entries and i <= self.last_id:
            return self.entries_added
        if i == self.last_id:
            return self.entries_added
        if i > self.last_id:
            return -1
        if i < self.first():
            return self.entries_added - len(self.entries)
        if i == self.first():
            return self.entries_added - len(self.entries) + 1
        return -1

    def lag(self, g: MGroup) -> int | None:
        if not self.entries_added or not self.entries:
            return 0
        if g.last_id < self.first():
            return len(self.entries)
        if g.entries_read != -1:
            return self.entries_added - g.entries_read
        read = self.estimate(g.last_id)
        return None if read == -1 else self.entries_added - read

    def advance(self, g: MGroup, i: Id) -> None:
        if g.entries_read != -1 and g.last_id >= self.first():
            g.entries_read += 1
        elif self.entries_added:
            g.entries_read = self.estimate(i)
        g.last_id = i


class GroupModelMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.engine = Engine(EngineConfig(200, 4))
        self.streams: dict[bytes, MStream] = {}
        self.now = 1000
        self.next_ms = 1

    # -- plumbing ----------------------------------------------------------------------------

    def check(self, argv: list[bytes], expect: Callable[[], Reply]) -> None:
        """Engine and model agree: same flattened reply, or the same error line."""
        try:
            want = expect()
        except ModelError as e:
            try:
                got = self.engine.execute(argv, self.now).reply
            except StreamError as err:
                assert err.line == e.line, (argv, err.line, e.line)
                return
            raise AssertionError(f"{argv}: engine replied {got!r}, model {e.line!r}") from None
        try:
            got = self.engine.execute(argv, self.now).reply
        except StreamError as err:
            raise AssertionError(f"{argv}: engine said {err.line!r}, model {want!r}") from err
        assert flatten(got) == want, (argv, flatten(got), want)

    def an_id(self, data: st.DataObject, key: bytes) -> Id:
        s = self.streams.get(key)
        known: list[Id] = []
        if s is not None:
            known = list(s.entries) + [i for g in s.groups.values() for i in g.pel]
        if known and data.draw(st.integers(0, 3)):
            ms, seq = data.draw(st.sampled_from(sorted(known)))
            return data.draw(st.sampled_from([(ms, seq), (ms, seq + 1), (ms, 0)]))
        return data.draw(st.sampled_from([ZERO, (1, 0), (self.next_ms + 2, 1)]))

    def group_of(self, key: bytes, group: bytes, error: str) -> tuple[MStream, MGroup]:
        s = self.streams.get(key)
        g = s.groups.get(group) if s is not None else None
        if s is None or g is None:
            raise ModelError(error)
        return s, g

    def touch(self, g: MGroup, consumer: bytes) -> list[int]:
        c = g.consumers.setdefault(consumer, [self.now, -1])
        c[0] = self.now
        return c

    @initialize(read=st.integers(-1, 4))
    def streams_with_groups(self, read: int) -> None:
        """Both keys start with entries and group g, and s has group h with a given counter
        (maybe a wrong one), so that most commands reach group logic."""
        for key in KEYS:
            self.xadd(key, 3, 1)
            self.check([b"XGROUP", b"CREATE", key, b"g", b"0"], lambda k=key: self.group0(k, -1))
        argv = [b"XGROUP", b"CREATE", b"s", b"h", b"0", b"ENTRIESREAD", b"%d" % read]
        self.check(argv, lambda: self.group0(b"s", read, b"h"))

    def group0(self, key: bytes, read: int, name: bytes = b"g") -> Reply:
        s = self.streams[key]
        s.groups[name] = MGroup(ZERO, min(read, s.entries_added))
        return OK

    @rule(step=st.integers(0, 2500))
    def tick(self, step: int) -> None:
        self.now += step

    # -- stream ----------------------------------------------------------------------------------

    @rule(key=st.sampled_from(KEYS), n=st.integers(1, 3), gap=st.integers(1, 2))
    def xadd(self, key: bytes, n: int, gap: int) -> None:
        for _ in range(n):
            self.next_ms += gap
            i = (self.next_ms, 1)

            def run(i: Id = i) -> Reply:
                s = self.streams.setdefault(key, MStream())
                s.entries[i] = [b"f", enc(i)]
                s.last_id, s.entries_added = i, s.entries_added + 1
                return enc(i)

            self.check([b"XADD", key, enc(i), b"f", enc(i)], run)

    @rule(data=st.data(), key=st.sampled_from(KEYS))
    def xdel(self, data: st.DataObject, key: bytes) -> None:
        i = self.an_id(data, key)

        def run() -> Reply:
            s = self.streams.get(key)
            if s is None or i not in s.entries:
                return 0
            del s.entries[i]
            s.tombstoned = True
            return 1

        self.check([b"XDEL", key, enc(i)], run)

    @rule(key=st.sampled_from(KEYS), often=st.integers(0, 5))
    def delete(self, key: bytes, often: int) -> None:
        if often:
            return  # rarely: most steps should find the groups in place
        self.check([b"DEL", key], lambda: 1 if self.streams.pop(key, None) else 0)

    # -- XGROUP ----------------------------------------------------------------------------------

    @rule(
        data=st.data(),
        key=st.sampled_from(KEYS),
        group=st.sampled_from(GROUPS),
        mkstream=st.booleans(),
        read=st.one_of(st.none(), st.integers(-1, 8)),
    )
    def create(
        self, data: st.DataObject, key: bytes, group: bytes, mkstream: bool, read: int | None
    ) -> None:
        start = data.draw(st.sampled_from([b"$", b"0", enc(self.an_id(data, key))]))
        argv = [b"XGROUP", b"CREATE", key, group, start]
        argv += [b"MKSTREAM"] if mkstream else []
        argv += [b"ENTRIESREAD", b"%d" % read] if read is not None else []

        def run() -> Reply:
            s = self.streams.get(key)
            if s is None and not mkstream:
                raise ModelError(NEEDS_KEY)
            last = (s.last_id if s is not None else ZERO) if start == b"$" else dec(start)
            if s is not None and group in s.groups:
                raise ModelError("BUSYGROUP Consumer Group name already exists")
            s = self.streams.setdefault(key, MStream())
            n = -1 if read is None else min(read, s.entries_added)
            s.groups[group] = MGroup(last, n)
            return OK

        self.check(argv, run)

    @rule(
        data=st.data(),
        key=st.sampled_from(KEYS),
        group=st.sampled_from(GROUPS),
        read=st.one_of(st.none(), st.integers(-1, 8)),
    )
    def setid(self, data: st.DataObject, key: bytes, group: bytes, read: int | None) -> None:
        start = data.draw(st.sampled_from([b"$", b"0", enc(self.an_id(data, key))]))
        argv = [b"XGROUP", b"SETID", key, group, start]
        argv += [b"ENTRIESREAD", b"%d" % read] if read is not None else []

        def run() -> Reply:
            s = self.streams.get(key)
            if s is None:
                raise ModelError(NEEDS_KEY)
            g = s.groups.get(group)
            if g is None:
                raise ModelError(
                    f"NOGROUP No such consumer group '{group.decode()}' for key name "
                    f"'{key.decode()}'"
                )
            g.last_id = s.last_id if start == b"$" else dec(start)
            g.entries_read = -1 if read is None else min(read, s.entries_added)
            return OK

        self.check(argv, run)

    @rule(
        sub=st.sampled_from([b"CREATECONSUMER", b"DELCONSUMER", b"DESTROY"]),
        key=st.sampled_from(KEYS),
        group=st.sampled_from(GROUPS),
        consumer=st.sampled_from(CONSUMERS),
    )
    def consumers_and_destroy(self, sub: bytes, key: bytes, group: bytes, consumer: bytes) -> None:
        argv = [b"XGROUP", sub, key, group] + ([] if sub == b"DESTROY" else [consumer])

        def run() -> Reply:
            s = self.streams.get(key)
            if s is None:
                raise ModelError(NEEDS_KEY)
            g = s.groups.get(group)
            if sub == b"DESTROY":
                return 1 if s.groups.pop(group, None) is not None else 0
            if g is None:
                raise ModelError(
                    f"NOGROUP No such consumer group '{group.decode()}' for key name "
                    f"'{key.decode()}'"
                )
            if sub == b"CREATECONSUMER":
                if consumer in g.consumers:
                    return 0
                g.consumers[consumer] = [self.now, -1]
                return 1
            if consumer not in g.consumers:
                return 0
            del g.consumers[consumer]
            owned = g.owned(consumer)
            for i in owned:
                del g.pel[i]
            return len(owned)

        self.check(argv, run)

    # -- XREADGROUP / XACK -----------------------------------------------------------------------

    @rule(
        data=st.data(),
        key=st.sampled_from(KEYS),
        group=st.sampled_from(GROUPS),
        consumer=st.sampled_from(CONSUMERS),
        count=st.integers(0, 3),
        noack=st.booleans(),
    )
    def xreadgroup(
        self,
        data: st.DataObject,
        key: bytes,
        group: bytes,
        consumer: bytes,
        count: int,
        noack: bool,
    ) -> None:
        after = self.an_id(data, key) if data.draw(st.booleans()) else None
        self.read_group(key, group, consumer, count, noack, after)

    def read_group(
        self, key: bytes, group: bytes, consumer: bytes, count: int, noack: bool, after: Id | None
    ) -> None:
        argv = [b"XREADGROUP", b"GROUP", group, consumer, b"COUNT", b"%d" % count]
        argv += [b"NOACK"] if noack else []
        argv += [b"STREAMS", key, enc(after) if after is not None else b">"]

        def run() -> Reply:
            s, g = self.group_of(
                key,
                group,
                f"NOGROUP No such key '{key.decode()}' or consumer group '{group.decode()}' "
                "in XREADGROUP with GROUP option",
            )
            c = self.touch(g, consumer)
            out: list[Reply] = []
            if after is not None:
                for i in [i for i in g.owned(consumer) if i > after]:
                    if count and len(out) >= count:
                        break
                    if i not in s.entries:
                        out.append([enc(i), NULL_ARRAY])
                        continue
                    nack = g.pel[i]
                    nack[1] = self.now
                    nack[2] += 1  # type: ignore[operator]
                    out.append([enc(i), s.entries[i]])  # type: ignore[list-item]
                return [[key, out]]
            for i in sorted(j for j in s.entries if j > g.last_id):
                if count and len(out) >= count:
                    break
                s.advance(g, i)
                if not noack:
                    g.pel[i] = [consumer, self.now, 1]
                    c[1] = self.now
                out.append([enc(i), s.entries[i]])  # type: ignore[list-item]
            return [[key, out]] if out else NULL_ARRAY

        self.check(argv, run)

    @rule(
        data=st.data(),
        key=st.sampled_from(KEYS),
        group=st.sampled_from(GROUPS),
        consumer=st.sampled_from(CONSUMERS),
        count=st.integers(0, 2),
    )
    def xreadgroup_new(
        self, data: st.DataObject, key: bytes, group: bytes, consumer: bytes, count: int
    ) -> None:
        """`>` reads once more: they drive the read counters."""
        self.read_group(key, group, consumer, count, False, None)

    @rule(data=st.data(), key=st.sampled_from(KEYS), group=st.sampled_from(GROUPS))
    def xack(self, data: st.DataObject, key: bytes, group: bytes) -> None:
        ids = [self.an_id(data, key) for _ in range(data.draw(st.integers(1, 3)))]

        def run() -> Reply:
            s = self.streams.get(key)
            g = s.groups.get(group) if s is not None else None
            if g is None:
                return 0
            return sum(1 for i in ids if g.pel.pop(i, None) is not None)

        self.check([b"XACK", key, group, *map(enc, ids)], run)

    # -- XCLAIM ----------------------------------------------------------------------------------

    @rule(
        data=st.data(),
        key=st.sampled_from(KEYS),
        group=st.sampled_from(GROUPS),
        consumer=st.sampled_from(CONSUMERS),
        min_idle=st.sampled_from([0, 1000, 4000]),
        idle=st.one_of(st.none(), st.integers(-5, 6000)),
        time_back=st.one_of(st.none(), st.integers(-3000, 6000)),
        retry=st.one_of(st.none(), st.integers(-1, 6)),
        force=st.booleans(),
        justid=st.booleans(),
        lastid=st.booleans(),
    )
    def xclaim(
        self,
        data: st.DataObject,
        key: bytes,
        group: bytes,
        consumer: bytes,
        min_idle: int,
        idle: int | None,
        time_back: int | None,
        retry: int | None,
        force: bool,
        justid: bool,
        lastid: bool,
    ) -> None:
        ids = [self.an_id(data, key) for _ in range(data.draw(st.integers(1, 3)))]
        raise_to = self.an_id(data, key)
        argv = [b"XCLAIM", key, group, consumer, b"%d" % min_idle, *map(enc, ids)]
        delivery: int | None = None
        if idle is not None:
            argv += [b"IDLE", b"%d" % idle]
            delivery = self.now - idle
        if time_back is not None:  # TIME after IDLE: the last one wins
            argv += [b"TIME", b"%d" % (self.now - time_back)]
            delivery = self.now - time_back
        argv += [b"RETRYCOUNT", b"%d" % retry] if retry is not None else []
        argv += [b"FORCE"] if force else []
        argv += [b"JUSTID"] if justid else []
        argv += [b"LASTID", enc(raise_to)] if lastid else []

        def run() -> Reply:
            s, g = self.group_of(
                key,
                group,
                f"NOGROUP No such key '{key.decode()}' or consumer group '{group.decode()}'",
            )
            if lastid and raise_to > g.last_id:
                g.last_id = raise_to
            when = self.now if delivery is None or not 0 <= delivery <= self.now else delivery
            c = self.touch(g, consumer)
            out: list[Reply] = []
            for i in ids:
                nack = g.pel.get(i)
                if i not in s.entries:
                    g.pel.pop(i, None)
                    continue
                if force and nack is None:
                    nack = g.pel[i] = [None, self.now, 1]
                if nack is None:
                    continue
                if nack[0] is not None and min_idle and self.now - nack[1] < min_idle:  # type: ignore[operator]
                    continue
                nack[0], nack[1] = consumer, when
                if retry is not None and retry >= 0:
                    nack[2] = retry
                elif not justid:
                    nack[2] += 1  # type: ignore[operator]
                c[1] = self.now
                out.append(enc(i) if justid else [enc(i), s.entries[i]])  # type: ignore[list-item]
            return out

        self.check(argv, run)

    # -- reads -----------------------------------------------------------------------------------

    @rule(
        key=st.sampled_from(KEYS),
        group=st.sampled_from(GROUPS),
        consumer=st.one_of(st.none(), st.sampled_from(CONSUMERS)),
        count=st.integers(-1, 5),
        min_idle=st.sampled_from([0, 1500]),
    )
    def xpending(
        self, key: bytes, group: bytes, consumer: bytes | None, count: int, min_idle: int
    ) -> None:
        error = f"NOGROUP No such key '{key.decode()}' or consumer group '{group.decode()}'"

        def summary() -> Reply:
            _, g = self.group_of(key, group, error)
            if not g.pel:
                return [0, None, None, NULL_ARRAY]
            owners: list[Reply] = [
                [n, b"%d" % len(g.owned(n))] for n in sorted(g.consumers) if g.owned(n)
            ]
            return [len(g.pel), enc(min(g.pel)), enc(max(g.pel)), owners]

        def extended() -> Reply:
            _, g = self.group_of(key, group, error)
            if consumer is not None and consumer not in g.consumers:
                return []
            out: list[Reply] = []
            for i in sorted(g.pel):
                owner, time, n = g.pel[i]
                if consumer is not None and owner != consumer:
                    continue
                if len(out) >= max(count, 0):
                    break
                if min_idle and self.now - time < min_idle:  # type: ignore[operator]
                    continue
                out.append([enc(i), owner, max(self.now - time, 0), n])  # type: ignore[list-item, operator]
            return out

        self.check([b"XPENDING", key, group], summary)
        argv = [b"XPENDING", key, group, b"IDLE", b"%d" % min_idle, b"-", b"+", b"%d" % count]
        self.check(argv + ([consumer] if consumer is not None else []), extended)

    @rule(key=st.sampled_from(KEYS), group=st.sampled_from(GROUPS))
    def xinfo_consumers(self, key: bytes, group: bytes) -> None:
        def run() -> Reply:
            s = self.streams.get(key)
            if s is None:
                raise ModelError("ERR no such key")
            g = s.groups.get(group)
            if g is None:
                raise ModelError(
                    f"NOGROUP No such consumer group '{group.decode()}' for key name "
                    f"'{key.decode()}'"
                )
            return [
                [
                    b"name", n, b"pending", len(g.owned(n)), b"idle", max(self.now - seen, 0),
                    b"inactive", self.now - active if active != -1 else -1,
                ]
                for n, (seen, active) in sorted(g.consumers.items())
            ]  # fmt: skip

        self.check([b"XINFO", b"CONSUMERS", key, group], run)

    @invariant()
    def groups_match(self) -> None:
        self.engine.check_integrity()
        for key in KEYS:
            s = self.streams.get(key)
            if s is None:
                continue
            got = flatten(self.engine.execute([b"XINFO", b"GROUPS", key], self.now).reply)
            assert isinstance(got, list)
            assert len(got) == len(s.groups), key
            for row, name in zip(got, sorted(s.groups), strict=True):
                g = s.groups[name]
                info = dict(zip(row[::2], row[1::2], strict=True))  # type: ignore[index]
                assert info[b"name"] == name
                assert info[b"consumers"] == len(g.consumers), (key, name)
                assert info[b"pending"] == len(g.pel), (key, name)
                assert info[b"last-delivered-id"] == enc(g.last_id), (key, name)
                if not s.tombstoned:
                    read = g.entries_read if g.entries_read != -1 else None
                    assert (info[b"entries-read"], info[b"lag"]) == (read, s.lag(g)), (key, name)
                self.compare_pel(key, name, g)

    def compare_pel(self, key: bytes, name: bytes, g: MGroup) -> None:
        """The whole PEL (owners, delivery times, counts) and every consumer's times."""
        full = flatten(
            self.engine.execute([b"XINFO", b"STREAM", key, b"FULL", b"COUNT", b"0"]).reply
        )
        assert isinstance(full, list)
        groups = dict(zip(full[::2], full[1::2], strict=True))[b"groups"]  # type: ignore[index]
        assert isinstance(groups, list)
        for row in groups:
            info = dict(zip(row[::2], row[1::2], strict=True))  # type: ignore[index]
            if info[b"name"] != name:
                continue
            assert info[b"pending"] == [
                [enc(i), n[0] if n[0] is not None else b"", n[1], n[2]]
                for i, n in sorted(g.pel.items())
            ], (key, name)
            consumers = {
                c[1]: (c[3], c[5], c[7])  # type: ignore[index]
                for c in info[b"consumers"]  # type: ignore[union-attr]
            }
            assert consumers == {
                n: (seen, active, len(g.owned(n))) for n, (seen, active) in g.consumers.items()
            }, (key, name)


def test_groups_match_model() -> None:
    run_state_machine_as_test(
        GroupModelMachine,
        settings=settings(settings.default, max_examples=settings.default.max_examples * 4),
    )


def test_model_machine_catches_a_wrong_count() -> None:
    """The comparison can fail: a model that forgets to count a history read is caught."""
    machine = GroupModelMachine()
    machine.xadd(b"s", 1, 1)
    machine.check([b"XGROUP", b"CREATE", b"s", b"g", b"0"], lambda: OK)
    machine.engine.execute([b"XREADGROUP", b"GROUP", b"g", b"a", b"STREAMS", b"s", b">"], 0)
    machine.engine.execute([b"XREADGROUP", b"GROUP", b"g", b"a", b"STREAMS", b"s", b"0"], 0)
    with pytest.raises(AssertionError):
        machine.check(
            [b"XPENDING", b"s", b"g", b"-", b"+", b"1"],
            lambda: [[b"2-1", b"a", 1000, 1]],
        )
