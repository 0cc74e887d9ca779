"""The replica node: follows a primary's replication stream, persists it, serves reads.

The link, one Replication.Sync stream at a time (reconnecting with backoff):

    send Hello(replid, offset, epoch, history, log_start)
                                          offset = end of the last whole record applied
    <- Continue                           partial resync: Records follow from its offset;
                                          below ours: cut our log back to it first
    <- FullSync, SnapshotChunk..., End    the snapshot replaces the data set at its offset
    <- Records(start, data) ...           bytes appended to the own log, whole records
                                          applied in order, blocked readers woken
    -> Ack(offset) at once when the primary asks (ack_now: a write or WAIT is waiting, as
       Redis's GETACK), else every 100 ms while applying and every second when idle; always
       once what it covers is written to the own log (fsynced first with --fsync always)

Invariants: `received` (bytes of the stream held, written to the own log) >= `offset` (whole
records applied); the difference is a partial record kept in `pending`. Before a new link the
log is cut back to `offset`, so the own log is always a prefix of the primary's stream. Acks
start only once a sync is established, so no ack from a previous history is ever counted.
A record that fails to apply means the replica diverged (a bug): it forgets its replid and
takes a full sync.

Epochs: Continue and FullSync carry the primary's epoch and history, which the replica adopts
(persisted before it acts on them); a message from a primary whose epoch is below the
replica's is refused: the link is dropped (StalePrimary) and retried, logged, until the
replica is re-pointed. Cutting back (a deposed primary rejoining, or a sibling that received
more than the promoted replica): the log past the Continue's offset is set aside
(Store.cut_back) and the engine is rebuilt from the store, snapshot plus log; if the snapshot
is past that point the replica cannot cut back and takes a full sync instead.

The backlog holds the whole records applied, so a promoted replica serves partial resyncs.

Damage and disk faults: a replica started on damaged data keeps the good prefix (the rest set
aside, `damage` says what) and takes what it lacks from its primary; until it has synced once
it is no candidate in an election. A write or fsync of its own log that fails stops the link
and its acks (nothing it has not logged is acknowledged); once the disk watcher has snapshotted
the state into a fresh segment (`resume_log`) it syncs on from its offset. A link that cannot
write its ids (replid.json, epoch.json: a full disk) is logged and retried each second.

Reads carrying a client's session offset past `offset` wait for the records to be applied
(up to CATCH_UP_WAIT), then fail with TRYAGAIN: a client's reads never go backwards.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from typing import Any

from xstream.engine import Engine, SnapshotError, StreamError, snapshot
from xstream.engine.context import Signaled
from xstream.engine.errors import CoreError
from xstream.engine.reply import Reply
from xstream.engine.snapload import Loader
from xstream.node import collector, epochs, records, replids, users
from xstream.node.backlog import Backlog
from xstream.node.base import Argv, Node, Signal, log_snapshot_failure
from xstream.node.concern import WriteConcern
from xstream.node.damage import Damage
from xstream.node.handshake import Hello
from xstream.node.logs import slog
from xstream.node.metrics import METRICS
from xstream.node.refusals import ReadOnlyError, TryAgainError
from xstream.node.stats import STATS
from xstream.node.store import DiskFault, Store

from .fullsync import Receiving

ACK_EVERY = 0.1  # acks without a GETACK (ack_now) are sent at most this often
CATCH_UP_WAIT = 1.0  # seconds a read behind its client's session offset waits, then TRYAGAIN


class Diverged(CoreError):  # noqa: N818
    """The stream does not fit this replica's state: resync from scratch."""


class StalePrimary(CoreError):  # noqa: N818
    """The primary's epoch is below ours: it was deposed; do not follow it."""


class Replica(Node):
    role = "replica"

    def __init__(
        self,
        engine: Engine,
        store: Store,
        offset: int,
        name: str,
        address: str,
        primary_address: str,
        snapshot_bytes: int = 64 << 20,
        backlog: Backlog | None = None,
    ) -> None:
        super().__init__(engine, name)
        self.store = store
        self.backlog = backlog or Backlog(1 << 20, offset)  # ends at `offset`, whole records
        self.epochs = replids.load_epochs(store.dir)
        self.address = address
        self.primary_address = primary_address
        self.replid: str = replids.load(store.dir).get("replid", "")
        self._offset = offset
        self.received = store.written
        self.pending = b""
        self.primary_offset = offset
        self.link = "down"
        self.caught_up_at = time.time()
        self.full_syncs = 0
        self.partial_syncs = 0
        self.snapshot_bytes = snapshot_bytes
        self.lags: deque[float] = deque(maxlen=10_000)
        self._ack_now = Signal()
        self._ack_asked = False  # the primary asked for an ack since the last one went
        self._applied = Signal()  # fired whenever `offset` moves: reads waiting in `reach`
        self._acking = False
        self._last_ack = 0.0
        self._acked = -1  # the offset of the last ack sent on this link
        self._snapshotting: asyncio.Task[Any] | None = None
        self.linked = False  # run_link is following the primary
        self._link_settled = False  # since linking(): the state set aside (hello_sent)
        self.damage: Damage | None = None  # set aside at start; cleared once synced again
        self.receiving: Receiving | None = None  # a full sync's snapshot, as it arrives
        store.on_fault = self._on_disk_fault

    @property
    def offset(self) -> int:
        return self._offset

    async def write(
        self, argv: Argv, concern: WriteConcern | None, db: int = 0
    ) -> tuple[Reply, int]:
        raise self.readonly()

    def check_writes(self) -> None:
        raise self.readonly()

    def change_users(self, effects: list[Argv]) -> int:
        raise self.readonly()  # users change on the primary; records bring them here

    async def reach(self, offset: int) -> None:
        """Wait (up to CATCH_UP_WAIT) until records up to `offset` are applied; else TRYAGAIN,
        and the client asks another node."""
        deadline = time.monotonic() + CATCH_UP_WAIT
        while self._offset < offset:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TryAgainError(
                    f"replica at offset {self._offset} has not applied the client's offset "
                    f"{offset} yet"
                )
            await self._applied.wait(left)

    async def ingest_batch(
        self, key: bytes, elements: list[bytes], counts: list[int], db: int = 0
    ) -> list[bytes]:
        raise self.readonly()

    async def settle(self, offset: int, concern: WriteConcern | None) -> None:
        """Nothing to wait for: a replica takes no writes."""

    def readonly(self) -> StreamError:
        if not self.primary_address:  # a node under election that follows nobody yet
            return ReadOnlyError(
                "You can't write against a read only replica. No primary is elected yet."
            )
        return ReadOnlyError(
            f"You can't write against a read only replica. The primary is {self.primary_address}."
        )

    def lag_ms(self) -> int:
        if self._offset >= self.primary_offset:
            self.caught_up_at = time.time()
            return 0
        return int((time.time() - self.caught_up_at) * 1000)

    # ------------------------------------------------------------ the link (link.py)

    def linking(self) -> None:
        """A link follows the primary now (`stop_link` ends it); the state it starts from is
        set aside from the garbage collector (collector.py) once its first Hello is sent."""
        self.linked = True
        self._link_settled = False

    def hello_sent(self) -> None:
        """The link's Hello is on its way: the first time since `linking`, the state is set
        aside from the garbage collector now, while the primary answers (a full sync's
        snapshot is built there first), not before the Hello leaves (a walk of every object
        the process holds: ~20 ms after start-up on this 2-core machine)."""
        if not self._link_settled:
            self._link_settled = True
            collector.settle()

    def link_stopped(self, why: str) -> None:
        """The link's stream ended (`why` is logged by the link); acks stop until the next,
        and a full sync it broke off is forgotten."""
        self.link = "down"
        self._acking = False
        self._drop_receiving()

    def stop_link(self) -> None:
        """No more messages are applied; the link returns at its next step."""
        self.linked = False
        self.link = "down"
        self._acking = False

    def to_record_boundary(self) -> None:
        """Drop a partial record the last link left (the log ends at `offset`)."""
        if self.received != self._offset:
            self.store.truncate_to(self._offset)
            self.received = self._offset
            self.pending = b""

    def diverged(self) -> None:
        """The stream did not fit (Diverged): forget the replid, take a full sync next."""
        self.replid = ""
        replids.forget(self.store.dir)

    def hello(self) -> Hello:
        """What this replica tells a primary first. A partial record left by the last link
        is dropped first: the log ends at `offset`, a record boundary."""
        self.to_record_boundary()
        self._acked = -1
        return Hello(
            name=self.name,
            address=self.address,
            replid=self.replid,
            offset=self._offset,
            log_start=self.store.snapshot_offset,
            epoch=self.epochs.epoch,
            history=self.epochs.history,
        )

    async def next_ack(self) -> tuple[int, int] | None:
        """The next ack to send, (offset, lag_ms), once one is due: at once when the primary
        asks (ack_now), else at most every ACK_EVERY while applying and once a second when
        idle; always once what it covers is durable here. None: the own log failed (no ack
        for what is not durable; the link stops)."""
        while True:
            if not self._ack_asked:  # asked while the last ack was going: answered at once
                await self._ack_now.wait(ACK_EVERY)
            self._ack_asked = False
            if not self._acking:
                continue
            offset = self._offset
            if offset == self._acked and self.lag_ms() == 0 and not self._ack_due():
                continue  # nothing new: the idle ack goes once a second
            try:
                await self.store.durable(self.received)  # written (fsync=always: fsynced) first
            except DiskFault:
                return None
            self._last_ack = time.monotonic()
            self._acked = offset
            return offset, self.lag_ms()

    def on_ping(self, epoch: int, primary_offset: int, ack_now: bool) -> None:
        self.check_epoch(epoch)
        self.primary_offset = max(self.primary_offset, primary_offset)
        if ack_now:
            self._ask_ack()

    def on_full_sync(
        self,
        replid: str,
        offset: int,
        epoch: int,
        history: epochs.History,
        users_record: bytes,
        size: int,
    ) -> None:
        """A full sync starts: the snapshot's pieces follow (`on_snapshot_piece`), each
        loaded and written as it comes, then `on_snapshot`. The primary's users
        (users.encode; b"" from an older primary: ours stay) go into the snapshot's meta."""
        self.check_epoch(epoch)
        try:
            theirs = users.decode(users_record) if users_record else None
        except records.CorruptRecordError as e:
            raise Diverged(f"the full sync's users do not apply: {e}") from e
        meta = users.meta(self.acl) if theirs is None else users.meta_of(theirs)
        loader = Loader(len(self.engine.dbs), crc_given=True)  # summed by the file's writer
        file = self.store.receive_snapshot(offset, {"replid": replid, **meta})
        self.link = "sync"
        slog("full_sync_start", offset=offset, bytes=size)
        self._drop_receiving()
        self.receiving = Receiving(replid, offset, epoch, history, theirs, loader, file)

    def on_snapshot_piece(self, data: bytes | memoryview) -> None:
        """One piece of the snapshot: written and parsed (Diverged if it is damaged)."""
        sync = self.receiving
        if sync is None:
            raise Diverged("a snapshot piece without a full sync")
        try:
            sync.feed(data)
        except SnapshotError as e:
            self._drop_receiving()
            raise Diverged(f"the full sync's snapshot does not load: {e}") from e
        if sync.pieces % 8 == 0:
            slog("full_sync_progress", received=sync.loader.size)

    def _drop_receiving(self) -> None:
        """Forget a full sync under way (its temporary file removed)."""
        if self.receiving is not None:
            self.receiving.discard()
            self.receiving = None

    def _ask_ack(self) -> None:
        self._ack_asked = True
        self._ack_now.fire()

    def _ack_due(self) -> bool:
        return time.monotonic() - self._last_ack >= 1.0

    def check_epoch(self, epoch: int) -> None:
        if not epochs.accepts_primary(self.epochs.epoch, epoch):
            raise StalePrimary(f"the primary's epoch {epoch} is below ours, {self.epochs.epoch}")

    def _adopt(self, epoch: int, history: epochs.History) -> None:
        """Take the primary's epoch and history, persisted first (also when only the disk is
        behind: an epoch adopted while the disk was full, Host.replicaof)."""
        state = self.epochs.adopted(epoch, history)
        if state != self.epochs or replids.load_epochs(self.store.dir) != state:
            replids.save_epochs(self.store.dir, state)
            self.epochs = state

    async def on_continue(
        self, replid: str, offset: int, epoch: int, history: epochs.History
    ) -> None:
        """A partial resync from `offset` (cutting our log back to it first if we hold more)."""
        self.check_epoch(epoch)
        if offset > self._offset:
            raise Diverged(f"primary continues at {offset}, replica is at {self._offset}")
        if offset < self._offset:
            await self._cut_back(offset)
        self._adopt(epoch, history)
        if replid != self.replid:  # persisted first: a retry after an OSError saves again
            replids.save(self.store.dir, {"replid": replid})
            self.replid = replid
        self.partial_syncs += 1
        self._healed()
        self.link = "up"
        self._acking = True
        self._ask_ack()
        slog("partial_sync", replid=replid, offset=offset)

    async def _cut_back(self, offset: int) -> None:
        """Drop our log past `offset` (the primary never had it) and rebuild the state."""
        if self._snapshotting is not None and not self._snapshotting.done():
            await asyncio.wait([self._snapshotting])
        if offset < self.store.snapshot_offset:
            raise Diverged(
                f"cannot cut back to {offset}: the snapshot is at {self.store.snapshot_offset}"
            )
        t0, was = time.monotonic(), self._offset
        self.store.cut_back(offset)
        replay = users.Replay(Engine(self.engine.settings.base))
        rec = self.store.recover(replay.engine, replay.record, set_aside=True,
                                 on_meta=replay.snapshot)  # fmt: skip
        self.engine.adopt(replay.engine)
        users.rebuilt(self.acl, replay.users)
        self._offset = self.received = self.primary_offset = rec.offset
        self.pending = b""
        self.backlog = Backlog.holding(self.backlog.capacity, rec.offset, rec.tail)
        self.wake_all()
        self._applied.fire()
        slog("replica_cut_back", level="warning", offset=rec.offset, cut_bytes=was - rec.offset,
             load_seconds=round(time.monotonic() - t0, 3))  # fmt: skip
        if rec.offset != offset:
            raise Diverged(f"cut back to {offset} but the log recovered to {rec.offset}")

    def _healed(self) -> None:
        if self.damage is not None:
            slog("damage_healed", offset=self._offset, was=self.damage.describe())
            self.damage = None

    def on_snapshot(self) -> None:
        """The snapshot's end: once its checksum matched it replaces the data set at its
        offset (its file made durable first), and the primary's users replace ours."""
        sync = self.receiving
        if sync is None:
            raise Diverged("a snapshot end without a full sync")
        offset = sync.offset
        fresh = Engine(self.engine.settings.base)
        try:
            crc = sync.file.summed()  # the CRC-32 its writer thread summed
        except OSError:  # a piece failed to go to disk (the file removed): the link syncs again
            self._drop_receiving()
            raise
        try:
            snapshot.restore_from(fresh, sync.loader, crc)
        except SnapshotError as e:
            self._drop_receiving()
            raise Diverged(f"the full sync's snapshot does not load: {e}") from e
        self.receiving = None
        t0 = time.monotonic()
        replids.forget(self.store.dir)
        self.store.install_snapshot(sync.file.close())
        self._adopt(sync.epoch, sync.history)
        self.backlog = Backlog(self.backlog.capacity, offset)
        replids.save(self.store.dir, {"replid": sync.replid})
        self.replid = sync.replid
        dropped = self.engine.key_count() > 0  # the replaced data set: anything to collect?
        self.engine.adopt(fresh)
        if sync.users is not None:
            users.install(self.acl, sync.users)
        self._offset = self.received = self.primary_offset = offset
        self.pending = b""
        self.full_syncs += 1
        self._healed()
        METRICS.full_syncs.inc()
        self.link = "up"
        self._acking = True
        self._ask_ack()
        self.wake_all()
        self._applied.fire()
        collector.settle(dropped)  # the snapshot's state aside, the replaced one collected
        slog(
            "full_sync_done",
            offset=offset,
            bytes=sync.loader.size,
            keys=self.engine.key_count(),
            seconds=round(time.monotonic() - sync.started, 3),
            install_seconds=round(time.monotonic() - t0, 3),
        )

    def on_records(
        self, start: int, data: bytes, primary_offset: int, time_ms: int, ack_now: bool
    ) -> None:
        """A run of the stream at `start`: logged, its whole records applied in order."""
        if start != self.received:
            raise Diverged(f"records start at {start}, replica holds {self.received}")
        self.store.append(data)
        self.received += len(data)
        buf = self.pending + data if self.pending else data
        pos = 0
        signaled: Signaled = []
        touched: Signaled = []
        payloads: list[bytes] = []
        _, corrupt = records.split(buf, payloads)
        try:
            for payload in payloads:
                result = self.apply_payload(payload)
                signaled += result.signaled
                touched += result.touched
                pos += records.HEADER.size + len(payload)
                STATS.changed()
            if corrupt is not None:
                raise corrupt
        except (records.CorruptRecordError, StreamError) as e:
            raise Diverged(f"record at {self._offset + pos} does not apply: {e}") from e
        finally:
            if pos:
                self.backlog.append(data if pos == len(data) and not self.pending else buf[:pos])
            self._offset += pos
            self.pending = buf[pos:]
        self.primary_offset = max(self.primary_offset, primary_offset, self._offset)
        if time_ms:
            lag = max(0.0, time.time() - time_ms / 1000)
            self.lags.append(lag)
            METRICS.apply_lag.observe(lag)
        if pos:
            self._applied.fire()
        if signaled:
            self.wake(signaled)
        if touched:
            self.watches.touch(touched)
        if ack_now:
            self._ask_ack()
        if self.store.segment_bytes > self.snapshot_bytes and not self.pending:
            self.start_snapshot()

    # ------------------------------------------------------------ disk faults

    def _on_disk_fault(self, end: int | None) -> None:
        """The own log failed: stop acking. Nothing is rolled back: a replica's state is the
        primary's stream (records are applied only once written), only not all of it durable
        here; `resume_log` snapshots it once the disk works again."""
        self._acking = False
        self._ack_now.fire()

    async def resume_log(self) -> None:
        """The disk works again: drop a partial record, snapshot the state at `offset` into a
        fresh segment; the link then syncs on from there."""
        await self.store.resume(self.engine, self.snapshot_meta(), self._offset)
        self.received, self.pending = self._offset, b""

    # ------------------------------------------------------------ snapshots

    def start_snapshot(self) -> None:
        if self._snapshotting is None or self._snapshotting.done():
            self._snapshotting = asyncio.get_running_loop().create_task(self.snapshot_now())
            self._snapshotting.add_done_callback(log_snapshot_failure)

    async def snapshot_now(self) -> tuple[int, int]:
        if self.pending:  # a snapshot sits on a record boundary
            return self.store.snapshot_offset, 0
        return await self.write_snapshot()

    # ------------------------------------------------------------ info

    def info(self) -> dict[str, Any]:
        lags = sorted(self.lags)

        def pct(p: float) -> float:
            return round(lags[min(len(lags) - 1, int(p * len(lags)))] * 1000, 3) if lags else 0.0

        return {
            "role": "replica",
            "name": self.name,
            "replid": self.replid,
            "epoch": self.epochs.epoch,
            "leader_epoch": self.epochs.leader_epoch,
            "history": self.epochs.history,
            "offset": self._offset,
            "primary": self.primary_address,
            "link": self.link,
            "lag_offset": max(0, self.primary_offset - self._offset),
            "lag_ms": self.lag_ms(),
            "keys": self.engine.key_count(),
            "db_keys": [len(keyspace) for keyspace in self.engine.dbs],
            "db_expires": [len(keyspace.expires) for keyspace in self.engine.dbs],
            "full_syncs": self.full_syncs,
            "partial_syncs": self.partial_syncs,
            "snapshot_offset": self.store.snapshot_offset,
            "fsync": self.store.fsync,
            "keyspace_hits": self.engine.clock.hits,
            "keyspace_misses": self.engine.clock.misses,
            "apply_lag_p50_ms": pct(0.5),
            "apply_lag_p99_ms": pct(0.99),
            "blocked_clients": self.blocked_clients,
            "replicas": [],
            "disk_fault": self.store.fault,
            "disk_free_bytes": self.store.free_bytes,
            "damaged": self.damage.describe() if self.damage else "",
        }
