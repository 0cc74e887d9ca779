"""What one command execution sees and produces.

A handler gets a `Ctx`: the argv, the caller's `now_ms`, whether it is replaying shipped
effects (`replicated`, Redis's "must obey client": no clock, LIMIT ignored), the keyspace and
config. It returns its reply and records, through the context:

* `effects`: deterministic argvs that reproduce its changes on another engine; none when
  nothing changed (so read-only commands never produce any);
* `signaled`: keys whose waiters (blocked XREAD/XREADGROUP) should retry;
* `block`: for a read that found nothing and may wait, what to wait on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .keyspace import Keyspace
from .reply import Reply

if TYPE_CHECKING:
    from .settings import Settings

Argv = list[bytes]


@dataclass(frozen=True, slots=True)
class EngineConfig:
    node_max_bytes: int = 4096  # stream-node-max-bytes; 0 = no limit (capped at 1 GiB)
    node_max_entries: int = 100  # stream-node-max-entries; 0 = no limit
    idmp_duration: int = 100  # stream-idmp-duration: a new stream's IDMP window, seconds
    idmp_maxsize: int = 100  # stream-idmp-maxsize: a new stream's IIDs kept per producer

    @property
    def idmp(self) -> tuple[int, int]:
        """A new stream's (idmp_duration, idmp_maxsize)."""
        return self.idmp_duration, self.idmp_maxsize


@dataclass(slots=True)
class BlockSpec:
    """A read that may wait: re-execute `argv` when any of `keys` is signaled.

    `deadline_ms` is absolute (0 = wait forever); at the deadline the reply is NULL_ARRAY.
    `argv` is the command with `$` already resolved to concrete IDs, as Redis rewrites it.
    `rerun_at_ms` (absolute, 0 = never) re-executes it without a signal: when a pending entry
    becomes idle enough for XREADGROUP CLAIM (Redis's stream_claim_pending_keys).
    `on_nokey` (Redis's unblock_on_nokey, set by XREADGROUP) wakes the read when a key is
    deleted or stops being a stream; without it such a signal leaves the read waiting
    (`wakes_on`).
    """

    keys: list[bytes]
    deadline_ms: int
    argv: Argv
    rerun_at_ms: int = 0
    on_nokey: bool = False

    def wakes_on(self, is_stream: bool) -> bool:
        """Whether a signal of one of `keys`, now holding a stream or not, re-executes the
        read (handleClientsBlockedOnKey: the key's type is the one waited on, or the reader
        asked to hear of the key's deletion)."""
        return is_stream or self.on_nokey


@dataclass(slots=True)
class Result:
    reply: Reply
    effects: list[Argv] = field(default_factory=list)
    signaled: list[bytes] = field(default_factory=list)
    block: BlockSpec | None = None


@dataclass(slots=True)
class Ctx:
    argv: Argv
    now_ms: int
    replicated: bool
    keyspace: Keyspace
    config: EngineConfig
    settings: Settings  # the engine's (XCONFIGSET changes them)
    effects: list[Argv] = field(default_factory=list)
    signaled: list[bytes] = field(default_factory=list)
    block: BlockSpec | None = None

    def propagate(self, argv: Argv) -> None:
        self.effects.append(argv)

    def signal(self, key: bytes) -> None:
        self.signaled.append(key)
