"""The pair test for consumer groups: random interleavings of every group command with stream
writes, on a primary whose effects are applied to a replica with other node limits.

Commands: XGROUP CREATE/SETID/DESTROY/CREATECONSUMER/DELCONSUMER, XREADGROUP (`>`, history,
NOACK, COUNT, CLAIM, several keys), XACK, XACKDEL, XNACK, XCLAIM with every option, XAUTOCLAIM,
XPENDING, XINFO; and XADD (with trims), XDEL, XDELEX, XTRIM exact and `~` under KEEPREF /
DELREF / ACKED, XSETID, DEL. The clock moves (now and then backwards). IDs are drawn among the
stream's entries, its PEL entries and their neighbours, so claims, acks and deletions hit.

After every step: both engines pass `check_integrity()` and have equal digests (which cover
PELs with owners, delivery times and counts, and consumers with seen / active times); the
replica never gets a clock. Reads ship nothing; a failed command changes nothing.
"""

from __future__ import annotations

import pytest
from command_gen import parse_id, ship
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    rule,
    run_state_machine_as_test,
)

from xstream.engine import Engine, EngineConfig, StreamError

PAIRS = [
    (EngineConfig(4096, 100), EngineConfig(120, 3)),
    (EngineConfig(200, 4), EngineConfig(4096, 100)),
    (EngineConfig(0, 1), EngineConfig(60, 5)),
]
KEYS = [b"s", b"t"]
GROUPS = [b"g", b"h"]
CONSUMERS = [b"a", b"b", b"c"]
READS = {b"XPENDING", b"XINFO", b"XRANGE", b"XLEN"}

Argv = list[bytes]


def num(n: int) -> bytes:
    return b"%d" % n


class GroupPairMachine(RuleBasedStateMachine):
    def __init__(self, primary: EngineConfig, replica: EngineConfig) -> None:
        super().__init__()
        self.primary = Engine(primary)
        self.replica = Engine(replica)
        self.now = 10_000
        self.next_ms = 1  # explicit XADD IDs grow from here

    # -- what the primary holds, to aim IDs ----------------------------------------------------

    def entry_ids(self, key: bytes) -> list[bytes]:
        try:
            entries = self.primary.execute([b"XRANGE", key, b"-", b"+"]).reply
        except StreamError:
            return []
        assert isinstance(entries, list)
        return [e[0] for e in entries]  # type: ignore[index]

    def pending_ids(self, key: bytes) -> list[bytes]:
        out: list[bytes] = []
        for g in GROUPS:
            try:
                rows = self.primary.execute([b"XPENDING", key, g, b"-", b"+", b"100"]).reply
            except StreamError:
                continue
            assert isinstance(rows, list)
            out += [r[0] for r in rows]  # type: ignore[index]
        return out

    def an_id(self, data: st.DataObject, key: bytes) -> bytes:
        known = self.entry_ids(key) + self.pending_ids(key)
        near = [b"0", b"0-0", b"1", num(self.next_ms), b"%d-1" % (self.next_ms + 3)]
        if known and data.draw(st.integers(0, 3)):
            chosen = data.draw(st.sampled_from(known))
            ms, seq = parse_id(chosen)
            return data.draw(st.sampled_from([chosen, b"%d-%d" % (ms, seq + 1), num(ms)]))
        return data.draw(st.sampled_from(near))

    def ids(self, data: st.DataObject, key: bytes, most: int = 3) -> list[bytes]:
        return [self.an_id(data, key) for _ in range(data.draw(st.integers(1, most)))]

    # -- running ----------------------------------------------------------------------------

    def run(self, argv: Argv) -> None:
        before = self.primary.digest()
        try:
            result = self.primary.execute(argv, self.now)
        except StreamError:
            assert self.primary.digest() == before, f"failed {argv} changed state"
            return
        if argv[0].upper() in READS:
            assert result.effects == [], argv
        ship(self.replica, argv, result.effects)

    @initialize()
    def streams_with_groups(self) -> None:
        """Both keys start with entries and a group, so that most commands reach group logic."""
        for key in KEYS:
            for _ in range(5):
                self.next_ms += 1
                self.run([b"XADD", key, b"%d-1" % self.next_ms, b"f", b"v"])
            self.run([b"XGROUP", b"CREATE", key, b"g", b"0"])
        self.run([b"XGROUP", b"CREATE", b"s", b"h", b"$"])

    @rule(step=st.integers(-200, 3000))
    def tick(self, step: int) -> None:
        self.now = max(self.now + step, 0)

    # -- stream writes ---------------------------------------------------------------------------

    @rule(data=st.data(), key=st.sampled_from(KEYS), n=st.integers(1, 4))
    def xadd(self, data: st.DataObject, key: bytes, n: int) -> None:
        for _ in range(n):
            argv = [b"XADD", key]
            if not data.draw(st.integers(0, 5)):
                argv += self.trim_args(data, key)
            if data.draw(st.booleans()):
                argv.append(b"*")
            else:
                self.next_ms += data.draw(st.integers(0, 2))
                argv.append(b"%d-%d" % (self.next_ms, data.draw(st.integers(1, 3))))
            self.run([*argv, b"f", data.draw(st.sampled_from([b"v", b"x" * 40]))])

    def trim_args(self, data: st.DataObject, key: bytes) -> Argv:
        argv: Argv = []
        if data.draw(st.booleans()):
            argv += [b"MAXLEN", data.draw(st.sampled_from([b"~", b"=", b""]))]
            argv.append(num(data.draw(st.integers(0, 12))))
        else:
            argv += [b"MINID", data.draw(st.sampled_from([b"~", b"=", b""]))]
            argv.append(self.an_id(data, key))
        argv = [w for w in argv if w]
        if argv[1] == b"~" and data.draw(st.booleans()):
            argv += [b"LIMIT", num(data.draw(st.integers(0, 8)))]
        policy = data.draw(st.sampled_from([b"", b"KEEPREF", b"DELREF", b"ACKED"]))
        return argv + ([policy] if policy else [])

    @rule(data=st.data(), key=st.sampled_from(KEYS))
    def xtrim(self, data: st.DataObject, key: bytes) -> None:
        self.run([b"XTRIM", key, *self.trim_args(data, key)])

    @rule(data=st.data(), key=st.sampled_from(KEYS))
    def xdel(self, data: st.DataObject, key: bytes) -> None:
        self.run([b"XDEL", key, *self.ids(data, key)])

    @rule(data=st.data(), key=st.sampled_from(KEYS))
    def xdelex(self, data: st.DataObject, key: bytes) -> None:
        ids = self.ids(data, key)
        policy = data.draw(st.sampled_from([b"KEEPREF", b"DELREF", b"ACKED"]))
        self.run([b"XDELEX", key, policy, b"IDS", num(len(ids)), *ids])

    @rule(data=st.data(), key=st.sampled_from(KEYS))
    def xsetid(self, data: st.DataObject, key: bytes) -> None:
        argv = [b"XSETID", key, self.an_id(data, key)]
        if data.draw(st.booleans()):
            argv += [b"ENTRIESADDED", num(data.draw(st.integers(0, 60)))]
        self.run(argv)

    @rule(key=st.sampled_from(KEYS), often=st.integers(0, 5))
    def delete(self, key: bytes, often: int) -> None:
        if not often:  # rarely: most steps should find the groups in place
            self.run([b"DEL", key])

    # -- groups ----------------------------------------------------------------------------------

    @rule(data=st.data(), key=st.sampled_from(KEYS), group=st.sampled_from(GROUPS))
    def xgroup_create(self, data: st.DataObject, key: bytes, group: bytes) -> None:
        start = data.draw(st.sampled_from([b"$", b"0", self.an_id(data, key)]))
        argv = [b"XGROUP", b"CREATE", key, group, start]
        if data.draw(st.booleans()):
            argv.append(b"MKSTREAM")
        if data.draw(st.booleans()):
            argv += [b"ENTRIESREAD", num(data.draw(st.integers(-1, 30)))]
        self.run(argv)

    @rule(data=st.data(), key=st.sampled_from(KEYS), group=st.sampled_from(GROUPS))
    def xgroup_setid(self, data: st.DataObject, key: bytes, group: bytes) -> None:
        start = data.draw(st.sampled_from([b"$", b"-", b"+", self.an_id(data, key)]))
        argv = [b"XGROUP", b"SETID", key, group, start]
        if data.draw(st.booleans()):
            argv += [b"ENTRIESREAD", num(data.draw(st.integers(-1, 30)))]
        self.run(argv)

    @rule(
        sub=st.sampled_from([b"DESTROY", b"CREATECONSUMER", b"DELCONSUMER"]),
        key=st.sampled_from(KEYS),
        group=st.sampled_from(GROUPS),
        consumer=st.sampled_from(CONSUMERS),
    )
    def xgroup_other(self, sub: bytes, key: bytes, group: bytes, consumer: bytes) -> None:
        if sub == b"DESTROY" and consumer != b"a":
            return  # destroy less often than the rest
        argv = [b"XGROUP", sub, key, group]
        self.run(argv if sub == b"DESTROY" else [*argv, consumer])

    @rule(data=st.data(), group=st.sampled_from(GROUPS), consumer=st.sampled_from(CONSUMERS))
    def xreadgroup(self, data: st.DataObject, group: bytes, consumer: bytes) -> None:
        argv = [b"XREADGROUP", b"GROUP", group, consumer]
        if data.draw(st.booleans()):
            argv += [b"COUNT", num(data.draw(st.integers(-1, 4)))]
        if not data.draw(st.integers(0, 3)):
            argv.append(b"NOACK")
        if not data.draw(st.integers(0, 4)):
            argv += [b"CLAIM", num(data.draw(st.integers(0, 3000)))]
        if not data.draw(st.integers(0, 5)):
            argv += [b"BLOCK", num(data.draw(st.integers(0, 100)))]
        keys = data.draw(st.lists(st.sampled_from(KEYS), min_size=1, max_size=2, unique=True))
        starts = [data.draw(st.sampled_from([b">", b">", b"0", self.an_id(data, k)])) for k in keys]
        self.run([*argv, b"STREAMS", *keys, *starts])

    @rule(data=st.data(), key=st.sampled_from(KEYS), group=st.sampled_from(GROUPS))
    def xack(self, data: st.DataObject, key: bytes, group: bytes) -> None:
        self.run([b"XACK", key, group, *self.ids(data, key)])

    @rule(data=st.data(), key=st.sampled_from(KEYS), group=st.sampled_from(GROUPS))
    def xackdel(self, data: st.DataObject, key: bytes, group: bytes) -> None:
        ids = self.ids(data, key)
        policy = data.draw(st.sampled_from([b"KEEPREF", b"DELREF", b"ACKED"]))
        self.run([b"XACKDEL", key, group, policy, b"IDS", num(len(ids)), *ids])

    @rule(data=st.data(), key=st.sampled_from(KEYS), group=st.sampled_from(GROUPS))
    def xnack(self, data: st.DataObject, key: bytes, group: bytes) -> None:
        ids = self.ids(data, key)
        mode = data.draw(st.sampled_from([b"SILENT", b"FAIL", b"FATAL"]))
        argv = [b"XNACK", key, group, mode, b"IDS", num(len(ids)), *ids]
        if data.draw(st.booleans()):
            argv += [b"RETRYCOUNT", num(data.draw(st.integers(0, 5)))]
        if data.draw(st.booleans()):
            argv.append(b"FORCE")
        self.run(argv)

    @rule(
        data=st.data(),
        key=st.sampled_from(KEYS),
        group=st.sampled_from(GROUPS),
        consumer=st.sampled_from(CONSUMERS),
    )
    def xclaim(self, data: st.DataObject, key: bytes, group: bytes, consumer: bytes) -> None:
        min_idle = num(data.draw(st.sampled_from([0, 0, 500, 5000, -3])))
        argv = [b"XCLAIM", key, group, consumer, min_idle, *self.ids(data, key)]
        options = data.draw(
            st.lists(
                st.sampled_from([b"IDLE", b"TIME", b"RETRYCOUNT", b"FORCE", b"JUSTID", b"LASTID"]),
                max_size=4,
                unique=True,
            )
        )
        for option in options:
            argv.append(option)
            if option == b"IDLE":
                argv.append(num(data.draw(st.integers(-10, 20_000))))
            elif option == b"TIME":
                argv.append(num(self.now + data.draw(st.integers(-20_000, 5000))))
            elif option == b"RETRYCOUNT":
                argv.append(num(data.draw(st.integers(-1, 9))))
            elif option == b"LASTID":
                argv.append(self.an_id(data, key))
        self.run(argv)

    @rule(
        data=st.data(),
        key=st.sampled_from(KEYS),
        group=st.sampled_from(GROUPS),
        consumer=st.sampled_from(CONSUMERS),
    )
    def xautoclaim(self, data: st.DataObject, key: bytes, group: bytes, consumer: bytes) -> None:
        min_idle = num(data.draw(st.sampled_from([0, 500, 5000])))
        start = data.draw(st.sampled_from([b"0", b"-", self.an_id(data, key)]))
        argv = [b"XAUTOCLAIM", key, group, consumer, min_idle, start]
        if data.draw(st.booleans()):
            argv += [b"COUNT", num(data.draw(st.integers(1, 4)))]
        if data.draw(st.booleans()):
            argv.append(b"JUSTID")
        self.run(argv)

    @rule(key=st.sampled_from(KEYS), group=st.sampled_from(GROUPS), idle=st.integers(0, 3000))
    def reads(self, key: bytes, group: bytes, idle: int) -> None:
        self.run([b"XPENDING", key, group])
        self.run([b"XPENDING", key, group, b"IDLE", num(idle), b"-", b"+", b"10"])
        self.run([b"XINFO", b"GROUPS", key])
        self.run([b"XINFO", b"CONSUMERS", key, group])
        self.run([b"XINFO", b"STREAM", key, b"FULL"])

    # -- after every step ------------------------------------------------------------------------

    @invariant()
    def replica_matches_primary(self) -> None:
        self.primary.check_integrity()
        self.replica.check_integrity()
        for key in KEYS:
            assert self.replica.key_digest(key) == self.primary.key_digest(key), key
        assert self.replica.digest() == self.primary.digest()


@pytest.mark.parametrize(("primary", "replica"), PAIRS)
def test_group_effects_replicate(primary: EngineConfig, replica: EngineConfig) -> None:
    run_state_machine_as_test(
        lambda: GroupPairMachine(primary, replica),
        settings=settings(settings.default, max_examples=settings.default.max_examples * 2),
    )


def test_pair_machine_sees_a_lost_effect() -> None:
    """The invariant can fail: drop one effect of a delivery and the digests differ."""
    machine = GroupPairMachine(*PAIRS[0])
    machine.run([b"XADD", b"s", b"1-1", b"f", b"v"])
    machine.run([b"XGROUP", b"CREATE", b"s", b"g", b"0"])
    result = machine.primary.execute(
        [b"XREADGROUP", b"GROUP", b"g", b"a", b"STREAMS", b"s", b">"], machine.now
    )
    for effect in result.effects[1:]:  # the XCLAIM creating the PEL entry is lost
        machine.replica.apply(effect)
    with pytest.raises(AssertionError):
        machine.replica_matches_primary()
