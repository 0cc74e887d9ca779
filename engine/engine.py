"""The engine: Redis's numbered databases of streams behind one argv entry point.

    Engine.execute(argv, now_ms, db)  -> Result(reply, effects, signaled, block, touched)
    Engine.apply(effect)              -> replays a shipped effect (no clock, LIMIT ignored)
    Engine.apply_record(effects)      -> replays one record's effects, from db 0 (a run of
                                         XADDs to one stream, or an XAPPEND, as one append:
                                         replay.py)
    Engine.apply_payload(payload)     -> apply_record of a record's payload that is one
                                         XAPPEND, read in place (packed.py); None for others
    Engine.adopt(other)               -> takes another engine's data set (a snapshot loaded there)
    Engine.xadd_many(key, entries, now_ms, db) -> many `XADD key *` at once (api.py)
    Engine.xadd_flat(key, elements, counts, now_ms, db) -> the same from a batch's wire form
    Engine.expire_cycle(now_ms, limit) -> active expiry: deletes keys past their time (DELs)

`execute` is all-or-nothing: a command either succeeds, or raises StreamError and changes
nothing. Effects are deterministic argvs: applying them, in order, to another engine (whatever
its node limits) reproduces this engine's logical state, which `digest()` compares.

Databases (`config.databases`, 16 by default, as Redis): `dbs[i]` is database i's keyspace. A
command runs in the database its caller (a connection) selected; SELECT itself is the
connection's business (`check_db` gives Redis's errors for an index). The effects of a command
run in db n != 0 start with `SELECT n`, an effect only `apply` knows (Redis's propagation emits
SELECT the same way), so one command's effects are self-contained: `apply_record` starts each
record in db 0 and a `SELECT` moves it, and a record written before databases existed (no
SELECT) applies to db 0. MOVE, SWAPDB, COPY ... DB and FLUSHALL ship as themselves: they
replay exactly from the db they ran in.

RANDOMKEY's randomness is the engine's own: a splitmix64 sequence (seeded by
`config.random_seed`) advanced once per draw, so an engine answers the same calls the same
way, and no clock or OS randomness enters it.

Key expiry is Redis's, decided here and shipped as DELs (keyspace.py has the modes): a write
whose lookups find keys past their time deletes them first, and its effects start with a
`DEL` of each (in its database); reads answer such keys as missing and change nothing (on a
primary and on a replica, which never expires keys itself); `apply` keeps them until the
primary's DEL arrives. If the write then fails, the keys it expired are put back: a command is
still all-or-nothing, and the keys stay logically expired for the next write or
`expire_cycle` (the primary's active expiry, run by the node every 100 ms) to delete.

`config` is the one in force: the base given here with what CONFIG SET changed over it
(`settings`, settings.py), which is replicated and persisted state as the keyspace is.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from typing import Final

from . import api, commands, digest, replay
from .context import Argv, BlockSpec, Ctx, Result, Signaled
from .errors import StreamError, not_integer
from .ids import string2ll
from .keyspace import Clock, Keyspace, Mode
from .reply import OK, EntryForm
from .settings import EngineConfig, Settings
from .stream import Stream

_MASK64: Final = (1 << 64) - 1


class Engine:
    def __init__(self, config: EngineConfig | None = None) -> None:
        self.settings = Settings(config or EngineConfig())
        self.dbs = [Keyspace() for _ in range(self.config.databases)]  # db index -> keyspace
        self.foreign_layout = False  # True once a snapshot brought nodes built elsewhere
        self.apply_db = 0  # the db `apply` replays into; SELECT effects move it
        self._draws = 0  # RANDOMKEY draws so far
        self.clock = Clock()  # the running command's time and expiry mode (keyspace.py)
        self.expired_keys = 0  # keys deleted past their time (INFO's expired_keys)
        self.expired_keys_active = 0  # ... of them by expire_cycle (expired_keys_active)
        # Ctx's `draw`, bound once: compiled, binding it per command cost a getattr and an
        # object (~400 instructions of an XADD's)
        self._draw_next = self._draw
        self._attach()

    @property
    def config(self) -> EngineConfig:
        """The config in force (the base with CONFIG SET's values over it)."""
        return self.settings.config

    @property
    def keyspace(self) -> Keyspace:
        """Database 0's keyspace (the only one of engines before databases)."""
        return self.dbs[0]

    def execute(
        self,
        argv: Argv,
        now_ms: int = 0,
        db: int = 0,
        *,
        replicated: bool = False,
        entries: EntryForm = "lists",
    ) -> Result:
        """Run one command in database `db` (a valid index: see check_db); stream entries
        in the form `entries` (reply.py's EntryForm)."""
        cmd = commands.lookup(argv)
        settings = self.settings
        ctx = Ctx(
            argv, now_ms, replicated, self.dbs, db, settings.config, settings, draw=self._draw_next
        )
        ctx.entries = entries
        mode = Mode.KEEP if replicated else Mode.EXPIRE if cmd.write else Mode.HIDE
        self._start(now_ms, mode)
        try:
            reply = cmd.handler(ctx)
        except BaseException:
            self._undo_expired()
            raise
        finally:
            self._stop()
        effects = self._with_expired(ctx, ctx.effects)
        if effects and db:
            effects.insert(0, select(db))
        if ctx.block is not None:
            ctx.block.db = db
        return Result(reply, effects, ctx.signaled, ctx.block, ctx.touched, ctx.dirty)

    def reset_stats(self) -> None:
        """CONFIG RESETSTAT: the counters INFO reads from the engine."""
        self.expired_keys = self.expired_keys_active = 0
        self.clock.hits = self.clock.misses = 0

    def check_db(self, index: bytes | int) -> int:
        """The database index `index` names, or Redis's SELECT errors."""
        n = string2ll(index) if isinstance(index, bytes) else index
        if n is None:
            raise not_integer()
        if not 0 <= n < len(self.dbs):
            raise StreamError("DB index is out of range")
        return n

    def xadd_many(
        self, key: bytes, entries: Sequence[Sequence[bytes]], now_ms: int, db: int = 0
    ) -> Result:
        """`XADD key * field value ...` once per entry, batched; see api.py."""
        return self._batched(
            lambda: api.xadd_many(self.dbs[db], self.config, key, entries, now_ms, db), now_ms, db
        )

    def xadd_flat(
        self, key: bytes, elements: list[bytes], counts: list[int], now_ms: int, db: int = 0
    ) -> Result:
        """xadd_many of a batch's wire form (entry i: the next counts[i] elements); reply
        [first ID, last ID]; see api.py."""
        return self._batched(
            lambda: api.xadd_flat(self.dbs[db], self.config, key, elements, counts, now_ms, db),
            now_ms,
            db,
        )

    def _batched(self, run: Callable[[], Result], now_ms: int, db: int) -> Result:
        """A batch run as one write at `now_ms` in database `db`: keys past their time are
        deleted first (their DELs lead the effects), undone if the batch fails."""
        self._start(now_ms, Mode.EXPIRE)
        try:
            result = run()
        except BaseException:
            self._undo_expired()
            raise
        finally:
            self._stop()
        result.effects = self._with_expired(result, result.effects, db)
        if result.effects and db:
            result.effects.insert(0, select(db))
        return result

    def expire_cycle(self, now_ms: int, limit: int = 200) -> Result:
        """Delete up to `limit` keys past their time at `now_ms`, in every database (Redis's
        activeExpireCycle, with deterministic work: the first due keys of each database in
        turn). Effects: `DEL` of each, a `SELECT n` before another database's."""
        self._start(now_ms, Mode.EXPIRE)
        try:
            for ks in self.dbs:
                for key in ks.due(now_ms, limit - len(self.clock.expired)):
                    ks.get(key)  # the lookup deletes it and notes it
                if len(self.clock.expired) >= limit:
                    break
        finally:
            self._stop()
        self.expired_keys_active += len(self.clock.expired)
        result = Result(None)
        result.effects = self._with_expired(result, [], 0)
        if result.effects and result.effects[-1] == select(0):
            result.effects.pop()
        return result

    # ------------------------------------------------------------ expiry plumbing

    def _attach(self) -> None:
        for ks in self.dbs:
            ks.clock = self.clock

    def _start(self, now_ms: int, mode: Mode) -> None:
        if self.dbs[0].clock is not self.clock:  # databases loaded elsewhere (adopt, restore)
            self._attach()
        clock = self.clock
        clock.now_ms, clock.mode = now_ms, mode

    def _stop(self) -> None:
        self.clock.now_ms, self.clock.mode = 0, Mode.KEEP

    def _undo_expired(self) -> None:
        """Put back what the failed command's lookups expired (it changes nothing)."""
        expired = self.clock.expired
        for ks, key, value, when in reversed(expired):
            ks.data[key] = value
            ks.set_expire(key, when)
        expired.clear()

    def _with_expired(
        self, out: Ctx | Result, effects: list[Argv], db: int | None = None
    ) -> list[Argv]:
        """`effects` after a DEL of each key the command expired (in that key's database,
        back in the command's after), signaling and touching them in `out`."""
        expired, self.clock.expired = self.clock.expired, []
        if not expired:
            return effects
        self.expired_keys += len(expired)
        db = out.db if isinstance(out, Ctx) else db
        assert db is not None
        by_db: dict[int, list[bytes]] = {}
        for ks, key, _, _ in expired:
            n = next(i for i, k in enumerate(self.dbs) if k is ks)
            by_db.setdefault(n, []).append(key)
            out.signaled.append((n, key))
            out.touched.append((n, key))
        pre: list[Argv] = []
        for n, keys in sorted(by_db.items()):
            if n != db:
                pre.append(select(n))
            pre += ([b"DEL", key] for key in keys)
            if n != db:
                pre.append(select(db))
        return pre + effects

    def apply(self, effect: Argv) -> Result:
        """Replay one effect shipped by another engine, in `apply_db`."""
        if effect and effect[0].upper() == b"SELECT":
            assert len(effect) == 2, effect
            self.apply_db = self.check_db(effect[1])
            return Result(OK)
        return self.execute(effect, 0, self.apply_db, replicated=True)

    def apply_record(self, effects: Sequence[Argv]) -> Result:
        """Replay one record's effects from db 0; the (db, key)s they signal and touch (the
        Result's reply is None, its effects empty). A run of explicit-ID XADDs to one stream
        is appended as one, and an XAPPEND without its command's dispatch (replay.py), with
        what the general path would give."""
        self.apply_db = 0
        signaled: Signaled = []
        touched: Signaled = []
        i, n = 0, len(effects)
        while i < n:
            self._start(0, Mode.KEEP)  # as `apply` replays: keys past their time are kept
            keyspace = self.dbs[self.apply_db]
            j = replay.apply_xadds(keyspace, self.config, effects, i)
            if j == i and replay.apply_xappend(keyspace, self.config, effects[i]):
                j = i + 1
            if j > i:
                each = [(self.apply_db, effects[i][1])] * (j - i)  # one per XADD or XAPPEND
                signaled += each
                touched += each
                i = j
                continue
            r = self.apply(effects[i])
            signaled += r.signaled
            touched += r.touched
            i += 1
        return Result(None, [], signaled, None, touched)

    def apply_payload(self, payload: bytes) -> Result | None:
        """apply_record of a record's payload (argvs.py's form) when it is one XAPPEND as
        the primary writes it, appended from the payload's bytes (replay.apply_packed);
        None, with nothing changed, for any other: the caller decodes it for apply_record."""
        self.apply_db = 0
        self._start(0, Mode.KEEP)  # as apply_record
        key = replay.apply_packed(self.dbs[0], self.config, payload)
        if key is None:
            return None
        return Result(None, [], [(0, key)], None, [(0, key)])

    def adopt(self, other: Engine) -> None:
        """Take `other`'s data set (a state rebuilt elsewhere: a snapshot, a log replay): its
        databases, its layout flag and its CONFIG SET values (over this engine's own base)."""
        assert len(other.dbs) == len(self.dbs)
        self.dbs[:] = other.dbs  # in place: a Ctx or sliced read holding `dbs` sees it
        self._attach()
        self.foreign_layout = other.foreign_layout
        self.settings.load(other.settings.values)

    def wakes(self, spec: BlockSpec, key: bytes) -> bool:
        """Whether a signal of `key` re-executes the read blocked on `spec` (see BlockSpec)."""
        value = self.dbs[spec.db].get(key)
        kind = (
            "stream" if isinstance(value, Stream) else "list" if isinstance(value, deque) else None
        )
        return spec.wakes_on(kind if value is not None or kind else None)

    def is_write(self, argv: Argv) -> bool:
        return commands.lookup(argv).write

    def key_count(self) -> int:
        """Keys in every database."""
        return sum(map(len, self.dbs))

    def key_digest(self, key: bytes, db: int = 0) -> bytes | None:
        """Digest of one key's logical state (None if missing); layout-independent."""
        v = self.dbs[db].get(key)
        return None if v is None else digest.value_digest(v)

    def digest(self) -> bytes:
        """Digest of every database's logical state."""
        return digest.databases_digest(self.dbs)

    def check_integrity(self) -> None:
        """Raise AssertionError if any structural invariant is broken.

        Node sizes are checked against this engine's limits unless its nodes came from a
        snapshot, whose layout another engine's limits decided.
        """
        cfg = self.config
        limits = None if self.foreign_layout else (cfg.node_max_bytes, cfg.node_max_entries)
        assert len(self.dbs) == cfg.databases, f"{len(self.dbs)} databases"
        for db, keyspace in enumerate(self.dbs):
            try:
                digest.check_keyspace(keyspace, limits)
            except AssertionError as e:
                raise AssertionError(f"db {db}: {e}") from None

    def _draw(self) -> int:
        """The next number of the splitmix64 sequence seeded by config.random_seed."""
        self._draws += 1
        z = (self.config.random_seed + self._draws * 0x9E3779B97F4A7C15) & _MASK64
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
        return z ^ (z >> 31)


def select(db: int) -> Argv:
    """The effect that moves `apply` to database `db`."""
    return [b"SELECT", b"%d" % db]
