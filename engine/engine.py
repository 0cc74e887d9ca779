"""The engine: a keyspace of streams behind one argv entry point.

    Engine.execute(argv, now_ms)  -> Result(reply, effects, signaled, block)
    Engine.apply(effect)          -> replays a shipped effect (no clock, LIMIT ignored)
    Engine.adopt(other)           -> takes another engine's data set (a snapshot loaded there)
    Engine.xadd_many(key, entries, now_ms) -> many `XADD key *` at once (api.py)

`execute` is all-or-nothing: a command either succeeds, or raises StreamError and changes
nothing. Effects are deterministic argvs: applying them, in order, to another engine (whatever
its node limits) reproduces this engine's logical state, which `digest()` compares.

`config` is the one in force: the base given here with what CONFIG SET changed over it
(`settings`, settings.py), which is replicated and persisted state as the keyspace is.
"""

from __future__ import annotations

from collections.abc import Sequence

from . import api, commands, digest
from .context import Argv, BlockSpec, Ctx, EngineConfig, Result
from .keyspace import Keyspace
from .settings import Settings
from .stream import Stream


class Engine:
    def __init__(self, config: EngineConfig | None = None) -> None:
        self.settings = Settings(config or EngineConfig())
        self.keyspace = Keyspace()
        self.foreign_layout = False  # True once a snapshot brought nodes built elsewhere

    @property
    def config(self) -> EngineConfig:
        """The config in force (the base with CONFIG SET's values over it)."""
        return self.settings.config

    def adopt(self, other: Engine) -> None:
        """Take `other`'s data set: its keyspace, its layout flag and its CONFIG SET values
        (over this engine's own base config)."""
        self.keyspace = other.keyspace
        self.foreign_layout = other.foreign_layout
        self.settings.load(other.settings.values)

    def execute(self, argv: Argv, now_ms: int = 0, *, replicated: bool = False) -> Result:
        cmd = commands.lookup(argv)
        settings = self.settings
        ctx = Ctx(argv, now_ms, replicated, self.keyspace, settings.config, settings)
        reply = cmd.handler(ctx)
        return Result(reply, ctx.effects, ctx.signaled, ctx.block)

    def xadd_many(self, key: bytes, entries: Sequence[Sequence[bytes]], now_ms: int) -> Result:
        """`XADD key * field value ...` once per entry, batched; see api.py."""
        return api.xadd_many(self.keyspace, self.config, key, entries, now_ms)

    def apply(self, effect: Argv) -> Result:
        """Replay one effect shipped by another engine."""
        return self.execute(effect, 0, replicated=True)

    def wakes(self, spec: BlockSpec, key: bytes) -> bool:
        """Whether a signal of `key` re-executes the read blocked on `spec` (see BlockSpec)."""
        return spec.wakes_on(isinstance(self.keyspace.get(key), Stream))

    def is_write(self, argv: Argv) -> bool:
        return commands.lookup(argv).write

    def key_digest(self, key: bytes) -> bytes | None:
        """Digest of one key's logical state (None if missing); layout-independent."""
        v = self.keyspace.get(key)
        return None if v is None else digest.value_digest(v)

    def digest(self) -> bytes:
        """Digest of the whole keyspace's logical state."""
        return digest.keyspace_digest(self.keyspace)

    def check_integrity(self) -> None:
        """Raise AssertionError if any structural invariant is broken.

        Node sizes are checked against this engine's limits unless its nodes came from a
        snapshot, whose layout another engine's limits decided.
        """
        cfg = self.config
        limits = None if self.foreign_layout else (cfg.node_max_bytes, cfg.node_max_entries)
        digest.check_keyspace(self.keyspace, limits)
