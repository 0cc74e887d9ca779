"""The primary node: applies writes, logs their effects, persists and ships them, counts acks.

A write, on the event loop (the single writer), with no await until its record is queued:

    engine.execute(argv, now)          all-or-nothing; StreamError leaves nothing behind
    -> records.encode(effects)         one record per write (an EXEC, a RESP pipeline's run of
    -> store.append                    writes and an ingest batch are one record each), in the file
    -> backlog.append                  before anything else sees it (while replicas are
                                       attached, and for BACKLOG_TTL after the last one is
                                       forgotten or after a restart: the backlog is memory's
                                       copy of the log's tail, which outlives a snapshot's cut)
    -> wake blocked readers and the replica senders (which ship up to `shippable()`, from the
       backlog or, further back, from the log on disk: `stream_from`)
    then, awaiting:  store.durable(offset)   (fsync=always: group-committed fsync)
                     acks from N replicas    (acks=quorum|all, with a timeout)

Only then is the reply sent. A write that ships no effects (it changed nothing) has no record.

Disk faults (store.py): a write is refused before it is applied while the log is faulted or
free space is below the reserve (`MISCONF Errors writing to the AOF file: ...`, Redis's line).
If the record cannot be written, or (fsync=always) its fsync fails, the state is rebuilt from
what the log holds (`_on_disk_fault`) and the write fails with MISCONF: nothing that is not in
the log stays applied, is shipped (with fsync=always replicas get only fsynced records) or is
acknowledged. The disk watcher (xstream/server/runner.py) calls `resume_log` once the disk
takes writes again. A replica that holds more of this primary's own epoch than the primary
(`check_replica_behind`: the primary came back with less than it wrote) is refused, never cut
back, and the primary stops taking writes so that the node with the data can take over.

Acks: `quorum` needs the replicas that make a majority of the cluster together with the
primary: (1 + R) // 2 of R replicas; `all` needs all R. R counts the live members of the
cluster: the replicas connected now or gone for less than `replica_forget_after` seconds
(--replica-forget-after), or --expect-replicas if larger. So a replica that reconnects keeps
its place (a link of the same name replaces its old one: it is counted once), one that went
away for good stops counting once forgotten, and a stray attach cannot inflate R for ever.
Without --expect-replicas a primary whose replicas have all been forgotten is back to R = 0,
as at start: set it to the cluster's size when quorum|all must mean replicas. A write whose
acks do not arrive in time fails with `ACKTIMEOUT ...`: it is applied and logged on the
primary (it may still reach replicas), but it is never reported as replicated. Only acks
earned count: an ack beyond the offset sent on its link is refused (peers.py) and closes it.

Epochs (epochs.py): the primary writes under its epoch. Once it has seen a newer one (a Hello
from a replica of a newer primary) it is *deposed*: it persists that epoch, refuses writes with
`READONLY ... deposed primary ...`, fails the writes waiting for acks and serves no replica.
A write whose client has seen a newer epoch (`xstream-epoch` metadata) is refused with
`READONLY ... stale primary ...` (the primary is not deposed by a client's word alone).
`close()` ends this role in-process (the node is being demoted): senders stop, blocked clients
get `UNBLOCKED`, and writes still waiting for acks fail.

Lease (automatic failover, xstream/server/coordinated.py): `lease_until` is the monotonic time
after which this primary must not acknowledge anything (its etcd lease could have expired and
another node been elected); +inf in manual mode. The write path checks it twice: before
applying (refused with `READONLY ... without a valid lease`, nothing applied) and again in
`settle()` just before the reply (`LEASELOST ...`: applied here, outcome unknown, since a new
primary may not have it). So no reply acknowledges a write once the lease may have lapsed.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from array import array
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from xstream.clock import now_ms
from xstream.engine import Engine, Result, StreamError, snapshot
from xstream.engine.reply import Reply
from xstream.node import epochs, records, replids, users
from xstream.node.backlog import Backlog
from xstream.node.base import Argv, Node, Signal, log_snapshot_failure, plain_write
from xstream.node.batch import Batch
from xstream.node.concern import Acks, WriteConcern
from xstream.node.logs import slog
from xstream.node.metrics import METRICS
from xstream.node.pacing import Window
from xstream.node.refusals import (
    AckTimeoutError,
    LeaseLostError,
    MisconfError,
    NoReplicasError,
    ReadOnlyError,
    UnblockedError,
)
from xstream.node.stats import STATS
from xstream.node.store import DiskFault, Store

from . import peers
from .flow import Pacer


@dataclass
class Options:
    acks_timeout_ms: int = 5000  # default timeout of acks=quorum|all
    expect_replicas: int = 0  # cluster size hint for quorum (R)
    min_replicas_to_write: int = 0
    min_replicas_max_lag: float = 10.0  # seconds
    snapshot_bytes: int = 64 << 20  # snapshot once the open log segment passes this
    replica_forget_after: float = 60.0  # seconds a departed replica still counts in R
    flow: Window = field(default_factory=Window)  # flow control (flow.py)


@dataclass
class ReplicaLink:
    name: str
    address: str
    ack_offset: int = 0
    ack_time: float = 0.0  # monotonic time of the last ack
    state: str = "sync"  # "sync" (full sync running), "online"
    connected: bool = True
    lag_ms_reported: int = 0
    sent: int = 0  # end of the stream handed to this link's sender: no ack may pass it
    left_at: float = 0.0  # monotonic time it disconnected (0: connected)
    paced: bool = False  # writes wait for it to stay within the window (flow.py)
    progress_at: float = 0.0  # monotonic time its ack_offset last moved
    held_since: float = 0.0  # monotonic time it began to hold writers (flow.py; 0: not)


_NO_LEASE = float("inf")  # lease_until in manual mode: the lease never lapses
COMMIT_TIMES = 1 << 16  # commit times kept at most: 16 bytes each, 1 MiB in all
# Seconds the backlog keeps the stream's tail with no replica to serve (Redis's
# repl-backlog-ttl): after the last replica is forgotten, and after a restart of a primary
# with a history (Redis recreates its backlog at start, so that replicas resume partially
# even when a snapshot cuts the log before they are back).
BACKLOG_TTL = 3600.0


@dataclass
class CommitTimes:
    """When (wall clock) each offset was committed, for a replica's lag in ms (lag_ms, and the
    time of each Records message). At most `capacity` entries, offsets increasing: once full,
    the entries no replica can ask for any more are forgotten (at or before `floor`: every
    connected replica acked past it), and if that is not enough every other entry goes. A
    replica behind a forgotten entry has its lag read from the next commit kept: a little
    short, never long."""

    capacity: int = COMMIT_TIMES
    offsets: array[int] = field(default_factory=lambda: array("q"))
    times: array[float] = field(default_factory=lambda: array("d"))

    def __len__(self) -> int:
        return len(self.offsets)

    def add(self, offset: int, t: float, floor: Callable[[], int]) -> None:
        if len(self.offsets) >= self.capacity:
            self.forget_upto(floor())
            if len(self.offsets) * 2 > self.capacity:  # replicas far behind: thin it out
                self.offsets = self.offsets[len(self.offsets) % 2 :: 2]
                self.times = self.times[len(self.times) % 2 :: 2]
        self.offsets.append(offset)
        self.times.append(t)

    def forget_upto(self, offset: int) -> None:
        """Drop the entries at or before `offset`."""
        i = bisect_right(self.offsets, offset)
        del self.offsets[:i]
        del self.times[:i]

    def first_after(self, offset: int) -> float | None:
        """Commit time of the first write past `offset` (None if nothing is past it)."""
        i = bisect_right(self.offsets, offset)
        if i == len(self.offsets):
            return None
        return self.times[i]


class Primary(Node):
    role = "primary"

    def __init__(
        self,
        engine: Engine,
        store: Store,
        backlog: Backlog,
        ids: dict[str, Any],
        name: str,
        options: Options | None = None,
        epoch_state: epochs.EpochState | None = None,
    ) -> None:
        super().__init__(engine, name)
        self.epochs = epoch_state or epochs.EpochState().started(backlog.end)
        self.store = store
        self.backlog = backlog
        self.replid: str = ids["replid"]
        self.replid2: str = ids.get("replid2", "")
        self.replid2_end: int = ids.get("replid2_end", 0)
        self.options = options or Options()
        self.replicas: dict[str, ReplicaLink] = {}
        # time.time() until which the backlog is kept without replicas (BACKLOG_TTL)
        self._backlog_until = time.time() + BACKLOG_TTL if backlog.end > 0 else 0.0
        self.full_syncs = 0
        self.partial_syncs = 0
        self.commit_times = CommitTimes()
        self.new_data = Signal()  # fired on every commit (and to ask replicas for acks)
        self.getacks = 0  # GETACKs asked so far: each sender pings with ack_now once per new one
        self.window = self.options.flow  # CONFIG GET/SET repl-flow-* (serverconfig.py)
        self.pacer = Pacer(self.window)
        self._ack_waiters: list[tuple[int, int, asyncio.Future[int]]] = []
        self._snapshotting: asyncio.Task[tuple[int, int]] | None = None
        self.closed = False  # demoted: this object no longer serves
        self.lease_until = _NO_LEASE  # monotonic deadline for acks (see the module doc)
        self.behind = ""  # why writes are refused: a replica holds more of this epoch
        store.on_fault = self._on_disk_fault

    @property
    def offset(self) -> int:
        return self.backlog.end

    # ------------------------------------------------------------ epochs and the end of the role

    def check_client_epoch(self, client_epoch: int, argvs: list[Argv] | None = None) -> None:
        if not epochs.client_ahead(self.epochs, client_epoch):
            return
        if argvs is None or any(map(self.engine_is_write, argvs)):
            raise ReadOnlyError(
                f"You can't write against a stale primary: the client has seen epoch "
                f"{client_epoch}, this primary's is {self.epochs.epoch}."
            )

    def _check_writable(self) -> None:
        try:
            self.store.check_writable()
        except DiskFault as e:
            raise misconf(e) from None
        if self.behind:
            raise ReadOnlyError(f"You can't write against this primary: {self.behind}")
        if self.closed or self.epochs.deposed:
            raise ReadOnlyError(
                f"You can't write against a deposed primary: epoch {self.epochs.epoch} has a "
                f"newer primary (this one led epoch {self.epochs.leader_epoch})."
            )
        if not self.lease_valid():
            raise ReadOnlyError(
                f"You can't write against a primary without a valid lease (epoch "
                f"{self.epochs.epoch}): a new primary may be elected."
            )

    def lease_valid(self) -> bool:
        lease_until = self.lease_until
        return lease_until == _NO_LEASE or time.monotonic() < lease_until

    def _check_lease_at_ack(self, offset: int) -> None:
        if not self.lease_valid():
            raise LeaseLostError(
                f"write applied on the primary at offset {offset} but its lease lapsed before "
                "it was acknowledged; it may be lost in a failover"
            )

    def step_down(self, epoch: int, because: str) -> None:
        """A newer epoch exists: persist it, refuse writes from now on, fail pending acks."""
        if epoch <= self.epochs.epoch:
            return
        self.epochs = self.epochs.seen(epoch)
        replids.save_epochs(self.store.dir, self.epochs)
        slog("primary_deposed", level="warning", epoch=epoch, because=because,
             leader_epoch=self.epochs.leader_epoch, offset=self.offset)  # fmt: skip
        self._fail_ack_waiters()
        self.pacer.moved.fire()
        self.new_data.fire()

    def hand_over(self, to: Node) -> None:
        """Demoted: blocked clients get UNBLOCKED and writes waiting for acks fail (close)."""
        self.close()
        to.watches = self.watches
        to.acl = self.acl

    def close(self) -> None:
        """This primary stops serving (the node becomes a replica)."""
        self.closed = True
        self._fail_ack_waiters()
        why = "force unblock from blocking operation, instance state changed (master -> replica?)"
        self.unblock_all(UnblockedError(why))
        self.pacer.moved.fire()
        self.new_data.fire()

    def _fail_ack_waiters(self) -> None:
        """Writes waiting for acks return now with the acks they have (so they fail)."""
        for off, _, fut in self._ack_waiters:
            if not fut.done():
                fut.set_result(self.acked(off))
        self._ack_waiters = []

    # ------------------------------------------------------------ writes

    async def write(
        self, argv: Argv, concern: WriteConcern | None, db: int = 0, settle: bool = True
    ) -> tuple[Reply, int]:
        if self.replicas:  # only a replica holds writes back (admit)
            await self.admit()
        result = self._apply(argv, db)
        if result.block is not None:
            result = await self.block(result.block, self._write_again)
        offset = self.offset
        if settle and not self.settled_at_once(offset, concern):
            await self.settle(offset, concern)
        return result.reply, offset

    def _apply(self, argv: Argv, db: int) -> Result:
        """Refused as a write is (`check_writes`), else run, logged and shipped: its Result."""
        self._check_writable()
        self._check_min_replicas()
        result = self.engine.execute(argv, now_ms(), db)
        self.commit(result)
        return result

    def takes_writes_now(self) -> bool:
        """`admit` would let a write in at once and its settling (concern None) waits for no
        fsync, only the lease check."""
        return self.store.fsync != "always" and self._admits_now()

    def write_now(self, argv: Argv, db: int = 0) -> Result | None:
        """`write` without its coroutine, when it would not wait (`takes_writes_now`)."""
        if self.store.fsync == "always" or (self.replicas and not self._admits_now()):
            return None  # not takes_writes_now(), inline: once per write
        name = plain_write(argv)
        if name is None:
            return None
        t0 = time.perf_counter()
        try:
            result = self._apply(argv, db)
            if self.lease_until != _NO_LEASE:  # a lease that may lapse (automatic failover)
                self._check_lease_at_ack(self.backlog.end)
        except StreamError:
            STATS.call(name, _usec(t0), failed=True)
            raise
        STATS.call(name, _usec(t0))
        return result

    def check_writes(self) -> None:
        self._check_writable()
        self._check_min_replicas()

    async def write_batch(
        self,
        argvs: list[Argv],
        concern: WriteConcern | None,
        db: int = 0,
    ) -> list[Reply | StreamError]:
        if self.replicas:  # only a replica holds writes back (admit)
            await self.admit()
        try:
            batch = self._applied_batch(argvs, db)
        except StreamError as e:
            return [e] * len(argvs)
        return await self.commit_batch(batch, concern)

    def _applied_batch(self, argvs: list[Argv], db: int) -> Batch:
        """`argvs` run as one batch (each its reply or error), not yet committed; this
        primary's refusal of writes (`check_writes`) raised first, with nothing run."""
        self.check_writes()
        batch, now = Batch(), now_ms()  # one now: a batch is one turn of the loop
        batch.run_writes(self.engine, argvs, now, db)
        batch.count(argvs)
        return batch

    def write_batch_now(self, argvs: list[Argv], db: int = 0) -> list[Reply | StreamError]:
        """`write_batch` without its coroutine: only while `takes_writes_now`, so settling
        is the lease check alone (as `commit_batch`'s, failing every reply that did not)."""
        assert self.store.fsync != "always"  # no reply before its fsync
        try:
            batch = self._applied_batch(argvs, db)
        except StreamError as e:
            return [e] * len(argvs)
        try:
            self.commit(batch.result)
            self._check_lease_at_ack(self.offset)
        except StreamError as e:
            return batch.failed(e)
        return batch.replies

    async def commit_batch(
        self, batch: Batch, concern: WriteConcern | None
    ) -> list[Reply | StreamError]:
        """One record for the whole batch, one settle; if either fails (MISCONF: rolled back;
        ACKTIMEOUT, LEASELOST) every command that did not fail alone gets that error."""
        try:
            self.commit(batch.result)
            offset = self.offset
            if not self.settled_at_once(offset, concern):
                await self.settle(offset, concern)
        except StreamError as e:
            return batch.failed(e)
        return batch.replies

    def _write_again(self, argv: Argv, db: int) -> Result:
        self._check_writable()
        result = self.engine.execute(argv, now_ms(), db)
        self.commit(result)
        return result

    async def pipeline(
        self,
        argvs: list[Argv],
        concern: WriteConcern | None,
        client_offset: int = 0,
        db: int = 0,
    ) -> tuple[list[Reply | StreamError], int]:
        """Each command in order (others may interleave while one blocks); settled once."""
        before = self.offset
        out, _ = await super().pipeline(argvs, concern, client_offset, db)
        if self.offset != before:
            await self.settle(self.offset, concern)
        return out, self.offset

    async def pipelined(
        self, argv: Argv, concern: WriteConcern | None, client_offset: int, db: int = 0
    ) -> Reply:
        """A write is logged and shipped, not settled: the pipeline settles once at its end."""
        if argv and self.engine_is_write(argv):
            return (await self.write(argv, None, db, settle=False))[0]
        return (await self.execute(argv, None, client_offset, db))[0]

    def engine_is_write(self, argv: Argv) -> bool:
        try:
            return self.engine.is_write(argv)
        except StreamError:
            return False

    async def ingest_batch(
        self, key: bytes, elements: list[bytes], counts: list[int], db: int = 0
    ) -> list[bytes]:
        """One `XADD key *` per entry as one record; settle with `settle()` after the stream."""
        await self.admit()
        self._check_writable()
        self._check_min_replicas()
        result = self.engine.xadd_flat(key, elements, counts, now_ms(), db)
        self.commit(result)
        METRICS.entries_ingested.inc(len(counts))
        return result.reply  # type: ignore[return-value]

    async def active_expire(self, limit: int) -> None:
        """Delete up to `limit` keys past their time, shipped as DELs in one record (settled
        per the fsync policy, no acks awaited); skipped while writes are refused."""
        try:
            self._check_writable()
        except StreamError:
            return
        result = self.engine.expire_cycle(now_ms(), limit)
        if not result.effects:
            return
        try:
            self.commit(result)
            await self.settle(self.offset, None)
        except StreamError:  # MISCONF (rolled back) or LEASELOST: the next tick retries
            return

    def change_users(self, effects: list[Argv]) -> int:
        """A users record (users.py) is a write: refused as one, logged first (MISCONF if
        the log fails: nothing changes), then applied. Not counted as a data change."""
        self.check_writes()
        return self.log_users(effects) if effects else self.offset

    def log_users(self, effects: list[Argv]) -> int:
        """Log, ship and apply a users record without a client's checks (the node's own:
        its start-up users, a promotion's); DiskFault's MISCONF if the log fails."""
        self.commit(Result(None, effects, dirty=False))
        users.install(self.acl, users.applied(self.acl.users, effects))
        return self.offset

    def commit(self, result: Result) -> None:
        """Log, then ship a result's effects; wake its blocked readers. If the log cannot take
        the record, the state goes back to what the log holds (`_on_disk_fault`): MISCONF."""
        if result.effects:
            data = records.encode(result.effects)
            try:
                self.store.append(data)
            except DiskFault as e:
                raise misconf(e) from None
            if result.dirty:
                STATS.changed()
            now = time.time()
            if self.replicas or now < self._backlog_until:
                self.backlog.append(data)
            else:  # nobody to serve from memory; a replica that comes reads the log
                self.backlog.skip(len(data))
            self.commit_times.add(self.backlog.end, now, self._commit_floor)
            self.new_data.fire()
            if self.store.segment_bytes > self.options.snapshot_bytes:
                self.start_snapshot()
        if result.signaled and self._waiters:
            self.wake(result.signaled)
        if result.touched:
            self.watches.touch(result.touched)

    def _commit_floor(self) -> int:
        """Commit times at or before this offset are never asked for again: each connected
        replica acked past it, and it is before the backlog (where a returning replica
        resumes, if anywhere)."""
        acks = [r.ack_offset for r in self.replicas.values() if r.connected]
        return min([self.backlog.start, *acks])

    def pending(self, offset: int, concern: WriteConcern | None) -> bool:
        """Whether settling `offset` may wait: for its fsync (fsync=always, not synced yet)
        or for replica acks (any concern asks for them). What is not pending is settled by
        the lease check alone."""
        return concern is not None or not self.store.is_durable(offset)

    def settled_at_once(self, offset: int, concern: WriteConcern | None) -> bool:
        """`settle` without a coroutine when nothing is `pending`: its lease check, then True;
        False when `settle` must be awaited (the write path saves a coroutine per write)."""
        if self.pending(offset, concern):
            return False
        self._check_lease_at_ack(offset)
        return True

    async def settle(self, offset: int, concern: WriteConcern | None) -> None:
        """Durable per the fsync policy, then acked by as many replicas as asked, all within
        this primary's lease."""
        if self.settled_at_once(offset, concern):
            return
        store = self.store
        if not store.is_durable(offset):
            try:
                await store.durable(offset)
            except DiskFault as e:
                raise misconf(e) from None
        needed = 0 if concern is None else self.required_acks(concern)
        if needed:
            assert concern is not None
            timeout = concern.timeout_ms or self.options.acks_timeout_ms
            got = await self._await_acks(offset, needed, timeout / 1000)
            if got < needed:
                raise AckTimeoutError(
                    f"write applied on the primary at offset {offset} but acknowledged by "
                    f"{got} of {needed} required replicas within {timeout} ms; it is not "
                    "replicated"
                )
        self._check_lease_at_ack(offset)

    def required_acks(self, concern: WriteConcern | None) -> int:
        if concern is None or concern.acks is Acks.LEADER:
            return 0
        known = max(self.members(), self.options.expect_replicas)
        return known if concern.acks is Acks.ALL else (1 + known) // 2

    def members(self) -> int:
        """Replicas connected or departed less than `replica_forget_after` ago (see R in the
        module doc); the others are forgotten here."""
        now = time.monotonic()
        for name, r in list(self.replicas.items()):
            if not r.connected and now - r.left_at >= self.options.replica_forget_after:
                self._forget(name, round(now - r.left_at, 3))
        return len(self.replicas)

    def _forget(self, name: str, gone: float) -> None:
        del self.replicas[name]
        if not self.replicas:
            self._backlog_until = time.time() + BACKLOG_TTL
        for gauge in (METRICS.replica_ack, METRICS.replica_lag_bytes, METRICS.replica_lag_ms):
            with contextlib.suppress(KeyError):
                gauge.remove(name)
        slog("replica_forgotten", replica=name, gone_seconds=gone, replicas=len(self.replicas))

    def _check_min_replicas(self) -> None:
        need = self.options.min_replicas_to_write
        if need <= 0:
            return
        now = time.monotonic()
        good = sum(
            1
            for r in self.replicas.values()
            if r.connected
            and r.state == "online"
            and now - r.ack_time <= self.options.min_replicas_max_lag
        )
        if good < need:
            raise NoReplicasError("Not enough good replicas to write.")

    # ------------------------------------------------------------ disk faults

    def _on_disk_fault(self, end: int | None) -> None:
        """The log failed (store.py): bring the state back to `end`, what the log holds, so no
        write that is not in it stays applied (None: everysec's fsync failed; what it covered
        was acknowledged already and stays). A state that cannot be read back is PostgreSQL's
        PANIC: the process exits and restarts from the log."""
        if end is None:
            return
        t0 = time.monotonic()
        replay = users.Replay(Engine(self.engine.settings.base))
        try:
            tail = self.store.load_upto(replay.engine, end, replay.record, replay.snapshot)
        except (OSError, AssertionError, ValueError, records.CorruptRecordError) as e:
            slog("rollback_failed_exiting", level="critical", end=end, error=str(e))
            os._exit(70)
        self.engine.adopt(replay.engine)
        users.rebuilt(self.acl, replay.users)
        if end < self.backlog.end:  # fsync=always: nothing past `end` was shipped
            self.backlog = Backlog.holding(self.backlog.capacity, end, tail)
        self.wake_all()
        slog("state_rolled_back", level="warning", offset=end,
             seconds=round(time.monotonic() - t0, 3))  # fmt: skip

    def shippable(self) -> int:
        """The offset up to which replicas may be sent records: with fsync=always only what
        is fsynced (PostgreSQL's walsender rule), so a write whose fsync fails, and which is
        rolled back, never reached a replica; otherwise what is written to the log."""
        return self.store.synced if self.store.fsync == "always" else self.backlog.end

    async def resume_log(self) -> None:
        """The disk works again: snapshot the state into a fresh segment, take writes."""
        await self.store.resume(self.engine, self.snapshot_meta(), self.offset)
        self.new_data.fire()

    def check_replica_behind(self, hello: peers.Hello) -> str:
        """Why this replica must not sync from here ("" if it may): it holds more of this
        primary's own epoch than this primary does. Only a primary that came back with less
        than it wrote (its log lost or damaged) can see that; syncing would cut back records
        that may have been acknowledged. If the replica follows this primary's history, the
        primary also stops taking writes: the node with the data must take over."""
        led = self.epochs.leader_epoch
        if not hello.history or led == 0 or hello.offset <= self.offset:
            return ""
        theirs = epochs.clip(hello.history, hello.offset)
        if not theirs or theirs[-1].epoch != led:
            return ""
        why = (
            f"replica {hello.name} holds epoch {led} up to offset {hello.offset}, this "
            f"primary only up to {self.offset}: it lost records it may have acknowledged; "
            f"promote the replica (xstream promote --node {hello.address or hello.name}) and "
            "make this node its replica"
        )
        if hello.replid in (self.replid, self.replid2) and not self.behind:
            self.behind = why
            self._fail_ack_waiters()
            slog("primary_behind_replica", level="error", replica=hello.name,
                 replica_offset=hello.offset, offset=self.offset, epoch=led)  # fmt: skip
        return why

    # ------------------------------------------------------------ acks and WAIT

    def acks_wanted(self) -> int:
        """Writes (or WAITs) waiting for replica acks, or for room in the window."""
        return len(self._ack_waiters) + self.pacer.waiting

    def ask_acks(self) -> None:
        """Redis's GETACK: every sender pings its replica with ack_now, which acks at once
        instead of lazily."""
        self.getacks += 1
        self.new_data.fire()

    def _admits_now(self) -> bool:
        """`admit` would return at once: no replica to pace, none lags past the window, or
        this primary stops serving (the write is refused)."""
        return (
            not self.replicas
            or self.closed
            or self.epochs.deposed
            or self.pacer.blocking(self.replicas.values(), self.offset, self.lag_after) is None
        )

    async def admit(self) -> None:
        """Flow control (flow.py): return once every paced replica leaves room for a write
        at the current offset; a replica whose acks stall for the window's timeout is unpaced
        instead. Returns at once when this primary stops serving (the write is refused)."""
        pacer = self.pacer
        while not (self.closed or self.epochs.deposed):
            link = pacer.blocking(self.replicas.values(), self.offset, self.lag_after)
            if link is None:
                return
            left = pacer.stalled(link, self.offset)
            if left <= 0:
                continue
            pacer.waiting += 1
            self.ask_acks()
            try:
                await pacer.moved.wait(left)
            finally:
                pacer.waiting -= 1

    def acked(self, offset: int) -> int:
        return sum(1 for r in self.replicas.values() if r.ack_offset >= offset)

    async def _await_acks(self, offset: int, needed: int, timeout: float | None) -> int:
        got = self.acked(offset)
        if got >= needed:
            return got
        fut: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        entry = (offset, needed, fut)
        self._ack_waiters.append(entry)
        self.ask_acks()
        try:
            return await asyncio.wait_for(asyncio.shield(fut), timeout)
        except TimeoutError:
            return self.acked(offset)
        finally:
            if entry in self._ack_waiters:
                self._ack_waiters.remove(entry)

    async def wait_replicas(self, numreplicas: int, timeout_ms: int, offset: int) -> int:
        return await self._await_acks(
            offset, numreplicas, timeout_ms / 1000 if timeout_ms else None
        )

    def on_ack(self, link: ReplicaLink, offset: int, lag_ms: int) -> None:
        """Count an ack; PeerError (nothing changed) if it is beyond what the link was sent.
        Acks during a full sync are not counted (nothing is applied until it ends)."""
        peers.check_ack(offset, link.sent)
        if link.state == "sync":
            return
        moved = offset > link.ack_offset
        link.ack_offset = max(link.ack_offset, offset)
        self.pacer.on_ack(link, moved, self.lag_after)
        link.ack_time = time.monotonic()
        link.lag_ms_reported = lag_ms
        METRICS.replica_ack.labels(link.name).set(link.ack_offset)
        METRICS.replica_lag_bytes.labels(link.name).set(max(0, self.offset - link.ack_offset))
        METRICS.replica_lag_ms.labels(link.name).set(self.lag_ms(link))
        if not self._ack_waiters:
            return
        still = []
        for off, needed, fut in self._ack_waiters:
            got = self.acked(off)
            if got >= needed and not fut.done():
                fut.set_result(got)
            else:
                still.append((off, needed, fut))
        self._ack_waiters = still

    def lag_ms(self, link: ReplicaLink) -> int:
        return self.lag_after(link.ack_offset)

    def lag_after(self, offset: int) -> int:
        """Milliseconds since the first record past `offset` was committed (0: none is)."""
        t = self.commit_times.first_after(offset)
        return 0 if t is None else max(0, int((time.time() - t) * 1000))

    # ------------------------------------------------------------ replicas

    def attach(self, hello: peers.Hello) -> ReplicaLink:
        """A new link for a (checked, peers.check_hello) Hello. It replaces the link of the
        same name, if any: that replica reconnected, it is counted once, and its old call ends
        at its sender's next step (`serves`). Nothing counts as acked until the sync sets
        the starting point (the resume point, or 0 for a full sync) and acks follow."""
        link = ReplicaLink(hello.name, hello.address, ack_time=time.monotonic())
        self.replicas[hello.name] = link
        return link

    def serves(self, link: ReplicaLink) -> bool:
        """`link` is the current one of its replica (no newer call replaced it)."""
        return self.replicas.get(link.name) is link

    def detach(self, link: ReplicaLink) -> None:
        """The link's call ended: it still counts in R until forgotten (`members`)."""
        if link.paced:  # a departed replica never holds writes (flow.py)
            link.paced = False
            self.pacer.moved.fire()
        if self.serves(link) and link.connected:
            link.connected, link.left_at = False, time.monotonic()

    def resume_point(self, hello: peers.Hello) -> int | None:
        """Where a replica continues with a partial resync, or None for a full sync.

        PSYNC2's rule: its replid is this history (up to the offset) or the previous one (up to
        where it ended). Within that, its log is kept up to where its epoch history stops
        agreeing with ours (truncation_point); it cuts its log back to there, which it can do
        down to its snapshot (`log_start`). A replica without a history (older than epochs)
        is judged by its replid alone. The point must still be in the backlog."""
        if not hello.replid:
            return None
        if hello.replid == self.replid:
            point = min(hello.offset, self.offset)
        elif hello.replid == self.replid2:
            point = min(hello.offset, self.replid2_end)
        else:
            return None
        if hello.history:
            theirs = hello.history
            mine = self.epochs.history
            point = min(point, epochs.truncation_point(mine, self.offset, theirs, hello.offset))
        if point < hello.offset and point < hello.log_start:
            return None
        return point if self.holds(point) else None

    def holds(self, pos: int) -> bool:
        """The replication stream from `pos` can be sent: it is in the backlog, or on disk."""
        return self.backlog.holds(pos) or self.store.log_holds(pos)

    async def stream_from(self, pos: int, max_bytes: int, end: int) -> bytes | None:
        """The replication stream from `pos` (up to about `max_bytes`, none at or past `end`):
        from the backlog, else from the log on disk (read by a worker thread, up to where
        the backlog starts); None when neither holds `pos` any more."""
        backlog = self.backlog
        if backlog.holds(pos):
            return backlog.read(pos, max_bytes, end)
        if not self.store.log_holds(pos):
            return None
        stop = min(end, backlog.start)
        if pos >= stop:
            return b""
        loop = asyncio.get_running_loop()
        data = await loop.run_in_executor(None, self.store.read_log, pos, max_bytes, stop)
        return data or None

    def sync_snapshot(self) -> tuple[int, list[bytes], bytes]:
        """The state now, at the current offset: the snapshot's body as its parts
        (snapshot.captured: full nodes by reference, no copy of the data set; joined into
        ~1 MiB pieces and checksummed as they are sent, snapshot.pieces and sealed), and the
        users as one record (users.encode)."""
        return self.offset, snapshot.captured(self.engine), users.encode(self.acl.users)

    # ------------------------------------------------------------ snapshots

    def start_snapshot(self) -> asyncio.Task[tuple[int, int]] | None:
        if self._snapshotting is not None and not self._snapshotting.done():
            return None
        self._snapshotting = asyncio.get_running_loop().create_task(self.snapshot_now())
        self._snapshotting.add_done_callback(log_snapshot_failure)
        return self._snapshotting

    async def snapshot_now(self) -> tuple[int, int]:
        """Serialize now (consistent at this offset), write in a worker thread, truncate the log."""
        return await self.write_snapshot()

    # ------------------------------------------------------------ info

    def info(self) -> dict[str, Any]:
        reps = []
        self.members()  # forgotten replicas are not shown
        for r in self.replicas.values():
            host, port = peers.split_address(r.address) or ("", 0)  # never raises on peer data
            reps.append(
                {
                    "name": r.name,
                    "address": r.address,
                    "host": host,
                    "port": port,
                    "ack_offset": r.ack_offset,
                    "lag_offset": max(0, self.offset - r.ack_offset),
                    "lag_ms": self.lag_ms(r),
                    "state": r.state if r.connected else "disconnected",
                }
            )
        return {
            "role": "primary",
            "name": self.name,
            "replid": self.replid,
            "replid2": self.replid2,
            "replid2_end": self.replid2_end,
            "epoch": self.epochs.epoch,
            "leader_epoch": self.epochs.leader_epoch,
            "deposed": self.epochs.deposed or self.closed,
            "history": self.epochs.history,
            "offset": self.offset,
            "replicas": reps,
            "keys": self.engine.key_count(),
            "db_keys": [len(keyspace) for keyspace in self.engine.dbs],
            "db_expires": [len(keyspace.expires) for keyspace in self.engine.dbs],
            "full_syncs": self.full_syncs,
            "partial_syncs": self.partial_syncs,
            "backlog_start": self.backlog.start,
            "backlog_size": self.backlog.capacity,
            "expired_keys": self.engine.expired_keys,
            "keyspace_hits": self.engine.clock.hits,
            "keyspace_misses": self.engine.clock.misses,
            "expired_keys_active": self.engine.expired_keys_active,
            "snapshot_offset": self.store.snapshot_offset,
            "fsync": self.store.fsync,
            "blocked_clients": self.blocked_clients,
            "disk_fault": self.store.fault,
            "disk_free_bytes": self.store.free_bytes,
            "behind": self.behind,
        }


def _usec(t0: float) -> int:
    return int((time.perf_counter() - t0) * 1_000_000)


def misconf(e: DiskFault) -> StreamError:
    """Redis's reply while its AOF cannot be written: the write was not applied."""
    return MisconfError(f"Errors writing to the AOF file: {e}")
