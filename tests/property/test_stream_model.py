"""The engine against a naive model (naive_streams.py), under several node limits.

A hypothesis state machine drives XADD (explicit IDs, `<ms>-*`, `*` with a clock that sometimes
goes backwards, IDs at the end of the sequence space), Engine.xadd_many, XTRIM and XADD trims
(exact and `~`), XDEL, XRANGE/XREVRANGE, XREAD, XLEN, XSETID, DEL, SET and argv that must be
rejected. After every command the reply, or the exact error line, must equal the model's; after
every step `check_integrity()` passes and every key's type, entries and metadata (via XRANGE
and XINFO STREAM) equal the model's, so a rejected command (the model is left as it was)
changed nothing; for garbage argv the whole-keyspace digest is compared as well. Any exception
other than StreamError fails the test.

`~` trims cannot be predicted (which whole nodes go depends on layout), so the model applies
the exact threshold the engine shipped in its effect, and the test checks what must hold
whatever the layout: the removed entries are a prefix, MAXLEN keeps at least the threshold,
MINID removes only IDs below it, and no more than LIMIT entries go.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from command_gen import (
    KEYS,
    check_effect_shape,
    field_values,
    garbage,
    keys,
    shipped_trim,
    values,
    xadds,
    xdels,
    xranges,
    xreads,
    xsetids,
    xtrims,
)
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)
from naive_streams import (
    MAX,
    MIN,
    U64,
    UNKNOWN,
    Model,
    ModelError,
    MStream,
    Reply,
    Trim,
    XAdd,
    enc,
    range_item,
    run_del,
    run_xadd,
    run_xadd_many,
    run_xdel,
    run_xlen,
    run_xrange,
    run_xread,
    run_xsetid,
    run_xtrim,
)

from xstream.engine import NULL_ARRAY, OK, Engine, EngineConfig, Result, StreamError

CONFIGS = [
    EngineConfig(node_max_bytes=4096, node_max_entries=100),
    EngineConfig(node_max_bytes=60, node_max_entries=3),
    EngineConfig(node_max_bytes=0, node_max_entries=1),
    EngineConfig(node_max_bytes=100, node_max_entries=0),
]


class StreamModelMachine(RuleBasedStateMachine):
    def __init__(self, config: EngineConfig) -> None:
        super().__init__()
        self.config = config
        self.engine = Engine(config)
        self.model = Model()
        self.now = 1000  # the clock handed to every command, in ms

    # -- running a command on both sides --------------------------------------------------

    def execute(self, argv: list[bytes] | Callable[[], Result]) -> Result:
        return argv() if callable(argv) else self.engine.execute(argv, self.now)

    def check(
        self, argv: list[bytes] | Callable[[], Result], expect: Callable[[], Reply]
    ) -> Result | None:
        """Run argv (or a call into the engine) and the model: same reply, or the same error
        line. Returns the engine's Result, or None when both rejected the command.
        """
        try:
            want = expect()
        except ModelError as e:
            # The model is unchanged, so the invariant that follows every step checks that the
            # engine did not change either.
            try:
                got = self.execute(argv)
            except StreamError as err:
                assert err.line == e.line, f"{argv}: engine said {err.line!r}, model {e.line!r}"
            else:
                raise AssertionError(f"{argv}: engine replied {got.reply!r}, model {e.line!r}")
            return None
        try:
            result = self.execute(argv)
        except StreamError as err:
            raise AssertionError(f"{argv}: engine said {err.line!r}, model {want!r}") from err
        if want is not UNKNOWN:
            assert result.reply == want, f"{argv}: engine {result.reply!r} != model {want!r}"
        for effect in result.effects:
            check_effect_shape(effect)
        return result

    def pick_key(self, data: st.DataObject) -> bytes:
        """Mostly a key holding a stream, so that commands reach their stream logic."""
        streams = [k for k in KEYS if self.stream_or_none(k) is not None]
        if streams and data.draw(st.integers(0, 3)):
            return data.draw(st.sampled_from(streams))
        return data.draw(keys)

    def stream_or_none(self, key: bytes) -> MStream | None:
        v = self.model.keys.get(key)
        return v if isinstance(v, MStream) else None

    def settle_approx(self, key: bytes, trim: Trim, result: Result) -> int:
        """Apply a `~` trim to the model from the engine's effect; returns entries removed."""
        s = self.model.existing(key)
        length = s.length
        shipped = shipped_trim(result.effects[0]) if result.effects else None
        gone = s.trim_exact(*shipped) if shipped is not None else []
        if shipped is not None:
            assert gone, f"shipped a trim that removes nothing: {result.effects}"
        if trim.maxlen is not None:
            assert s.length >= min(trim.maxlen, length), "MAXLEN ~ went below the threshold"
            if shipped is not None:
                assert shipped == (s.length, None), result.effects
        else:
            assert trim.minid is not None
            assert all(e[0] < trim.minid for e in gone), "MINID ~ removed IDs >= the threshold"
        limit = trim.effective_limit(self.config.node_max_entries)
        assert not limit or len(gone) <= limit, f"removed {len(gone)} > LIMIT {limit}"
        return len(gone)

    # -- rules -------------------------------------------------------------------------------

    @initialize(
        sizes=st.lists(st.integers(0, 130), min_size=len(KEYS), max_size=len(KEYS)),
        fv=field_values(),
    )
    def populate(self, sizes: list[int], fv: list[bytes]) -> None:
        """Start from streams that already span several nodes under every config."""
        for key, n in zip(KEYS, sizes, strict=True):
            for i in range(n):
                self.now += i % 2
                self.do_xadd(XAdd(key, "auto", MIN, b"*", fv))

    @rule(delta=st.one_of(st.integers(-20, 40), st.sampled_from([-5000, 1, 100_000])))
    def tick(self, delta: int) -> None:
        self.now = max(0, self.now + delta)

    def do_xadd(self, c: XAdd) -> bool:
        """Run one XADD on both sides; False if it was rejected."""
        result = self.check(c.argv(), lambda: run_xadd(self.model, c, self.now))
        if result is None:
            return False
        if result.reply is None:
            assert not result.effects, "XADD NOMKSTREAM on a missing key shipped effects"
            return True
        [effect] = result.effects
        assert effect[1] == c.key and effect[-len(c.fv) :] == c.fv, effect
        assert enc(self.model.existing(c.key).last_id) == result.reply
        if c.trim is not None and c.trim.approx:
            self.settle_approx(c.key, c.trim, result)
        return True

    @rule(data=st.data())
    def xadd(self, data: st.DataObject) -> None:
        key = self.pick_key(data)
        self.do_xadd(data.draw(xadds(key, self.stream_or_none(key))))

    @rule(
        key=keys,
        n=st.integers(1, 150),
        fv=field_values(),
        spread=st.booleans(),
        cap=st.one_of(st.none(), st.integers(0, 120)),
    )
    def xadd_burst(
        self, key: bytes, n: int, fv: list[bytes], spread: bool, cap: int | None
    ) -> None:
        """A burst of `XADD key [MAXLEN ~ cap] * ...`, to fill and split nodes."""
        for _ in range(n):
            trim = Trim(b"MAXLEN", b"~", maxlen=cap) if cap is not None else None
            if not self.do_xadd(XAdd(key, "auto", MIN, b"*", fv, trim=trim)):
                break  # the key holds a string: the rest would fail alike
            self.now += spread

    @rule(data=st.data(), bump=st.sampled_from([0, 0, 1, None]), fv=field_values())
    def seq_edge(self, data: st.DataObject, bump: int | None, fv: list[bytes]) -> None:
        """`<ms>-18446744073709551615`, then `<ms>-*` and `*`: the sequence can't carry."""
        key = self.pick_key(data)
        s = self.stream_or_none(key)
        last_ms = s.last_id[0] if s is not None else 0
        ms = U64 if bump is None else min(last_ms + bump, U64)
        self.do_xadd(XAdd(key, "explicit", (ms, U64), b"%d-%d" % (ms, U64), fv))
        self.do_xadd(XAdd(key, "autoseq", (ms, 0), b"%d-*" % ms, fv))
        self.do_xadd(XAdd(key, "auto", MIN, b"*", fv))

    @rule(
        data=st.data(),
        n=st.integers(0, 60),
        fvs=st.lists(field_values(), min_size=1, max_size=3),
    )
    def xadd_batch(self, data: st.DataObject, n: int, fvs: list[list[bytes]]) -> None:
        """Engine.xadd_many: the same IDs as n `XADD key *`, one XAPPEND, all or nothing."""
        key = self.pick_key(data)
        entries = [fvs[i % len(fvs)] for i in range(n)]

        def run() -> Result:
            return self.engine.xadd_many(key, entries, self.now)

        result = self.check(run, lambda: run_xadd_many(self.model, key, entries, self.now))
        if result is not None and entries:
            counts = b",".join(b"%d" % len(fv) for fv in entries)
            flat = [x for fv in entries for x in fv]
            assert isinstance(result.reply, list)
            assert result.effects == [[b"XAPPEND", key, result.reply[0], counts, *flat]]

    @rule(data=st.data())
    def xtrim(self, data: st.DataObject) -> None:
        key = self.pick_key(data)
        c = data.draw(xtrims(key, self.stream_or_none(key)))
        result = self.check(c.argv(), lambda: run_xtrim(self.model, c))
        if result is None:
            return
        if c.trim.approx and key in self.model.keys:
            assert result.reply == self.settle_approx(key, c.trim, result)
        assert bool(result.effects) == (result.reply != 0), result.effects

    @rule(data=st.data())
    def xdel(self, data: st.DataObject) -> None:
        key = self.pick_key(data)
        c = data.draw(xdels(key, self.stream_or_none(key)))
        result = self.check(c.argv(), lambda: run_xdel(self.model, c))
        if result is not None:
            assert bool(result.effects) == (result.reply != 0), result.effects

    @rule(data=st.data())
    def xrange(self, data: st.DataObject) -> None:
        key = self.pick_key(data)
        c = data.draw(xranges(key, self.stream_or_none(key)))
        result = self.check(c.argv(), lambda: run_xrange(self.model, c))
        assert result is None or not result.effects

    @rule(data=st.data())
    def xread(self, data: st.DataObject) -> None:
        c = data.draw(xreads({k: self.stream_or_none(k) for k in KEYS}))
        result = self.check(c.argv(), lambda: run_xread(self.model, c))
        if result is None:
            return
        assert not result.effects
        if c.block is None or result.reply is not NULL_ARRAY:
            assert result.block is None
            return
        assert result.block is not None and result.block.keys == c.keys
        assert result.block.deadline_ms == (self.now + c.block if c.block else 0)

    @rule(key=keys)
    def xlen(self, key: bytes) -> None:
        self.check([b"XLEN", key], lambda: run_xlen(self.model, key))

    @rule(data=st.data())
    def xsetid(self, data: st.DataObject) -> None:
        key = self.pick_key(data)
        c = data.draw(xsetids(key, self.stream_or_none(key)))
        result = self.check(c.argv(), lambda: run_xsetid(self.model, c))
        if result is not None:
            assert result.effects == [c.argv()]

    @rule(ks=st.lists(keys, min_size=1, max_size=3))
    def delete(self, ks: list[bytes]) -> None:
        result = self.check([b"DEL", *ks], lambda: run_del(self.model, ks))
        assert result is not None
        assert bool(result.effects) == (result.reply != 0)

    @precondition(lambda self: not any(isinstance(v, bytes) for v in self.model.keys.values()))
    @rule(key=keys, value=values)
    def set_string(self, key: bytes, value: bytes) -> None:
        def run() -> Reply:
            self.model.keys[key] = value
            return OK

        self.check([b"SET", key, value], run)

    @rule(data=st.data())
    def rejected(self, data: st.DataObject) -> None:
        streams = [k for k in KEYS if self.stream_or_none(k) is not None]
        missing = [k for k in KEYS if k not in self.model.keys]
        argv = data.draw(garbage(streams, missing))
        digest = self.engine.digest()
        try:
            got = self.execute(argv)
        except StreamError:
            pass
        else:
            raise AssertionError(f"{argv} must be rejected, got {got.reply!r}")
        assert self.engine.digest() == digest, f"rejected {argv} changed state"

    # -- after every step ----------------------------------------------------------------------

    @invariant()
    def engine_matches_model(self) -> None:
        self.engine.check_integrity()
        for key in KEYS:
            v = self.model.keys.get(key)
            kind = self.execute([b"TYPE", key]).reply
            if v is None:
                assert kind == "none", (key, kind)
            elif isinstance(v, bytes):
                assert kind == "string", (key, kind)
                assert self.execute([b"GET", key]).reply == v
            else:
                assert kind == "stream", (key, kind)
                self.compare_stream(key, v)

    def compare_stream(self, key: bytes, s: MStream) -> None:
        entries = self.execute([b"XRANGE", key, b"-", b"+"]).reply
        assert entries == s.range(MIN, MAX, 0, False), f"{key!r}: entries differ"
        for rev, name in ((False, b"XRANGE"), (True, b"XREVRANGE")):
            # COUNT stops inside or across nodes, depending on the config
            bounds = [b"+", b"-"] if rev else [b"-", b"+"]
            got = self.execute([name, key, *bounds, b"COUNT", b"4"]).reply
            assert got == s.range(MIN, MAX, 4, rev), f"{key!r}: {name!r} COUNT 4 differs"
        info = self.execute([b"XINFO", b"STREAM", key]).reply
        assert isinstance(info, list)
        got = dict(info)
        want = {
            b"length": s.length,
            b"last-generated-id": enc(s.last_id),
            b"max-deleted-entry-id": enc(s.max_deleted),
            b"entries-added": s.entries_added,
            b"recorded-first-entry-id": enc(s.first_id),
            b"groups": 0,
            b"first-entry": range_item(s.entries[0]) if s.entries else None,
            b"last-entry": range_item(s.entries[-1]) if s.entries else None,
        }
        assert {k: got[k] for k in want} == want, f"{key!r}: XINFO STREAM differs"


@pytest.mark.parametrize(
    "config", CONFIGS, ids=[f"bytes{c.node_max_bytes}-entries{c.node_max_entries}" for c in CONFIGS]
)
def test_engine_matches_model(config: EngineConfig) -> None:
    run_state_machine_as_test(lambda: StreamModelMachine(config))
