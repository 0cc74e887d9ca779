"""The pair test: a primary's effects, applied to a replica with other node limits, give the
same logical state.

A hypothesis state machine runs random writes and reads on the primary (XADD with `*`,
`<ms>-*` and explicit IDs; exact and `~` trims with and without LIMIT, MAXLEN and MINID, under
KEEPREF, DELREF and ACKED; XDEL, XSETID, DEL, SET, FLUSHALL) and `apply`s every effect to the
replica. After every step both pass `check_integrity()` and every key's digest is equal on both
sides (random XRANGE/XREVRANGE reads are compared as a rule); at the end the whole-keyspace
digests and every stream's full XRANGE are equal. Every effect is
deterministic (concrete IDs, exact trims, no `*`, `~` or LIMIT), and a command that changed
nothing shipped nothing (XSETID and FLUSHALL excepted: like Redis they always propagate).
"""

from __future__ import annotations

import pytest
from command_gen import (
    KEYS,
    check_effect_shape,
    field_values,
    keys,
    parse_id,
    policies,
    ship,
    values,
    xadds,
    xdels,
    xranges,
    xsetids,
    xtrims,
)
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    rule,
    run_state_machine_as_test,
)
from naive_streams import MAX, MStream, Trim, XAdd, XTrim, enc, incr

from xstream.engine import Engine, EngineConfig, Result, StreamError

PAIRS = [
    (EngineConfig(4096, 100), EngineConfig(60, 3)),
    (EngineConfig(60, 3), EngineConfig(0, 1)),
    (EngineConfig(0, 1), EngineConfig(100, 0)),
    (EngineConfig(100, 0), EngineConfig(4096, 100)),
]
ALWAYS_SHIPPED = {b"XSETID", b"FLUSHALL"}  # propagated on success even when nothing changed


class PairMachine(RuleBasedStateMachine):
    def __init__(self, primary: EngineConfig, replica: EngineConfig) -> None:
        super().__init__()
        self.primary = Engine(primary)
        self.replica = Engine(replica)
        self.now = 1000

    def view(self, key: bytes) -> MStream | None:
        """The primary's stream at `key` as a model stream, to draw IDs near its entries."""
        try:
            info = self.primary.execute([b"XINFO", b"STREAM", key]).reply
        except StreamError:
            return None  # missing, or not a stream
        assert isinstance(info, list)
        meta = dict(info)
        entries = self.primary.execute([b"XRANGE", key, b"-", b"+"]).reply
        assert isinstance(entries, list)
        s = MStream([(parse_id(i), fv) for i, fv in entries])  # type: ignore[misc]
        s.last_id = parse_id(meta[b"last-generated-id"])  # type: ignore[arg-type]
        s.max_deleted = parse_id(meta[b"max-deleted-entry-id"])  # type: ignore[arg-type]
        s.entries_added = meta[b"entries-added"]  # type: ignore[assignment]
        return s

    def pick_key(self, data: st.DataObject) -> bytes:
        streams = [k for k in KEYS if self.primary.execute([b"TYPE", k]).reply == "stream"]
        if streams and data.draw(st.integers(0, 3)):
            return data.draw(st.sampled_from(streams))
        return data.draw(keys)

    def state(self, argv: list[bytes]) -> bytes | None:
        """What `argv` may change on the primary: its key's digest, or the whole keyspace's."""
        if argv[0].upper() in (b"DEL", b"FLUSHALL"):
            return self.primary.digest()
        return self.primary.key_digest(argv[1])

    def run(self, argv: list[bytes], *, appends: bool = False) -> Result | None:
        """Execute on the primary and ship its effects; None if the primary rejected it.

        `appends`: the caller knows a success always changes state (an XADD), so the costly
        before/after digests are skipped and one effect is required instead.
        """
        before = None if appends else self.state(argv)
        try:
            result = self.primary.execute(argv, self.now)
        except StreamError:
            assert appends or self.state(argv) == before, f"rejected {argv} changed state"
            return None
        for effect in result.effects:
            check_effect_shape(effect)
        ship(self.replica, argv, result.effects)
        if appends:
            assert len(result.effects) == (result.reply is not None), result.effects
            return result
        changed = self.state(argv) != before
        if argv[0].upper() in ALWAYS_SHIPPED:
            assert result.effects or not changed, f"{argv} changed state, shipped nothing"
        else:
            assert changed == bool(result.effects), (
                f"{argv}: changed={changed} but effects={result.effects}"
            )
        return result

    # -- rules -------------------------------------------------------------------------------

    @initialize(
        sizes=st.lists(st.integers(0, 130), min_size=len(KEYS), max_size=len(KEYS)),
        fv=field_values(),
    )
    def populate(self, sizes: list[int], fv: list[bytes]) -> None:
        """Start from streams that already span several nodes on both sides."""
        for key, n in zip(KEYS, sizes, strict=True):
            for i in range(n):
                self.now += i % 2
                self.run([b"XADD", key, b"*", *fv], appends=True)

    @rule(delta=st.one_of(st.integers(-20, 40), st.sampled_from([-5000, 100_000])))
    def tick(self, delta: int) -> None:
        self.now = max(0, self.now + delta)

    @rule(data=st.data())
    def xadd(self, data: st.DataObject) -> None:
        key = self.pick_key(data)
        c = data.draw(xadds(key, self.view(key)))
        result = self.run(c.argv())
        if result is not None and result.reply is not None:
            [effect] = result.effects
            assert effect[-len(c.fv) :] == c.fv and result.reply in effect, effect

    @rule(
        key=keys,
        n=st.integers(1, 120),
        fv=field_values(),
        strategy=st.sampled_from([b"MAXLEN", b"MINID"]),
        cap=st.integers(0, 100),
        limit=st.one_of(st.none(), st.integers(0, 30)),
        policy=policies(),
    )
    def capped_burst(
        self,
        key: bytes,
        n: int,
        fv: list[bytes],
        strategy: bytes,
        cap: int,
        limit: int | None,
        policy: bytes | None,
    ) -> None:
        """`XADD key [policy] MAXLEN|MINID ~ t [LIMIT l] * ...` n times: a capped stream.

        MINID keeps roughly the last `cap` ms (IDs advance one ms per entry).
        """
        for _ in range(n):
            self.now += 1
            minid = (max(self.now - cap, 0), 0)
            t = Trim(strategy, b"~", maxlen=cap if strategy == b"MAXLEN" else None)
            t.minid = minid if strategy == b"MINID" else None
            t.limit = limit
            c = XAdd(key, "auto", (0, 0), b"*", fv, policy=policy, trim=t)
            self.run(c.argv(), appends=True)

    @rule(data=st.data())
    def xtrim(self, data: st.DataObject) -> None:
        key = self.pick_key(data)
        c: XTrim = data.draw(xtrims(key, self.view(key)))
        result = self.run(c.argv())
        if result is not None:
            assert bool(result.effects) == (result.reply != 0), result.effects

    @rule(
        data=st.data(),
        strategy=st.sampled_from([b"MAXLEN", b"MINID"]),
        policy=st.sampled_from([[], [b"KEEPREF"], [b"DELREF"], [b"ACKED"]]),
        limit=st.integers(0, 20),
        via_xadd=st.booleans(),
    )
    def approx_trim(
        self,
        data: st.DataObject,
        strategy: bytes,
        policy: list[bytes],
        limit: int,
        via_xadd: bool,
    ) -> None:
        """`~` with a LIMIT small enough to stop inside the stream, at a drawn position."""
        key = self.pick_key(data)
        s = self.view(key)
        if s is None:
            return
        pos = data.draw(st.integers(0, s.length))
        if strategy == b"MAXLEN":
            threshold = b"%d" % (s.length - pos)
        else:
            edge = s.entries[pos][0] if pos < s.length else incr(s.last_id)
            threshold = enc(edge or MAX)
        trim = [strategy, b"~", threshold, b"LIMIT", b"%d" % limit]
        if via_xadd:
            self.run([b"XADD", key, *policy, *trim, b"*", b"f", b"v"])
        else:
            self.run([b"XTRIM", key, *trim, *policy])

    @rule(data=st.data())
    def xdel(self, data: st.DataObject) -> None:
        key = self.pick_key(data)
        self.run(data.draw(xdels(key, self.view(key))).argv())

    @rule(data=st.data())
    def xsetid(self, data: st.DataObject) -> None:
        key = self.pick_key(data)
        self.run(data.draw(xsetids(key, self.view(key))).argv())

    @rule(ks=st.lists(keys, min_size=1, max_size=3))
    def delete(self, ks: list[bytes]) -> None:
        self.run([b"DEL", *ks])

    @rule(key=keys, value=values)
    def set_string(self, key: bytes, value: bytes) -> None:
        if self.primary.execute([b"EXISTS", key]).reply == 0:  # keep streams the usual case
            self.run([b"SET", key, value])

    @rule(mode=st.sampled_from([[], [b"SYNC"], [b"async"]]))
    def flushall(self, mode: list[bytes]) -> None:
        self.run([b"FLUSHALL", *mode])

    @rule(data=st.data())
    def xrange(self, data: st.DataObject) -> None:
        key = self.pick_key(data)
        argv = data.draw(xranges(key, self.view(key))).argv()
        try:
            want = self.primary.execute(argv, self.now).reply
        except StreamError as e:
            with pytest.raises(StreamError) as info:
                self.replica.execute(argv, self.now)
            assert info.value.line == e.line
            return
        assert self.replica.execute(argv, self.now).reply == want, argv

    # -- after every step ----------------------------------------------------------------------

    @invariant()
    def same_state(self) -> None:
        self.primary.check_integrity()
        self.replica.check_integrity()
        for key in KEYS:
            assert self.primary.key_digest(key) == self.replica.key_digest(key), key

    def teardown(self) -> None:
        assert self.primary.digest() == self.replica.digest()
        for key in KEYS:
            if self.primary.execute([b"TYPE", key]).reply == "stream":
                everything = [b"XRANGE", key, b"-", b"+"]
                want = self.primary.execute(everything).reply
                assert self.replica.execute(everything).reply == want, key


@pytest.mark.parametrize(
    ("primary", "replica"),
    PAIRS,
    ids=[
        f"{p.node_max_bytes}x{p.node_max_entries}-to-{r.node_max_bytes}x{r.node_max_entries}"
        for p, r in PAIRS
    ],
)
def test_replica_reaches_primary_state(primary: EngineConfig, replica: EngineConfig) -> None:
    run_state_machine_as_test(lambda: PairMachine(primary, replica))


def test_pair_catches_divergence() -> None:
    """The harness itself: a replica that misses one effect is caught by the digests."""
    primary, replica = Engine(EngineConfig(60, 3)), Engine(EngineConfig(0, 1))
    for i in range(1, 6):
        for effect in primary.execute([b"XADD", b"k", b"%d-1" % i, b"f", b"v"]).effects:
            if i != 3:
                replica.apply(effect)
    assert primary.key_digest(b"k") != replica.key_digest(b"k")
    assert primary.digest() != replica.digest()
