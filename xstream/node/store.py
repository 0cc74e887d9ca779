"""A node's data directory: snapshots plus append-only log segments, and recovery from them.

    data-dir/
      snapshot-<offset>.xsnap   META magic | u32 meta length | meta JSON | engine snapshot
      aof-<base>.xlog           log records (records.py) from replication offset <base> on
      aof-<base>.xlog.cut-<n>   bytes cut from a torn tail at position n (kept)
      aof-<base>.xlog.diverged-<n>  bytes cut back from position n after a failover: a
                                deposed primary's writes that the new primary never had
      *.corrupt, *.corrupt-<n>  damaged data a replica set aside (from position n) before
                                taking what it lacks from its primary (damage.py)

Invariants: the newest snapshot at offset S plus the segments with base >= S, replayed in
base order, rebuild the state at the log's end; each segment's base is the previous one's end.
A snapshot is written to a temporary file, fsynced, renamed and its directory fsynced before
older snapshots and segments are deleted, so a crash at any point leaves a recoverable pair.
Offsets are zero-padded to 20 digits so names sort in offset order. Recovery cuts only a torn
tail; any other damage stops it (CorruptLog) before anything on disk changes, unless the
caller sets it aside (damage.py says which is which).

Writing: `append` writes whole records to the file at once (the log before anything else: a
record is shipped to replicas and answered only once it is in the file). A failed write or
fsync is a *fault*: the bytes of the failed write are cut back to the record boundary, the
store refuses every append (DiskFault) until `resume` has written a fresh snapshot, and
`on_fault(end)` tells the role to bring its state back to `end`, what the log holds for
sure (PostgreSQL's fsync lesson: a failed fsync is never retried and trusted; the snapshot
at resume rewrites everything not known durable). Free space is read once a second
(`check_space`, counted down on each append in between): below `reserve_bytes` writes are
refused before they are applied.

fsync policy (Redis's appendfsync): `always` fsyncs before a write is acknowledged (group
commit: one fsync covers every write appended before it started); `everysec` fsyncs once a
second; `no` leaves it to the OS.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import os
import queue
import struct
import threading
import time
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path
from typing import Any

from xstream.engine import Engine, SnapshotError, snapshot
from xstream.engine.errors import CoreError
from xstream.engine.snapload import CRC_SIZE, Loader
from xstream.node import records
from xstream.node.damage import CorruptLog, Damage, stop_reason, torn_tail
from xstream.node.logs import slog
from xstream.node.metrics import METRICS

META_MAGIC = b"XSMETA1\n"
_U32 = struct.Struct("<I")
FSYNC_POLICIES = ("always", "everysec", "no")
DEFAULT_RESERVE = 64 << 20  # free bytes kept on the data directory's file system
_READ = 1 << 20  # a snapshot file is read and parsed this many bytes at a time


class DiskFault(CoreError):  # noqa: N818 (a state of the store)
    """The log cannot take writes: a write or fsync failed (or free space is below the
    reserve). The text is the cause, as Redis's MISCONF line gives it."""


@dataclass
class Recovery:
    offset: int = 0  # the log's end: the replication offset the state is at
    meta: dict[str, Any] = field(default_factory=dict)  # the newest snapshot's meta
    snapshot_offset: int = 0
    records: int = 0  # records replayed from segments
    cut_bytes: int = 0  # bytes cut from a torn tail
    tail: list[bytes] = field(default_factory=list)  # segment bytes after the snapshot
    damage: Damage | None = None  # damage set aside (set_aside=True); the state is before it


@dataclass
class SnapshotFile:
    """A snapshot in its temporary file, not yet durable (Store.finish_snapshot): written,
    or its header written and `body` still to write (Store.begin_snapshot's capture)."""

    offset: int  # the replication offset it is the state at
    tmp: Path  # snapshot-<offset>.xsnap.tmp<n>; renamed to snapshot-<offset>.xsnap
    size: int  # bytes, once written
    body: list[bytes] | None = field(default=None, repr=False)  # parts (captured) to write


class SnapshotWriter:
    """A snapshot file being written piece by piece (Store.receive_snapshot), by a thread of
    its own: a full sync parses the next piece while this one goes to the disk, and the thread
    flushes the file every FLUSH_BYTES (fdatasync), so the fsync that makes it durable
    (install_snapshot) finds little left to write instead of the whole file.

        write(piece) -> [queue of up to QUEUED pieces] -> thread: os.write ... fdatasync
        close()      -> the queue drained, the thread joined; the file is durable only
                        once finish_snapshot fsynced it (the flushes are a head start)

    A write or flush that fails stops the thread: the next `write`, `summed` or `close` raises
    its OSError (the caller discards the file). A full queue makes `write` wait for the
    thread, so pieces not yet written are bounded, not the snapshot.

    The thread also sums the CRC-32 of what it writes but the last CRC_TAIL bytes (a version
    5+ snapshot's own checksum, whatever piece they came in): the loader then has it without
    summing it on the thread that parses (`summed`, then Loader.finish's `crc`)."""

    QUEUED = 8  # pieces waiting for the thread (a full sync's are ~1 MiB each)
    FLUSH_BYTES = 8 << 20  # written between two fdatasyncs
    CRC_TAIL = CRC_SIZE  # the bytes left out of the CRC: the snapshot's own CRC-32

    def __init__(self, file: SnapshotFile, fd: int) -> None:
        self.file = file  # its offset, temporary path and bytes so far
        self.fd = fd  # open for writing; -1 once closed
        self._pieces: queue.Queue[bytes | memoryview | None] = queue.Queue(self.QUEUED)
        self._error: OSError | None = None  # the thread's failure, raised to the caller
        self._crc = 0  # the thread's CRC-32 of what it wrote but `_held` ...
        self._held = b""  # ... the last CRC_TAIL bytes written (fewer at first)
        self._thread = threading.Thread(target=self._run, name="snapshot-writer", daemon=True)
        self._thread.start()

    def write(self, data: bytes | memoryview) -> None:
        """Queue a piece for the thread. OSError (an earlier piece failed): discard."""
        if self._error is not None:
            raise self._error
        self._pieces.put(data)
        self.file.size += len(data)

    def summed(self) -> int:
        """Every piece written (the thread done); the CRC-32 of them all but the last
        CRC_TAIL bytes. OSError if a piece failed (the file is removed then)."""
        self._stop()
        if self._error is not None:
            self.discard()
            raise self._error
        return self._crc

    def close(self) -> SnapshotFile:
        """Every piece written, the file closed; OSError if a piece failed (the file is
        removed then, as `discard` does)."""
        self.summed()
        os.close(self.fd)
        self.fd = -1
        return self.file

    def discard(self) -> None:
        """Close and remove the temporary file (a sync that failed or broke off)."""
        self._stop()
        if self.fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = -1
        self.file.tmp.unlink(missing_ok=True)

    def _stop(self) -> None:
        if self._thread.is_alive():
            self._pieces.put(None)
            self._thread.join()

    def _run(self) -> None:
        unflushed = 0
        while (data := self._pieces.get()) is not None:
            if self._error is not None:
                continue  # failed: the rest is dropped until close or discard
            try:
                _write_all(self.fd, data)
                self._sum(data)
                unflushed += len(data)
                if unflushed >= self.FLUSH_BYTES:
                    os.fdatasync(self.fd)
                    unflushed = 0
            except OSError as e:
                self._error = e

    def _sum(self, data: bytes | memoryview) -> None:
        """Add what `data` pushes out of the held tail to the CRC (zlib releases the GIL for
        a long buffer: the parsing thread runs meanwhile)."""
        if len(data) >= self.CRC_TAIL:
            self._crc = zlib.crc32(self._held, self._crc)
            self._crc = zlib.crc32(memoryview(data)[: -self.CRC_TAIL], self._crc)
            self._held = bytes(data[-self.CRC_TAIL :])
        else:
            held = self._held + bytes(data)
            self._crc = zlib.crc32(held[: -self.CRC_TAIL], self._crc)
            self._held = held[-self.CRC_TAIL :]


def _name(prefix: str, offset: int, suffix: str) -> str:
    return f"{prefix}-{offset:020d}{suffix}"


def _offset_of(path: Path) -> int:
    return int(path.name.split("-", 1)[1].split(".", 1)[0])


def _write_all(fd: int, data: bytes | memoryview) -> None:
    n = os.write(fd, data)
    if n != len(data):  # nearly never: a short write only when the disk is (nearly) full
        _write_rest(fd, data, n)


def _write_rest(fd: int, data: bytes | memoryview, n: int) -> None:
    """What a first write of `n` bytes left of `data`."""
    view = memoryview(data)[n:]
    while view:
        n = os.write(fd, view)
        view = view[n:]


class Store:
    def __init__(
        self, directory: Path, fsync: str = "everysec", reserve_bytes: int = DEFAULT_RESERVE
    ) -> None:
        if fsync not in FSYNC_POLICIES:
            raise ValueError(f"fsync must be one of {', '.join(FSYNC_POLICIES)}")
        self.dir = directory
        self.dir.mkdir(parents=True, exist_ok=True)
        self.fsync = fsync
        self.base = 0  # base offset of the open segment
        self.written = 0  # replication offset after the last byte written
        self.synced = 0  # replication offset known durable
        self.segment_bytes = 0  # bytes in the open segment
        self.snapshot_offset = 0
        self.reserve_bytes = reserve_bytes  # below this much free space, writes are refused
        self.free_bytes = 1 << 62  # free space as last read, counted down by appends
        self.fault = ""  # why the log refuses writes ("" = it takes them)
        self.on_fault: Callable[[int | None], None] | None = None  # the role's rollback
        self._fd = -1
        self._waiters: list[tuple[int, asyncio.Future[None]]] = []
        self._flusher: asyncio.Task[None] | None = None
        self._fsync_failed = False  # since the last resume: no fsync is trusted again
        self._dry_run = False  # recover() only reports
        self._space_level = 0  # 0 free, 1 below twice the reserve, 2 below the reserve
        self._temporaries = 0  # snapshot temporary files named so far (each its own name)

    # ------------------------------------------------------------ recovery

    def snapshots(self) -> list[Path]:
        return sorted(self.dir.glob("snapshot-*.xsnap"))

    def segments(self) -> list[Path]:
        return sorted(self.dir.glob("aof-*.xlog"))

    def recover(
        self,
        engine: Engine,
        apply: Callable[[list[list[bytes]]], object],
        set_aside: bool = False,
        dry_run: bool = False,
        on_meta: Callable[[dict[str, Any]], None] | None = None,
    ) -> Recovery:
        """Load the newest snapshot into `engine` (its meta to `on_meta`, before anything is
        replayed: the users, users.Replay), replay the segments after it through `apply` (a
        record's effects at a time: Engine.apply_record, users.Replay.record), cut a torn
        tail, and open the last segment for appending.

        Damage (damage.py) raises CorruptLog with nothing on disk changed, or with `set_aside`
        is moved aside: the state is the data before it and `Recovery.damage` says what.
        `dry_run` changes nothing on disk and opens nothing: it only reports."""
        self._dry_run = dry_run
        rec = Recovery()
        snaps = self.snapshots()
        if snaps and not self._recover_snapshot(engine, snaps[-1], rec, set_aside, on_meta):
            return self._opened(rec)
        segments = [p for p in self.segments() if _offset_of(p) >= rec.offset]
        for i, path in enumerate(segments):
            base = _offset_of(path)
            if base != rec.offset:
                why = f"gap: this segment starts at offset {base}, the log before it ends"
                self._damaged(Damage(path.name, 0, rec.offset, f"{why} at {rec.offset}"),
                              segments[i:], rec, set_aside)  # fmt: skip
                break
            data = path.read_bytes()
            good, n, error = self._replay(data, apply)
            rec.records += n
            rec.offset += good
            rec.tail.append(data[:good])
            if good == len(data):
                continue
            if i == len(segments) - 1 and torn_tail(data, good, error):
                self._cut(path, data, good, stop_reason(data, good, error))
                rec.cut_bytes += len(data) - good
            else:
                damage = Damage(path.name, good, rec.offset, stop_reason(data, good, error))
                self._damaged(damage, segments[i + 1 :], rec, set_aside, (path, data))
            break
        return self._opened(rec)

    def _recover_snapshot(
        self,
        engine: Engine,
        path: Path,
        rec: Recovery,
        set_aside: bool,
        on_meta: Callable[[dict[str, Any]], None] | None,
    ) -> bool:
        """Load the newest snapshot; False if it was damaged and set aside (state empty)."""
        try:
            rec.meta = self._load_snapshot(engine, path)
            if on_meta is not None:
                on_meta(rec.meta)
        except (SnapshotError, ValueError, OSError, struct.error) as e:
            damage = Damage(path.name, 0, _offset_of(path), f"unreadable snapshot: {e}")
            later = [p for p in self.segments() if _offset_of(p) >= _offset_of(path)]
            self._damaged(damage, [path, *later], rec, set_aside)
            rec.damage = Damage(path.name, 0, 0, damage.reason)  # nothing before it is held
            return False
        rec.snapshot_offset = rec.offset = _offset_of(path)
        return True

    def _damaged(
        self,
        damage: Damage,
        later: list[Path],
        rec: Recovery,
        set_aside: bool,
        cut: tuple[Path, bytes] | None = None,
    ) -> None:
        if self._dry_run:
            rec.damage = damage
            return
        if not set_aside:
            slog("data_damaged", level="error", file=damage.file, at=damage.at,
                 offset=damage.offset, reason=damage.reason)  # fmt: skip
            raise CorruptLog(self.dir, damage)
        if cut is not None:
            path, data = cut
            path.with_name(f"{path.name}.corrupt-{damage.at}").write_bytes(data[damage.at :])
            self._truncate_file(path, damage.at)
        for p in later:
            p.rename(p.with_name(p.name + ".corrupt"))
        rec.damage = damage
        slog("damage_set_aside", level="error", file=damage.file, at=damage.at,
             offset=damage.offset, reason=damage.reason, moved=len(later))  # fmt: skip

    def _opened(self, rec: Recovery) -> Recovery:
        if self._dry_run:
            return rec
        for tmp in self.dir.glob("snapshot-*.tmp*"):  # a snapshot a crash left unfinished
            tmp.unlink(missing_ok=True)
        segments = [p for p in self.segments() if _offset_of(p) >= rec.snapshot_offset]
        self.snapshot_offset = rec.snapshot_offset
        self._open(_offset_of(segments[-1]) if segments else rec.offset, rec.offset)
        self.synced = rec.offset
        self.check_space()
        slog("recovered", offset=rec.offset, snapshot_offset=rec.snapshot_offset,
             records=rec.records, cut_bytes=rec.cut_bytes,
             damaged=rec.damage.describe() if rec.damage else "")  # fmt: skip
        return rec

    def _load_snapshot(self, engine: Engine, path: Path) -> dict[str, Any]:
        """The file's meta; its snapshot loaded into `engine`, read and parsed ~1 MiB at a
        time (never the whole file in memory besides the state it holds)."""
        fresh = Engine(engine.settings.base)
        loader = Loader(len(fresh.dbs))
        with path.open("rb") as f:
            head = f.read(len(META_MAGIC) + 4)
            if not head.startswith(META_MAGIC) or len(head) < len(META_MAGIC) + 4:
                raise SnapshotError("not an xstream snapshot file")
            (n,) = _U32.unpack_from(head, len(META_MAGIC))
            meta: dict[str, Any] = json.loads(f.read(n))
            while piece := f.read(_READ):
                loader.feed(piece)
        snapshot.restore_from(fresh, loader)
        engine.adopt(fresh)
        return meta

    @staticmethod
    def _replay(
        data: bytes, apply: Callable[[list[list[bytes]]], object]
    ) -> tuple[int, int, records.CorruptRecordError | None]:
        """(bytes of whole good records, records, the error that stopped it) after applying
        them; no error and fewer bytes than `data`: an incomplete record."""
        good = n = 0
        try:
            for start, stop in records.scan(data):
                apply(records.decode_payload(records.payload(data, start, stop)))
                good, n = stop, n + 1
        except records.CorruptRecordError as e:
            if e.pos < 0:  # the payload's structure, under a good checksum
                e = records.CorruptRecordError(str(e), good, -1)
            return good, n, e
        return good, n, None

    def _cut(self, path: Path, data: bytes, good: int, reason: str) -> None:
        if self._dry_run:
            return
        kept = path.with_name(f"{path.name}.cut-{good}")
        kept.write_bytes(data[good:])
        self._truncate_file(path, good)
        slog(
            "aof_tail_cut",
            level="warning",
            file=path.name,
            at=good,
            cut_bytes=len(data) - good,
            reason=f"torn tail: {reason}",
            kept=kept.name,
        )
        METRICS.aof_cuts.inc()

    @staticmethod
    def _truncate_file(path: Path, size: int) -> None:
        with path.open("r+b") as f:
            f.truncate(size)
            os.fsync(f.fileno())

    def load_upto(
        self,
        engine: Engine,
        end: int,
        apply: Callable[[list[list[bytes]]], object] | None = None,
        on_meta: Callable[[dict[str, Any]], None] | None = None,
    ) -> list[bytes]:
        """Rebuild `engine` from the snapshot and the log up to `end` (a record boundary at or
        after the snapshot) without touching the files; the log bytes after the snapshot.
        `apply` and `on_meta` as `recover`'s (default: engine.apply_record, no meta)."""
        apply = apply or engine.apply_record
        snaps = [p for p in self.snapshots() if _offset_of(p) <= end]
        offset = 0
        if snaps:
            meta = self._load_snapshot(engine, snaps[-1])
            if on_meta is not None:
                on_meta(meta)
            offset = _offset_of(snaps[-1])
        tail: list[bytes] = []
        for path in self.segments():
            base = _offset_of(path)
            if base < offset or base >= end:
                continue
            with path.open("rb") as f:
                data = f.read(end - base)
            for start, stop in records.scan(data):
                apply(records.decode_payload(records.payload(data, start, stop)))
            tail.append(data)
            offset = base + len(data)
        assert offset == end, (offset, end)
        return tail

    # ------------------------------------------------------------ reading the log back

    def log_holds(self, pos: int) -> bool:
        """`pos` is in the log on disk: at or after the newest snapshot, at most its end."""
        return self.snapshot_offset <= pos <= self.written

    def read_log(self, pos: int, max_bytes: int, end: int) -> bytes:
        """Up to `max_bytes` of the log from `pos`, none at or past `end`, read from the one
        segment that holds `pos` (from the page cache, usually); b"" when no segment does any
        more (a snapshot superseded it meanwhile). Thread-safe: it only reads files."""
        if pos >= end:
            return b""
        holding = [p for p in self.segments() if _offset_of(p) <= pos]
        if not holding:
            return b""
        path = holding[-1]
        try:
            with path.open("rb") as f:
                f.seek(pos - _offset_of(path))
                return f.read(min(max_bytes, end - pos))
        except FileNotFoundError:
            return b""

    # ------------------------------------------------------------ appending

    def _open(self, base: int, end: int, fresh: bool = False) -> None:
        if self._fd >= 0:
            os.close(self._fd)
        path = self.dir / _name("aof", base, ".xlog")
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | (os.O_TRUNC if fresh else 0)
        self._fd = os.open(path, flags, 0o644)
        self.base = base
        self.written = end
        self.segment_bytes = end - base

    def check_writable(self) -> None:
        """DiskFault if a write must be refused before it is applied."""
        if self.fault:
            raise DiskFault(self.fault)
        if self.free_bytes < self.reserve_bytes and self._space_level < 2:
            self.check_space()  # the estimate crossed it: read the space actually free
        if self.free_bytes < self.reserve_bytes:
            raise DiskFault(
                f"free space on the data directory's file system ({self.free_bytes} bytes) is "
                f"below the reserve of {self.reserve_bytes} bytes (--disk-reserve-bytes)"
            )

    def append(self, data: bytes) -> None:
        """Write whole records (or, on a replica, any run of the stream) to the open segment.
        On failure the segment is cut back to where it was and the store is faulted."""
        if self.fault:
            raise DiskFault(self.fault)
        try:
            n = os.write(self._fd, data)  # _write_all, inline: once per write
            if n != len(data):
                _write_rest(self._fd, data, n)
        except OSError as e:
            self._restore_boundary()
            self._fail("write", e, self.written)
            raise DiskFault(self.fault) from e
        self.written += len(data)
        self.segment_bytes += len(data)
        self.free_bytes -= len(data)
        if self.fsync == "no":
            self.synced = self.written

    def _restore_boundary(self) -> None:
        """Cut the bytes of a failed write; if even that fails, `resume` starts afresh."""
        try:
            os.ftruncate(self._fd, self.segment_bytes)
        except OSError as e:
            slog("aof_boundary_restore_failed", level="error", error=e.strerror or str(e))

    def _fail(self, op: str, e: OSError, rollback_to: int | None) -> None:
        """Refuse writes from now on; the role rolls its state back to `rollback_to`."""
        first = not self.fault
        self.fault = e.strerror or errno.errorcode.get(e.errno or 0, str(e))
        METRICS.disk_faults.labels(op).inc()
        METRICS.disk_ok.set(0)
        if first:
            slog("disk_fault", level="error", op=op, error=self.fault, file=self._segment_name(),
                 written=self.written, synced=self.synced, rollback_to=rollback_to)  # fmt: skip
        if self.on_fault is not None:
            self.on_fault(rollback_to)

    def _segment_name(self) -> str:
        return _name("aof", self.base, ".xlog")

    def is_durable(self, offset: int) -> bool:
        """`offset` is on disk as the policy promises already: `durable` would return at once
        (the write path tests this first, saving a coroutine per write)."""
        return self.fsync != "always" or self.synced >= offset

    async def durable(self, offset: int) -> None:
        """Return once `offset` is on disk as the policy promises (always: fsynced); DiskFault
        if an fsync failed first (or the record was rolled back): it is never retried."""
        if self.is_durable(offset):
            return
        if self.fault and (self._fsync_failed or offset > self.written):
            raise DiskFault(self.fault)
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append((offset, fut))
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.create_task(self._flush_loop())
        await fut

    async def fsync_to(self, offset: int) -> bool:
        """fsync now if `offset` is written but not yet synced, whatever the policy
        (WAITAOF's local count); whether `offset` is on disk. DiskFault if the log failed."""
        if self.synced >= offset:
            return True
        if self.fault:
            raise DiskFault(self.fault)
        if offset > self.written:
            return False
        if self.fsync == "always":  # the group commit's fsync (a failure rolls back)
            await self.durable(offset)
            return True
        target = self.written
        try:
            await asyncio.get_running_loop().run_in_executor(None, self._fsync_now, self._fd)
        except OSError as e:  # as everysec's: what it covered was acknowledged already
            self._fsync_failed = True
            self._fail("fsync", e, None)
            raise DiskFault(self.fault) from e
        self.synced = max(self.synced, target)
        return True

    async def _flush_loop(self) -> None:
        loop = asyncio.get_running_loop()
        while self._waiters:
            target = self.written
            try:
                await loop.run_in_executor(None, self._fsync_now, self._fd)
            except OSError as e:
                self._fail_waiters(e)
                return
            self.synced = max(self.synced, target)
            still = []
            for off, fut in self._waiters:
                if fut.done():  # its writer was cancelled
                    continue
                if off <= self.synced or off > self.written:  # durable, or cut off (truncate_to)
                    fut.set_result(None)
                else:
                    still.append((off, fut))
            self._waiters = still

    def _fail_waiters(self, e: OSError) -> None:
        """An fsync failed: what it covered is not known durable; the state goes back to
        `synced` (nothing past it was answered or, with fsync=always, shipped)."""
        with contextlib.suppress(OSError):  # else resume starts afresh at `synced`
            os.ftruncate(self._fd, self.synced - self.base)
        self.written, self.segment_bytes = self.synced, self.synced - self.base
        self._fsync_failed = True
        self._fail("fsync", e, self.synced)
        waiters, self._waiters = self._waiters, []
        for _, fut in waiters:
            if not fut.done():
                fut.set_exception(DiskFault(self.fault))

    @staticmethod
    def _fsync_now(fd: int) -> None:
        t = time.perf_counter()
        os.fsync(fd)
        METRICS.fsync_seconds.observe(time.perf_counter() - t)

    async def run_everysec(self) -> None:
        """The `everysec` policy's background fsync."""
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(1.0)
            if self.fsync == "everysec" and self.written > self.synced and not self.fault:
                target = self.written
                try:
                    await loop.run_in_executor(None, self._fsync_now, self._fd)
                except OSError as e:  # acknowledged already: nothing to roll back
                    self._fsync_failed = True
                    self._fail("fsync", e, None)
                    continue
                self.synced = max(self.synced, target)

    # ------------------------------------------------------------ free space and repair

    def check_space(self) -> int:
        """Read the free space (a metric); log when it falls below twice the reserve, below
        the reserve (writes refused), and when it is back above."""
        try:
            st = os.statvfs(self.dir)
        except OSError:
            return self.free_bytes
        free = self.free_bytes = st.f_bavail * st.f_frsize
        METRICS.disk_free.set(free)
        level = 2 if free < self.reserve_bytes else 1 if free < 2 * self.reserve_bytes else 0
        if level != self._space_level:
            event = ("disk_space_ok", "disk_space_low", "disk_reserve_reached")[level]
            slog(event, level="warning" if level else "info", free_bytes=free,
                 reserve_bytes=self.reserve_bytes, dir=str(self.dir))  # fmt: skip
            self._space_level = level
        return free

    def probe(self) -> bool:
        """Does the disk take a write and an fsync again (and is the reserve free)?"""
        if self.check_space() < self.reserve_bytes:
            return False
        path = self.dir / ".probe"
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                _write_all(fd, b"\0" * 4096)
                os.fsync(fd)
            finally:
                os.close(fd)
            path.unlink()
        except OSError:
            return False
        return True

    async def resume(self, engine: Engine, meta: dict[str, Any], offset: int) -> None:
        """After a fault: snapshot the state at `offset` (the role brought it back to what the
        log holds, whole records) into a fresh segment, so nothing rests on pages a failed
        write or fsync left; then take writes again. The state is captured on the loop and
        written and fsynced in a worker thread (writes stay refused until then). OSError
        (still faulted) if the disk fails again."""
        assert self.fault and self.base <= offset <= self.written
        snap = self._captured_snapshot(engine, offset, meta)  # written by finish_snapshot
        with contextlib.suppress(OSError):  # the old segment ends at a record boundary too
            os.ftruncate(self._fd, offset - self.base)
        self._open(offset, offset, fresh=True)
        await asyncio.get_running_loop().run_in_executor(None, self.finish_snapshot, snap)
        was, self.fault = self.fault, ""
        self.synced = offset
        self._fsync_failed = False
        METRICS.disk_ok.set(1)
        slog("disk_resumed", offset=offset, after=was)

    # ------------------------------------------------------------ snapshots

    def begin_snapshot(self, engine: Engine, meta: dict[str, Any]) -> SnapshotFile:
        """Capture the state now (consistent at `written`) for a temporary file and start a
        new segment there; `finish_snapshot` writes it and makes it durable (in a worker
        thread, as Redis's BGSAVE writes from its fork).

        The capture is what stays on the caller's loop (the state must not move under it):
        full nodes by reference (snapshot.captured: they never change in place), so the loop
        is held for a reference or a small header a node, not for serializing and writing
        the data set; the writer joins the parts ~1 MiB at a time, never the whole snapshot
        in memory. DiskFault while the log is faulted (`resume` snapshots then); OSError if
        the file cannot be created (nothing changed).
        """
        if self.fault:
            raise DiskFault(self.fault)
        offset = self.written
        if self.fsync != "no" and self._fd >= 0:
            try:  # the old segment is complete before the new one starts
                os.fsync(self._fd)
            except OSError as e:
                self._fsync_failed = True
                self._fail("fsync", e, None)  # acknowledged already (else its writer waits)
                raise DiskFault(self.fault) from e
        snap = self._captured_snapshot(engine, offset, meta)
        self._open(offset, offset)
        self.synced = max(self.synced, offset)
        return snap

    def _captured_snapshot(self, engine: Engine, offset: int, meta: dict[str, Any]) -> SnapshotFile:
        """The state now captured (snapshot.captured) as the body of a temporary snapshot file
        holding only its header so far: finish_snapshot writes the body. OSError if the file
        cannot be created."""
        parts = snapshot.captured(engine)
        snap = self._write_snapshot(offset, meta, ())
        snap.size += sum(map(len, parts)) + CRC_SIZE
        snap.body = parts
        return snap

    def _write_snapshot(
        self, offset: int, meta: dict[str, Any], body: Iterable[bytes]
    ) -> SnapshotFile:
        """The snapshot file (META magic, meta, `body`) written, not fsynced, to a temporary
        name of its own. OSError removes it."""
        head = json.dumps({**meta, "offset": offset}).encode()
        self._temporaries += 1
        tmp = self.dir / f"{_name('snapshot', offset, '.xsnap')}.tmp{self._temporaries}"
        size = 0
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                for part in chain((META_MAGIC + _U32.pack(len(head)) + head,), body):
                    _write_all(fd, part)
                    size += len(part)
            finally:
                os.close(fd)
        except OSError as e:
            tmp.unlink(missing_ok=True)
            slog("snapshot_failed", level="error", offset=offset, error=e.strerror or str(e))
            raise
        return SnapshotFile(offset, tmp, size)

    def finish_snapshot(self, snap: SnapshotFile) -> None:
        """Make a written snapshot durable (fsync, rename, fsync the directory), then delete
        what it supersedes. Thread-safe. OSError leaves the older snapshot and segments in
        place (the temporary file is removed). A captured body is written first, joined
        into ~1 MiB pieces and checksummed as they go."""
        final = self.dir / _name("snapshot", snap.offset, ".xsnap")
        try:
            fd = os.open(
                snap.tmp, os.O_WRONLY | os.O_APPEND if snap.body is not None else os.O_RDONLY
            )
            try:
                if snap.body is not None:
                    body, snap.body = snap.body, None
                    for piece in snapshot.sealed(snapshot.pieces(body)):
                        _write_all(fd, piece)
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as e:
            snap.tmp.unlink(missing_ok=True)
            slog("snapshot_failed", level="error", offset=snap.offset,
                 error=e.strerror or str(e))  # fmt: skip
            raise
        snap.tmp.rename(final)
        dfd = os.open(self.dir, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
        self.snapshot_offset = snap.offset
        for old in self.snapshots():
            if _offset_of(old) < snap.offset:
                old.unlink(missing_ok=True)
        for seg in self.segments():
            if _offset_of(seg) < snap.offset:
                seg.unlink(missing_ok=True)
        slog("snapshot_written", offset=snap.offset, bytes=snap.size, file=final.name)

    def reset(self, offset: int, snapshot_bytes: bytes, meta: dict[str, Any]) -> None:
        """A replica's full sync, whole: the snapshot becomes the whole data set at `offset`."""
        self.install_snapshot(self._write_snapshot(offset, meta, (snapshot_bytes,)))

    def receive_snapshot(self, offset: int, meta: dict[str, Any]) -> SnapshotWriter:
        """A replica's full sync as it arrives: the snapshot file at `offset` (META magic and
        meta written now), its pieces written as they come (SnapshotWriter.write); then
        `install_snapshot`, or `discard`. OSError if it cannot be created."""
        head = json.dumps({**meta, "offset": offset}).encode()
        self._temporaries += 1
        tmp = self.dir / f"{_name('snapshot', offset, '.xsnap')}.tmp{self._temporaries}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        header = META_MAGIC + _U32.pack(len(head)) + head  # here: the writer sums the snapshot
        try:
            _write_all(fd, header)
        except OSError:
            os.close(fd)
            tmp.unlink(missing_ok=True)
            raise
        return SnapshotWriter(SnapshotFile(offset, tmp, len(header)), fd)

    def install_snapshot(self, snap: SnapshotFile) -> None:
        """A received snapshot (closed) becomes the whole data set at its offset: made
        durable, then everything else is deleted and the log starts there."""
        offset = snap.offset
        for old in self.snapshots():
            if _offset_of(old) > offset:  # from a history this one replaces
                old.unlink(missing_ok=True)
        self.finish_snapshot(snap)
        for seg in self.segments():
            if _offset_of(seg) != offset:
                seg.unlink(missing_ok=True)
        (self.dir / _name("aof", offset, ".xlog")).unlink(missing_ok=True)
        self._open(offset, offset)
        self.synced = offset

    def truncate_to(self, offset: int) -> None:
        """Drop what was written past `offset` (a replica's partial record before a resync)."""
        assert self.base <= offset <= self.written
        os.ftruncate(self._fd, offset - self.base)
        self.written = offset
        self.segment_bytes = offset - self.base
        self.synced = min(self.synced, offset)

    def cut_back(self, offset: int) -> None:
        """Drop the log past `offset`, in whichever segment it lies (a deposed primary's tail
        that the new primary never had). Cut bytes are kept aside as
        `<segment>.diverged-<position>`; snapshots past `offset` are deleted. The state must
        then be rebuilt with `recover` (it reopens the segment that now ends at `offset`)."""
        if offset < self.snapshot_offset:
            raise ValueError(
                f"cannot cut back to {offset}: the snapshot is at {self.snapshot_offset}"
            )
        for snap in self.snapshots():
            if _offset_of(snap) > offset:
                snap.unlink()
        for seg in reversed(self.segments()):
            base = _offset_of(seg)
            if base > offset:
                seg.rename(seg.with_name(f"{seg.name}.diverged-0"))
                continue
            data = seg.read_bytes()
            if offset - base < len(data):
                seg.with_name(f"{seg.name}.diverged-{offset - base}").write_bytes(
                    data[offset - base :]
                )
                self._truncate_file(seg, offset - base)
            break
        slog("log_cut_back", level="warning", offset=offset, was=self.written)
        self.written = self.synced = offset

    def close(self) -> None:
        if self._fd >= 0:
            if self.fsync != "no" and not self.fault:
                try:
                    os.fsync(self._fd)
                except OSError as e:
                    slog("close_fsync_failed", level="error", error=e.strerror or str(e))
            os.close(self._fd)
            self._fd = -1
