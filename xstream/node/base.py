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
yielding between two, and bounded in size (slices.py); every argument is bounded too.

Blocking reads: a read the engine cannot answer yet returns a BlockSpec; the node parks the
caller on the spec's keys until a write (on a primary) or an applied record (on a replica)
signals one of them, then re-runs the rewritten argv, until it answers or the deadline passes.
The first deadline stands: re-running does not restart the BLOCK timeout.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from typing import Any

from xstream.clock import now_ms
from xstream.engine import NULL_ARRAY, Engine, Result, StreamError
from xstream.engine.commands import lookup
from xstream.engine.context import BlockSpec
from xstream.engine.reply import Reply, Status
from xstream.node import infotext, servercmds, slices
from xstream.node.backlog import Backlog
from xstream.node.concern import WriteConcern
from xstream.node.epochs import EpochState
from xstream.node.logs import slog
from xstream.node.metrics import METRICS
from xstream.node.stats import STATS
from xstream.node.store import Store

Argv = list[bytes]
Rerun = Callable[[Argv], Awaitable[Result] | Result]


class Signal:
    """A broadcast wake-up: `wait(timeout)` until the next `fire()`, without a task per wait."""

    def __init__(self) -> None:
        self._waiters: list[asyncio.Future[None]] = []

    def fire(self) -> None:
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

    def __init__(self, engine: Engine, name: str) -> None:
        self.engine = engine
        self.name = name
        self.health: Any = None  # the health servicer, once serving
        self.epochs = EpochState()  # this node's epoch, the epoch it led, its epoch history
        # blocked reads per key, in the order they blocked (Redis serves them in that order)
        self._waiters: dict[bytes, dict[asyncio.Future[bytes], None]] = {}
        # the keys of blocked reads that wake when a key is deleted (XREADGROUP's on_nokey)
        self._nokey: dict[asyncio.Future[bytes], list[bytes]] = {}

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
        self, argv: Argv, concern: WriteConcern | None = None, client_offset: int = 0
    ) -> tuple[Reply, int]:
        """Run one command; (reply, replication offset after it). Raises StreamError."""
        if not argv:
            raise StreamError("empty command")
        self.limits.check_args(argv)
        server_cmd = SERVER_COMMANDS.get(argv[0].upper())
        if server_cmd is not None:
            return await server_cmd(self, argv, client_offset)
        cmd = lookup(argv)
        METRICS.commands.labels(cmd.fullname).inc()
        if cmd.write:
            return await self.write(argv, concern)
        await self.reach(client_offset)
        if slices.slices_for(argv, self.limits):
            reply = await slices.read(self.engine, self._read_reply, argv, self.limits)
            return reply, self.offset
        result = self.engine.execute(argv, now_ms())
        if result.block is not None:
            result = await self.block(result.block, self._read_again)
        return result.reply, self.offset

    async def reach(self, offset: int) -> None:
        """Return once this node's state is at `offset` or past it: a read carrying a client's
        session offset is answered from no older a state than the client has seen (else
        StreamError TRYAGAIN). A primary is always there: it has nothing newer to wait for."""
        return

    def _read_reply(self, argv: Argv) -> Reply:
        return self.engine.execute(argv, now_ms()).reply

    def _read_again(self, argv: Argv) -> Result:
        return self.engine.execute(argv, now_ms())

    @abstractmethod
    async def write(self, argv: Argv, concern: WriteConcern | None) -> tuple[Reply, int]:
        """Run a write command (the primary logs and ships it; a replica refuses it)."""

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
        self, argvs: list[Argv], concern: WriteConcern | None, client_offset: int = 0
    ) -> tuple[list[Reply | StreamError], int]:
        """Each command in order; a failed one leaves its error in its place, and so does one
        whose reply would take the pipeline's replies past max-reply-bytes. A node behind the
        client's session offset fails the whole pipeline instead (see `reach`)."""
        await self.reach(client_offset)
        out: list[Reply | StreamError] = []
        room = self.limits.max_reply_bytes  # for the pipeline's replies together
        for argv in argvs:
            try:
                reply = await self.pipelined(argv, concern, client_offset)
                size = slices.reply_size(reply)
                if size > room and not _is_write(argv):  # a write's effects are done
                    raise slices.too_long(self.limits.max_reply_bytes)
                room -= size
                out.append(reply)
            except StreamError as e:
                METRICS.errors.labels(e.line.split(" ", 1)[0]).inc()
                out.append(e)
        return out, self.offset

    async def pipelined(
        self, argv: Argv, concern: WriteConcern | None, client_offset: int
    ) -> Reply:
        """One command of a pipeline."""
        return (await self.execute(argv, concern, client_offset))[0]

    @abstractmethod
    async def ingest_batch(self, key: bytes, entries: list[list[bytes]]) -> list[bytes]:
        """`XADD key *` per entry, as one write (the primary's fast path)."""

    @abstractmethod
    async def settle(self, offset: int, concern: WriteConcern | None) -> None:
        """Wait until writes up to `offset` are as durable and replicated as `concern` asks."""

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
            result = rerun(spec.argv)
            if not isinstance(result, Result):
                result = await result
            if result.block is None:
                return result
            spec = result.block

    async def _park(self, spec: BlockSpec, deadline: int) -> bytes | None:
        """Wait for a signal of one of spec's keys (returns that key), its `rerun_at_ms` (b""),
        or the deadline (None)."""
        fut: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
        for key in spec.keys:
            self._waiters.setdefault(key, {})[fut] = None
        if spec.on_nokey:
            self._nokey[fut] = spec.keys
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
            for key in spec.keys:
                waiting = self._waiters.get(key)
                if waiting is not None:
                    waiting.pop(fut, None)
                    if not waiting:
                        del self._waiters[key]

    def wake(self, keys: list[bytes]) -> None:
        for key in keys:
            for fut in self._waiters.pop(key, ()):
                if not fut.done():
                    fut.set_result(key)

    def wake_all(self) -> None:
        self.wake(list(self._waiters))

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
            offset, data = self.store.begin_snapshot(self.engine, {"replid": self.replid})
            await asyncio.get_running_loop().run_in_executor(
                None, self.store.finish_snapshot, offset, data
            )
            ok = True
        finally:
            STATS.saved(mark, ok)
        METRICS.snapshots.inc()
        return offset, len(data)


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


def _is_write(argv: Argv) -> bool:
    return argv[0].upper() not in SERVER_COMMANDS and lookup(argv).write


ServerCommand = Callable[[Node, Argv, int], Awaitable[tuple[Reply, int]]]
SERVER_COMMANDS: dict[bytes, ServerCommand] = {
    b"WAIT": _wait,
    b"PING": _ping,
    b"ROLE": _role,
    b"ECHO": _echo,
    b"INFO": _info,
    **servercmds.COMMANDS,
}
