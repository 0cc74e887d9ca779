"""What one command execution sees and produces.

A handler gets a `Ctx`: the argv, the caller's `now_ms`, whether it is replaying shipped
effects (`replicated`, Redis's "must obey client": no clock, LIMIT ignored), the keyspace and
config. It returns its reply and records, through the context:

* `effects`: deterministic argvs that reproduce its changes on another engine; none when
  nothing changed (so read-only commands never produce any);
* `signaled`: keys whose waiters (blocked XREAD/XREADGROUP) should retry;
* `touched`: keys whose WATCHers' transactions must fail (Redis's signalModifiedKey): a key
  added, deleted or replaced, entries added or removed, a stream created by XGROUP CREATE
  MKSTREAM; not group or consumer state (XACK, XCLAIM, XREADGROUP, XGROUP SETID, XSETID
  leave a WATCH alone, as in Redis 7);
* `block`: for a read that found nothing and may wait, what to wait on.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .keyspace import Keyspace
from .reply import Reply

Argv = list[bytes]


@dataclass(frozen=True, slots=True)
class EngineConfig:
    node_max_bytes: int = 4096  # stream-node-max-bytes; 0 = no limit (capped at 1 GiB)
    node_max_entries: int = 100  # stream-node-max-entries; 0 = no limit


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
    touched: list[bytes] = field(default_factory=list)


@dataclass(slots=True)
class Ctx:
    argv: Argv
    now_ms: int
    replicated: bool
    keyspace: Keyspace
    config: EngineConfig
    effects: list[Argv] = field(default_factory=list)
    signaled: list[bytes] = field(default_factory=list)
    block: BlockSpec | None = None
    touched: list[bytes] = field(default_factory=list)

    def propagate(self, argv: Argv) -> None:
        self.effects.append(argv)

    def signal(self, key: bytes) -> None:
        self.signaled.append(key)

    def touch(self, key: bytes) -> None:
        self.touched.append(key)
