"""What one command execution sees and produces.

A handler gets a `Ctx`: the argv, the caller's `now_ms`, whether it is replaying shipped
effects (`replicated`, Redis's "must obey client": no clock, LIMIT ignored), the keyspace of
the selected database (`keyspace`, which is `dbs[db]`; only commands that span databases, such
as MOVE, SWAPDB, COPY ... DB and FLUSHALL, look at `dbs`) and config. It returns its reply and
records, through the context:

* `effects`: deterministic argvs that reproduce its changes on another engine; none when
  nothing changed (so read-only commands never produce any);
* `signaled`: (db, key) pairs whose waiters (blocked XREAD/XREADGROUP) should retry;
* `touched`: (db, key) pairs whose WATCHers' transactions must fail (Redis's
  signalModifiedKey): a key added, deleted or replaced, entries added or removed, a stream
  created by XGROUP CREATE MKSTREAM; not group or consumer state (XACK, XCLAIM, XREADGROUP,
  XGROUP SETID, XSETID leave a WATCH alone, as in Redis 7);
* `block`: for a read that found nothing and may wait, what to wait on.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .keyspace import Keyspace
from .reply import EntryForm, Reply
from .settings import EngineConfig, Settings

Argv = list[bytes]


@dataclass(slots=True)
class BlockSpec:
    """A read that may wait: re-execute `argv` when any of `keys` is signaled.

    `deadline_ms` is absolute (0 = wait forever); at the deadline the reply is NULL_ARRAY.
    `argv` is the command with `$` already resolved to concrete IDs, as Redis rewrites it.
    `rerun_at_ms` (absolute, 0 = never) re-executes it without a signal: when a pending entry
    becomes idle enough for XREADGROUP CLAIM (Redis's stream_claim_pending_keys).
    `on_nokey` (Redis's unblock_on_nokey, set by XREADGROUP) wakes the read when a key is
    deleted or stops being a stream; without it such a signal leaves the read waiting
    (`wakes_on`). `db` is the database the read runs in: it waits on (db, key) and is
    re-executed there (Engine.execute sets it).
    """

    keys: list[bytes]
    deadline_ms: int
    argv: Argv
    rerun_at_ms: int = 0
    on_nokey: bool = False
    db: int = 0
    waits_for: str = "stream"  # the type whose arrival wakes it ("list": BLPOP, BRPOP)

    def wakes_on(self, kind: str | None) -> bool:
        """Whether a signal of one of `keys`, now holding a value of `kind` ("stream", "list",
        ..., None: missing), re-executes the read (handleClientsBlockedOnKey: the key's type
        is the one waited on, or the reader asked to hear of the key's deletion)."""
        return kind == self.waits_for or self.on_nokey


Signaled = list[tuple[int, bytes]]  # (db, key)


# Result and Ctx are made once per command: their __init__ is written out (init=False) because
# mypyc compiles it, where the one dataclass generates would run as Python on every command.


@dataclass(slots=True, init=False)
class Result:
    reply: Reply
    effects: list[Argv]
    signaled: Signaled
    block: BlockSpec | None
    touched: Signaled  # (db, key) a WATCH sees modified
    # Whether Redis counts the write as a change (server.dirty: INFO's
    # rdb_changes_since_last_save); False for effects Redis does not propagate (a consumer's
    # history read updating delivery counts: propagation.md), which xstream ships anyway.
    dirty: bool

    def __init__(
        self,
        reply: Reply,
        effects: list[Argv] | None = None,
        signaled: Signaled | None = None,
        block: BlockSpec | None = None,
        touched: Signaled | None = None,
        dirty: bool = True,
    ) -> None:
        self.reply = reply
        self.effects = [] if effects is None else effects
        self.signaled = [] if signaled is None else signaled
        self.block = block
        self.touched = [] if touched is None else touched
        self.dirty = dirty


def _no_draw() -> int:
    return 0


@dataclass(slots=True, init=False)
class Ctx:
    argv: Argv
    now_ms: int
    replicated: bool
    dbs: list[Keyspace]  # every database; WARNING: SWAPDB swaps the list's items
    db: int  # the selected database
    config: EngineConfig
    settings: Settings  # the engine's (XCONFIGSET changes them)
    effects: list[Argv]
    signaled: Signaled
    block: BlockSpec | None
    touched: Signaled
    draw: Callable[[], int]  # the engine's next pseudo-random u64 (RANDOMKEY)
    dirty: bool  # see Result.dirty
    entries: EntryForm  # the form the caller takes stream entries in (reply.py)

    def __init__(
        self,
        argv: Argv,
        now_ms: int,
        replicated: bool,
        dbs: list[Keyspace],
        db: int,
        config: EngineConfig,
        settings: Settings,
        draw: Callable[[], int] = _no_draw,
    ) -> None:
        self.argv = argv
        self.now_ms = now_ms
        self.replicated = replicated
        self.dbs = dbs
        self.db = db
        self.config = config
        self.settings = settings
        self.effects = []
        self.signaled = []
        self.block = None
        self.touched = []
        self.draw = draw
        self.dirty = True
        self.entries = "lists"

    @property
    def keyspace(self) -> Keyspace:
        return self.dbs[self.db]

    def propagate(self, argv: Argv) -> None:
        self.effects.append(argv)

    def signal(self, key: bytes, db: int | None = None) -> None:
        """Wake the readers blocked on `key` in `db` (default: the selected database)."""
        self.signaled.append((self.db if db is None else db, key))

    def touch(self, key: bytes, db: int | None = None) -> None:
        """Fail the transactions WATCHing `key` in `db` (default: the selected database)."""
        self.touched.append((self.db if db is None else db, key))
