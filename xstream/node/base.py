"""The node core that primary and replica share: one engine, served from one event loop.

The event loop thread is the single writer (Redis's main thread): every engine call runs on it
without an `await` in between, so commands never interleave. `Node.execute(argv)` is the one
argv dispatch of a server: a few server commands (WAIT, PING, ROLE, ECHO, INFO) live here,
everything else is looked up in the engine's command table; writes go to `write()` (the primary
logs and ships them; a replica refuses them with READONLY).

Session offsets: a read may carry its client's session offset (`client_offset`, the highest
offset the client has written or read at); `reach` holds it until the node has applied that
far, so one client's reads never go backwards (a replica waits a moment, then says TRYAGAIN).
WAIT reads the same number as the offset whose acks it waits for.

Long reads (XRANGE, XREVRANGE, XREAD over many entries) are built in slices, the loop
yielding between two, and bounded in size (slices.py). Arguments are bounded by
proto-max-bulk-len where an edge decodes them (RESP's parser, gRPC's service.py), never here:
every argv the node is given is within it.

Blocking reads: a read the engine cannot answer yet returns a BlockSpec; the node parks the
caller on the spec's (db, key)s until a write (on a primary) or an applied record (on a
replica) signals one of them, then re-runs the rewritten argv in that db, until it answers or
the deadline passes. The first deadline stands: re-running does not restart the BLOCK timeout.

Databases: a command runs in the database its caller gives (`db`, default 0: a RESP
connection's SELECTed one, gRPC's `xstream-db` metadata); the engine checks nothing about it,
so callers pass a valid index (`Engine.check_db`). SELECT is the connection's, not the node's.

Batches and transactions (batch.py): `write_batch(argvs)` runs a pipeline's plain writes
back to back as one write, each with its own reply; `transaction(argvs, watch)` is EXEC:
the queued commands back to back (reads too; nothing blocks), as one write, or None if a
watched (db, key) changed (watches.py). The primary logs each as one record and settles it
once (`commit_batch`); a replica refuses writes (READONLY) before anything runs.
"""

from __future__ import annotations

import asyncio
import time
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from typing import Any

from xstream.clock import now_ms
from xstream.engine import NULL_ARRAY, Engine, Result, StreamError
from xstream.engine.commands import lookup
from xstream.engine.context import BlockSpec
from xstream.engine.reply import EntryForm, Reply, Status
from xstream.node import infotext, records, servercmds, slices, users
from xstream.node.acl import Acl
from xstream.node.backlog import Backlog
from xstream.node.batch import Batch
from xstream.node.concern import WriteConcern
from xstream.node.epochs import EpochState
from xstream.node.logs import slog
from xstream.node.metrics import METRICS
from xstream.node.pacing import Window
from xstream.node.stats import STATS
from xstream.node.store import Store
from xstream.node.watches import Watch, Watches

Argv = list[bytes]
Rerun = Callable[[Argv, int], Awaitable[Result] | Result]  # (argv, db)
Waited = tuple[int, bytes]  # (db, key)


class Signal:
    """A broadcast wake-up: `wait(timeout)` until the next `fire()`, without a task per wait."""

    def __init__(self) -> None:
        self._waiters: list[asyncio.Future[None]] = []

    def fire(self) -> None:
        if not self._waiters:
            return  # nobody waits (a primary's every commit without replicas)
        waiters, self._waiters = self._waiters, []
        for fut in waiters:
            if not fut.done():
                fut.set_result(None)

    async def wait(self, timeout: float) -> None:
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[None] = loop.create_future()
        self._waiters.append(fut)
        handle = loop.call_later(timeout, _resolve, fut)
        try:
            await fut
        finally:
            handle.cancel()


def log_snapshot_failure(task: asyncio.Task[Any]) -> None:
    """Done-callback of a background snapshot: its failure is logged (store.py already said
    which file); the older snapshot and the log stay, and the next one is tried later."""
    if not task.cancelled() and task.exception() is not None:
        slog("background_snapshot_failed", level="error", error=str(task.exception()))


def _resolve(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


class Node(ABC):
    """What every role is: an engine, a store and a backlog under one name, the history it
    follows (`replid`), its epochs; the dispatch of commands, blocking and long reads."""

    role = "node"
    store: Store
    backlog: Backlog
    replid: str
    limits = slices.Limits()  # what one request may cost; the host sets its configured ones
    debug_command = False  # DEBUG allowed (--enable-debug-command); the host sets it
    window: Window | None = None  # a primary's flow-control window (pacing.py); None: none

    def __init__(self, engine: Engine, name: str) -> None:
        self.engine = engine
        self.name = name
        self.health: Any = None  # the health servicer, once serving
        self.epochs = EpochState()  # this node's epoch, the epoch it led, its epoch history
        # blocked reads per (db, key), in the order they blocked (Redis serves them so)
        self._waiters: dict[Waited, dict[asyncio.Future[bytes], None]] = {}
        self.watches = Watches()  # WATCHed (db, key)s of the RESP connections
        self.acl = Acl()  # the node's users: the host's, kept across roles (users.py)
        # the (db, key)s of blocked reads that wake when a key is deleted (XREADGROUP's on_nokey)
        self._nokey: dict[asyncio.Future[bytes], list[Waited]] = {}

    @property
    def epoch(self) -> int:
        return self.epochs.epoch

    def check_client_epoch(self, client_epoch: int, argvs: list[Argv] | None = None) -> None:
        """Refuse `argvs` (None: a write) if a client that has seen `client_epoch` must not run
        them here (a primary refuses writes when the client knows a newer epoch): StreamError.
        A replica refuses no read for it: its reads may lag anyway."""
        return

    # ------------------------------------------------------------ dispatch

    async def execute(
        self,
        argv: Argv,
        concern: WriteConcern | None = None,
        client_offset: int = 0,
        db: int = 0,
        *,
        entries: EntryForm = "lists",
    ) -> tuple[Reply, int]:
        """Run one command in database `db`; (reply, replication offset after it). Raises
        StreamError. Counted in INFO commandstats (stats.py). Every command of the RESP edge
        comes here: the engine's writes go straight to `write`, one coroutine frame down.
        `entries`: the form the edge takes a long read's stream entries in (EntryForm)."""
        if not argv:
            raise StreamError("empty command")
        t0 = time.perf_counter()
        server_cmd = SERVER_COMMANDS.get(argv[0].upper())
        if server_cmd is not None:
            name = argv[0].decode(errors="replace").lower()
        else:
            try:
                cmd = lookup(argv)
            except StreamError as e:
                if e.message.startswith("wrong number of arguments"):
                    STATS.call(argv[0].decode(errors="replace").lower(), 0, rejected=True)
                raise
            name = cmd.fullname
        try:
            if server_cmd is not None:
                out = await server_cmd(self, argv, client_offset)
            elif cmd.write:
                out = await self.write(argv, concern, db)
            else:
                out = await self._read(argv, client_offset, db, entries)
        except StreamError:
            STATS.call(name, _usec(t0), failed=True)
            raise
        STATS.call(name, int((time.perf_counter() - t0) * 1_000_000))
        return out

    async def _read(
        self, argv: Argv, client_offset: int, db: int, entries: EntryForm = "lists"
    ) -> tuple[Reply, int]:
        """Run an engine read (argv's command, looked up): sliced when long (its entries
        in the form `entries`), parked when it blocks."""
        await self.reach(client_offset)
        if slices.slices_for(argv, self.limits):
            run = self._read_reply(db, entries)
            reply = await slices.read(self.engine, db, run, argv, self.limits)
            return reply, self.offset
        result = self.engine.execute(argv, now_ms(), db)
        if result.block is not None:
            result = await self.block(result.block, self._read_again)
        return result.reply, self.offset

    async def reach(self, offset: int) -> None:
        """Return once this node's state is at `offset` or past it: a read carrying a client's
        session offset is answered from no older a state than the client has seen (else
        StreamError TRYAGAIN). A primary is always there: it has nothing newer to wait for."""
        return

    def _read_reply(self, db: int, entries: EntryForm = "lists") -> Callable[[Argv], Reply]:
        return lambda argv: self.engine.execute(argv, now_ms(), db, entries=entries).reply

    def _read_again(self, argv: Argv, db: int) -> Result:
        return self.engine.execute(argv, now_ms(), db)

    @abstractmethod
    async def write(
        self, argv: Argv, concern: WriteConcern | None, db: int = 0
    ) -> tuple[Reply, int]:
        """Run a write command in `db` (the primary logs and ships it; a replica refuses it)."""

    @property
    @abstractmethod
    def offset(self) -> int:
        """The replication offset this node's state is at."""

    async def wait_replicas(self, numreplicas: int, timeout_ms: int, offset: int) -> int:
        raise StreamError(
            "WAIT cannot be used with replica instances. Please also note that "
            "since Redis 4.0 if a replica is configured to be writable (which is "
            "not the default) writes to replicas are just local and are not "
            "propagated."
        )

    def info(self) -> dict[str, Any]:
        return {"role": self.role}

    async def pipeline(
        self,
        argvs: list[Argv],
        concern: WriteConcern | None,
        client_offset: int = 0,
        db: int = 0,
    ) -> tuple[list[Reply | StreamError], int]:
        """Each command in order, in `db`; a failed one leaves its error in its place, and so
        does one whose reply would take the pipeline's replies past max-reply-bytes. A node
        behind the client's session offset fails the whole pipeline instead (see `reach`)."""
        await self.reach(client_offset)
        out: list[Reply | StreamError] = []
        room = self.limits.max_reply_bytes  # for the pipeline's replies together
        for argv in argvs:
            try:
                reply = await self.pipelined(argv, concern, client_offset, db)
                size = slices.reply_size(reply)
                if size > room and not _is_write(argv):  # a write's effects are done
                    raise slices.too_long(self.limits.max_reply_bytes)
                room -= size
                out.append(reply)
            except StreamError as e:
                out.append(e)
        return out, self.offset

    async def pipelined(
        self, argv: Argv, concern: WriteConcern | None, client_offset: int, db: int = 0
    ) -> Reply:
        """One command of a pipeline."""
        return (await self.execute(argv, concern, client_offset, db))[0]

    # ------------------------------------------------------------ users (users.py)

    def apply_record(self, effects: list[Argv]) -> Result:
        """Apply one record of the stream: a users record to the users, any other to the
        engine (its signaled and touched keys in the Result)."""
        if users.is_users_record(effects):
            users.install(self.acl, users.applied(self.acl.users, effects))
            return Result(None)
        return self.engine.apply_record(effects)

    def apply_payload(self, payload: bytes) -> Result:
        """apply_record of a record's payload (checksummed): one XAPPEND alone, the usual
        replicated write, is appended from the payload's bytes (Engine.apply_payload), any
        other decoded first. Raises CorruptRecordError (a payload that does not decode) or
        the StreamError of an effect that does not apply."""
        result = self.engine.apply_payload(payload)
        if result is None:
            result = self.apply_record(records.decode_payload(payload))
        return result

    def change_users(self, effects: list[Argv]) -> int:
        """Log and ship a users record (ACL SETUSER, DELUSER, LOAD), then apply it; the
        offset after it (settle it as a write). Raises this node's refusal of writes (a
        replica's READONLY, MISCONF, ...) first, even for no effects (nothing to log: the
        check alone, as a write that changes nothing is still refused): nothing changes."""
        self.check_writes()
        assert not effects, f"a {self.role} that takes writes logs users records"
        return self.offset

    def snapshot_meta(self) -> dict[str, Any]:
        """What a snapshot file holds beside the engine's data: the replid, the users."""
        return {"replid": self.replid, **users.meta(self.acl)}

    # ------------------------------------------------------------ batches and transactions

    def batchable(self, argv: Argv) -> bool:
        """Whether `argv` may join a batch of pipelined writes (`write_batch`): a well-formed
        engine write that never blocks (XREADGROUP, BLPOP, BRPOP may: each runs alone, and so
        does anything else, an unknown or ill-formed command answering its error alone)."""
        return plain_write(argv) is not None

    def write_now(self, argv: Argv, db: int = 0) -> Result | None:
        """`execute(argv, db=db)` without a coroutine, for a `batchable` write this node
        completes without waiting now (nothing to wait for before or after it): its Result,
        counted in commandstats as `execute` counts it, or the StreamError `execute` raises.
        None, with nothing done or counted, for anything else: the caller awaits `execute`.
        A node that takes no writes answers None (its refusal is `execute`'s)."""
        return None

    def takes_writes_now(self) -> bool:
        """Whether a write now would complete without waiting: `write_batch_now` may be
        called (until the next await). A node that takes no writes says False."""
        return False

    def write_batch_now(self, argvs: list[Argv], db: int = 0) -> list[Reply | StreamError]:
        """`write_batch(argvs, None, db)` without a coroutine; only while `takes_writes_now`."""
        raise AssertionError(f"a {self.role} takes no writes now")

    def check_writes(self) -> None:
        """Raise this node's refusal of writes, if any (READONLY, MISCONF, NOREPLICAS): what
        Redis checks when MULTI queues a write and again at EXEC."""
        return

    async def write_batch(
        self,
        argvs: list[Argv],
        concern: WriteConcern | None,
        db: int = 0,
    ) -> list[Reply | StreamError]:
        """`batchable` writes in `db`, each answered in its place (its reply or its error) as
        if sent one by one. The primary runs them as one record, logged and settled once."""
        out: list[Reply | StreamError] = []
        for argv in argvs:
            try:
                out.append((await self.write(argv, concern, db))[0])
            except StreamError as e:
                out.append(e)
        return out

    def transaction_check(self, argvs: list[Argv]) -> bool:
        """Whether `argvs` hold a write; if so, raise this node's refusal of writes."""
        writes = any(map(_is_write_or_unknown, argvs))
        if writes:
            self.check_writes()
        return writes

    async def transaction(
        self,
        argvs: list[Argv],
        watch: Watch | None,
        concern: WriteConcern | None = None,
        db: int = 0,
    ) -> list[Reply | StreamError] | None:
        """EXEC: `argvs` back to back at one `now`, nothing else between them, as one write;
        None (EXEC's null) if a key `watch` watched has changed. If any is a write, this node's
        refusal (`check_writes`) is raised before anything runs. Nothing blocks: a blocking
        read answers at once, WAIT with the replicas that have acked now."""
        writes = self.transaction_check(argvs)
        if watch is not None and watch.dirty:
            return None
        now = now_ms()
        batch = Batch()
        for argv in argvs:
            server_cmd = SERVER_COMMANDS.get(argv[0].upper())
            if server_cmd is None:
                batch.run(self.engine, argv, now, db)
                continue
            try:
                batch.add((await server_cmd(self, _no_wait(argv), 0))[0])  # none suspends
            except StreamError as e:
                batch.fail(e)
        batch.count(argvs)
        return await self.commit_batch(batch, concern) if writes else batch.replies

    async def commit_batch(
        self, batch: Batch, concern: WriteConcern | None
    ) -> list[Reply | StreamError]:
        """Log, ship and settle a batch of writes as one record; the replies. A node that
        takes no writes has none (its `check_writes` refused them)."""
        assert not batch.result.effects
        return batch.replies

    @abstractmethod
    async def ingest_batch(
        self, key: bytes, elements: list[bytes], counts: list[int], db: int = 0
    ) -> list[bytes]:
        """`XADD key *` per entry in `db`, as one write (the primary's fast path): entry i is
        the next counts[i] of `elements` (they add up: the edge checked). [first ID, last ID]
        appended (the others are between them, consecutive); [] for no entries."""

    @abstractmethod
    async def settle(self, offset: int, concern: WriteConcern | None) -> None:
        """Wait until writes up to `offset` are as durable and replicated as `concern` asks."""

    async def active_expire(self, limit: int) -> None:
        """One active expiry cycle (expiry.py): the primary's deletes keys past their time;
        other roles never expire keys themselves."""
        return

    @abstractmethod
    async def snapshot_now(self) -> tuple[int, int]:
        """Write a snapshot now; (offset, bytes)."""

    @abstractmethod
    async def resume_log(self) -> None:
        """After a disk fault, once the disk takes writes again: snapshot the state into a
        fresh log segment and take writes (store.py). OSError if the disk fails again."""

    # ------------------------------------------------------------ blocking reads

    async def block(self, spec: BlockSpec, rerun: Rerun) -> Result:
        """Wait on spec's keys and re-run its argv until it answers or the deadline passes.

        A signal re-runs it unless the engine says that signal does not concern it (an XREAD
        whose key was deleted or retyped keeps waiting, as in Redis); a spec's `rerun_at_ms`
        (a pending entry becoming claimable) re-runs it without any signal.
        """
        deadline = spec.deadline_ms
        while True:
            woke = await self._park(spec, deadline)
            if woke is None:
                return Result(NULL_ARRAY)
            if woke and not self.engine.wakes(spec, woke):
                continue
            result = rerun(spec.argv, spec.db)
            if not isinstance(result, Result):
                result = await result
            if result.block is None:
                return result
            spec = result.block

    async def _park(self, spec: BlockSpec, deadline: int) -> bytes | None:
        """Wait for a signal of one of spec's keys (returns that key), its `rerun_at_ms` (b""),
        or the deadline (None)."""
        fut: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
        waited = [(spec.db, key) for key in spec.keys]
        for w in waited:
            self._waiters.setdefault(w, {})[fut] = None
        if spec.on_nokey:
            self._nokey[fut] = waited
        try:
            now = now_ms()
            if deadline and deadline <= now:
                return None
            wake_at = min((t for t in (deadline, spec.rerun_at_ms) if t), default=0)
            try:
                return await asyncio.wait_for(fut, (wake_at - now) / 1000 if wake_at else None)
            except TimeoutError:
                return None if deadline and now_ms() >= deadline else b""
        finally:
            self._nokey.pop(fut, None)
            for w in waited:
                waiting = self._waiters.get(w)
                if waiting is not None:
                    waiting.pop(fut, None)
                    if not waiting:
                        del self._waiters[w]

    def wake(self, signaled: list[Waited]) -> None:
        """Wake the reads blocked on these (db, key)s (a Result's `signaled`)."""
        for db_key in signaled:
            for fut in self._waiters.pop(db_key, ()):
                if not fut.done():
                    fut.set_result(db_key[1])

    def wake_all(self) -> None:
        """The data set was replaced (a full sync, a rollback, a cut back): every blocked read
        looks again, every WATCH is spoiled."""
        self.wake(list(self._waiters))
        self.watches.touch_all()

    def unblock_all(self, error: StreamError) -> None:
        """Fail every blocked client with `error` (the node is changing role)."""
        waiters, self._waiters = self._waiters, {}
        for fut in {f for fs in waiters.values() for f in fs}:
            if not fut.done():
                fut.set_exception(error)

    # ------------------------------------------------------------ role changes (host.py)

    def to_record_boundary(self) -> None:
        """Before another role takes this state: nothing partial is left in the log (a
        replica drops a record its link delivered only in part)."""
        return

    def hand_over(self, to: Node) -> None:
        """This role ends; `to` serves the same engine and store from now on. By default
        blocked reads keep waiting through `to` (the two share the table: a read parked
        through this node re-parks through it); a primary fails them instead (Primary)."""
        to._waiters, to._nokey = self._waiters, self._nokey
        to.watches = self.watches
        to.acl = self.acl

    @property
    def blocked_clients(self) -> int:
        return len({f for fs in self._waiters.values() for f in fs})

    def blocking_info(self) -> dict[str, int]:
        """INFO clients' total_blocking_keys and total_blocking_keys_on_nokey."""
        nokey = {k for keys in self._nokey.values() for k in keys if k in self._waiters}
        return {"blocking_keys": len(self._waiters), "blocking_keys_on_nokey": len(nokey)}

    # ------------------------------------------------------------ snapshots

    async def write_snapshot(self) -> tuple[int, int]:
        """Serialize the state now (consistent at this offset), write it in a worker thread
        and drop the log it supersedes; (offset, bytes). STATS notes the save (INFO's
        rdb_changes_since_last_save counts from when it began)."""
        mark = STATS.saving()
        ok = False
        try:
            snap = self.store.begin_snapshot(self.engine, self.snapshot_meta())
            await asyncio.get_running_loop().run_in_executor(None, self.store.finish_snapshot, snap)
            ok = True
        finally:
            STATS.saved(mark, ok)
        METRICS.snapshots.inc()
        return snap.offset, snap.size


# ---------------------------------------------------------------- server commands


async def _wait(node: Node, argv: Argv, client_offset: int) -> tuple[Reply, int]:
    """WAIT numreplicas timeout: replicas that acked this client's last write (or, without a
    session offset, everything written so far)."""
    if len(argv) != 3:
        raise StreamError("wrong number of arguments for 'wait' command")
    try:
        numreplicas, timeout = int(argv[1]), int(argv[2])
    except ValueError:
        raise StreamError("value is not an integer or out of range") from None
    if timeout < 0:
        raise StreamError("timeout is negative")
    offset = client_offset or node.offset
    return await node.wait_replicas(numreplicas, timeout, offset), node.offset


async def _ping(node: Node, argv: Argv, client_offset: int) -> tuple[Reply, int]:
    if len(argv) > 2:
        raise StreamError("wrong number of arguments for 'ping' command")
    return (argv[1] if len(argv) == 2 else Status("PONG")), node.offset


async def _role(node: Node, argv: Argv, client_offset: int) -> tuple[Reply, int]:
    info = node.info()
    if info["role"] == "primary":
        reps: list[Reply] = [
            [r["host"].encode(), str(r["port"]).encode(), str(r["ack_offset"]).encode()]
            for r in info["replicas"]
        ]
        return [b"master", info["offset"], reps], node.offset
    host, _, port = info["primary"].rpartition(":")
    return [b"slave", host.encode(), int(port or 0), info["link"].encode(), info["offset"]], (
        node.offset
    )


async def _echo(node: Node, argv: Argv, client_offset: int) -> tuple[Reply, int]:
    if len(argv) != 2:
        raise StreamError("wrong number of arguments for 'echo' command")
    return argv[1], node.offset


async def _info(node: Node, argv: Argv, client_offset: int) -> tuple[Reply, int]:
    return infotext.render(node.info() | node.blocking_info(), argv[1:]), node.offset


def _usec(t0: float) -> int:
    return int((time.perf_counter() - t0) * 1_000_000)


# The engine's writes that may block. WARNING: the RESP edge's MAY_BLOCK names them too.
BLOCKING_WRITES = frozenset({"xreadgroup", "blpop", "brpop"})


def plain_write(argv: Argv) -> str | None:
    """The commandstats name of `argv` if it is a well-formed engine write that never blocks
    (Node.batchable), else None."""
    if argv[0].upper() in SERVER_COMMANDS:
        return None
    try:
        cmd = lookup(argv)
    except StreamError:
        return None
    return cmd.fullname if cmd.write and cmd.fullname not in BLOCKING_WRITES else None


def _is_write(argv: Argv) -> bool:
    return argv[0].upper() not in SERVER_COMMANDS and lookup(argv).write


def _no_wait(argv: Argv) -> Argv:
    """WAIT inside MULTI answers the replicas that acked so far, without waiting (Redis's
    CLIENT_DENY_BLOCKING): asking for 0 of them does that; a bad number keeps its error."""
    if argv[0].upper() == b"WAIT" and len(argv) == 3 and argv[1].lstrip(b"-").isdigit():
        return [argv[0], b"0", argv[2]]
    return argv


def _is_write_or_unknown(argv: Argv) -> bool:
    try:
        return _is_write(argv)
    except StreamError:  # it answers its own error; counting it a write refuses no more
        return True


ServerCommand = Callable[[Node, Argv, int], Awaitable[tuple[Reply, int]]]
SERVER_COMMANDS: dict[bytes, ServerCommand] = {
    b"WAIT": _wait,
    b"PING": _ping,
    b"ROLE": _role,
    b"ECHO": _echo,
    b"INFO": _info,
    **servercmds.COMMANDS,
}
