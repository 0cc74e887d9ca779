"""A node's data directory: snapshots plus append-only log segments, and recovery from them.

    data-dir/
      snapshot-<offset>.xsnap   META magic | u32 meta length | meta JSON | engine snapshot
      aof-<base>.xlog           log records (records.py) from replication offset <base> on
      aof-<base>.xlog.cut-<n>   bytes cut from a torn or corrupt tail at position n (kept)
      aof-<base>.xlog.diverged-<n>  bytes cut back from position n after a failover: a
                                deposed primary's writes that the new primary never had

Invariants: the newest snapshot at offset S plus the segments with base >= S, replayed in
base order, rebuild the state at the log's end; each segment's base is the previous one's end.
A snapshot is written to a temporary file, fsynced, renamed and its directory fsynced before
older snapshots and segments are deleted, so a crash at any point leaves a recoverable pair.
Offsets are zero-padded to 20 digits so names sort in offset order.

fsync policy (Redis's appendfsync): `always` fsyncs before a write is acknowledged (group
commit: one fsync covers every write appended before it started); `everysec` fsyncs once a
second; `no` leaves it to the OS.
"""

from __future__ import annotations

import asyncio
import json
import os
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from xstream.engine import Engine, SnapshotError, snapshot

from . import records
from .logs import slog
from .metrics import METRICS

META_MAGIC = b"XSMETA1\n"
_U32 = struct.Struct("<I")
FSYNC_POLICIES = ("always", "everysec", "no")
FLUSH_BYTES = 1 << 20  # queued appends are written once they reach this (or at settle/fsync)


@dataclass
class Recovery:
    offset: int = 0  # the log's end: the replication offset the state is at
    meta: dict[str, Any] = field(default_factory=dict)  # the newest snapshot's meta
    snapshot_offset: int = 0
    records: int = 0  # records replayed from segments
    cut_bytes: int = 0  # bytes cut from a torn or corrupt tail
    tail: list[bytes] = field(default_factory=list)  # segment bytes after the snapshot


def _name(prefix: str, offset: int, suffix: str) -> str:
    return f"{prefix}-{offset:020d}{suffix}"


def _offset_of(path: Path) -> int:
    return int(path.name.split("-", 1)[1].split(".", 1)[0])


class Store:
    def __init__(self, directory: Path, fsync: str = "everysec") -> None:
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
        self._fd = -1
        self._pending: list[bytes] = []  # appended, not yet written to the file
        self._pending_bytes = 0
        self._waiters: list[tuple[int, asyncio.Future[None]]] = []
        self._flusher: asyncio.Task[None] | None = None

    # ------------------------------------------------------------ recovery

    def snapshots(self) -> list[Path]:
        return sorted(self.dir.glob("snapshot-*.xsnap"))

    def segments(self) -> list[Path]:
        return sorted(self.dir.glob("aof-*.xlog"))

    def recover(self, engine: Engine, apply: Callable[[list[bytes]], object]) -> Recovery:
        """Load the newest good snapshot into `engine`, replay the segments after it through
        `apply`, cut a torn tail, and open the last segment for appending."""
        rec = Recovery()
        for path in reversed(self.snapshots()):
            try:
                rec.meta = self._load_snapshot(engine, path)
            except (SnapshotError, ValueError, OSError) as e:
                slog("snapshot_unreadable", level="error", file=path.name, error=str(e))
                continue
            rec.snapshot_offset = rec.offset = _offset_of(path)
            break
        segments = [p for p in self.segments() if _offset_of(p) >= rec.offset]
        for i, path in enumerate(segments):
            if _offset_of(path) != rec.offset:
                slog("aof_gap", level="error", file=path.name, expected=rec.offset)
                for later in segments[i:]:
                    later.rename(later.with_suffix(later.suffix + ".orphan"))
                segments = segments[:i]
                break
            data = path.read_bytes()
            good, n, reason = self._replay(data, apply)
            rec.records += n
            rec.offset += good
            rec.tail.append(data[:good])
            if good < len(data):
                self._cut(path, data, good, reason)
                rec.cut_bytes += len(data) - good
                for later in segments[i + 1 :]:
                    later.rename(later.with_suffix(later.suffix + ".orphan"))
                segments = segments[: i + 1]
                break
        self.snapshot_offset = rec.snapshot_offset
        self._open(rec.offset if not segments else _offset_of(segments[-1]), rec.offset)
        self.synced = rec.offset
        slog(
            "recovered",
            offset=rec.offset,
            snapshot_offset=rec.snapshot_offset,
            records=rec.records,
            cut_bytes=rec.cut_bytes,
        )
        return rec

    def _load_snapshot(self, engine: Engine, path: Path) -> dict[str, Any]:
        data = path.read_bytes()
        if not data.startswith(META_MAGIC):
            raise SnapshotError("not an xstream snapshot file")
        (n,) = _U32.unpack_from(data, len(META_MAGIC))
        start = len(META_MAGIC) + 4
        meta: dict[str, Any] = json.loads(data[start : start + n])
        fresh = Engine(engine.config)
        snapshot.restore(fresh, data[start + n :])
        engine.keyspace = fresh.keyspace
        engine.foreign_layout = fresh.foreign_layout
        return meta

    @staticmethod
    def _replay(data: bytes, apply: Callable[[list[bytes]], object]) -> tuple[int, int, str]:
        """(bytes of whole good records, records, why it stopped early) after applying them."""
        good = n = 0
        reason = "torn tail (incomplete record)"
        try:
            for start, stop in records.scan(data):
                for argv in records.decode_payload(records.payload(data, start, stop)):
                    apply(argv)
                good, n = stop, n + 1
        except records.CorruptRecordError as e:
            reason = f"corrupt record: {e}"
        return good, n, reason

    def _cut(self, path: Path, data: bytes, good: int, reason: str) -> None:
        kept = path.with_name(f"{path.name}.cut-{good}")
        kept.write_bytes(data[good:])
        with path.open("r+b") as f:
            f.truncate(good)
            os.fsync(f.fileno())
        slog(
            "aof_tail_cut",
            level="warning",
            file=path.name,
            at=good,
            cut_bytes=len(data) - good,
            reason=reason,
            kept=kept.name,
        )
        METRICS.aof_cuts.inc()

    # ------------------------------------------------------------ appending

    def _open(self, base: int, end: int) -> None:
        if self._fd >= 0:
            os.close(self._fd)
        path = self.dir / _name("aof", base, ".xlog")
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self.base = base
        self.written = end
        self.segment_bytes = end - base

    def append(self, data: bytes) -> None:
        """Queue whole records (or, on a replica, any run of the stream) for the open segment;
        `flush` writes them (one write for everything queued)."""
        self._pending.append(data)
        self._pending_bytes += len(data)
        self.written += len(data)
        self.segment_bytes += len(data)
        if self._pending_bytes >= FLUSH_BYTES:
            self.flush()

    def flush(self) -> None:
        """Write what is queued to the file (the OS's page cache; `durable` fsyncs)."""
        if not self._pending:
            return
        data = self._pending[0] if len(self._pending) == 1 else b"".join(self._pending)
        self._pending.clear()
        self._pending_bytes = 0
        view = memoryview(data)
        while view:
            n = os.write(self._fd, view)
            view = view[n:]
        if self.fsync == "no":
            self.synced = self.written

    async def durable(self, offset: int) -> None:
        """Return once `offset` is on disk as the policy promises (always: fsynced)."""
        self.flush()
        if self.fsync != "always" or self.synced >= offset:
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append((offset, fut))
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.create_task(self._flush_loop())
        await fut

    async def _flush_loop(self) -> None:
        loop = asyncio.get_running_loop()
        while self._waiters:
            self.flush()
            target = self.written
            await loop.run_in_executor(None, self._fsync_now, self._fd)
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
            self.flush()
            if self.fsync == "everysec" and self.written > self.synced:
                target = self.written
                await loop.run_in_executor(None, self._fsync_now, self._fd)
                self.synced = max(self.synced, target)

    # ------------------------------------------------------------ snapshots

    def begin_snapshot(self, engine: Engine, meta: dict[str, Any]) -> tuple[int, bytes]:
        """Serialize the state now (consistent at `written`) and start a new segment there.

        Returns (offset, file bytes); `finish_snapshot` writes them (in a worker thread).
        """
        self.flush()
        offset = self.written
        if self.fsync != "no" and self._fd >= 0:
            os.fsync(self._fd)  # the old segment is complete before the new one starts
        body = b"".join(snapshot.dump_chunks(engine))
        head = json.dumps({**meta, "offset": offset}).encode()
        self._open(offset, offset)
        self.synced = max(self.synced, offset)
        return offset, META_MAGIC + _U32.pack(len(head)) + head + body

    def finish_snapshot(self, offset: int, data: bytes) -> None:
        """Write a snapshot durably, then delete what it supersedes. Thread-safe."""
        final = self.dir / _name("snapshot", offset, ".xsnap")
        tmp = final.with_suffix(".tmp")
        with tmp.open("wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        tmp.rename(final)
        dfd = os.open(self.dir, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
        self.snapshot_offset = offset
        for old in self.snapshots():
            if _offset_of(old) < offset:
                old.unlink(missing_ok=True)
        for seg in self.segments():
            if _offset_of(seg) < offset:
                seg.unlink(missing_ok=True)
        slog("snapshot_written", offset=offset, bytes=len(data), file=final.name)

    def reset(self, offset: int, snapshot_bytes: bytes, meta: dict[str, Any]) -> None:
        """A replica's full sync: the received snapshot becomes the whole data set at `offset`."""
        self._pending.clear()
        self._pending_bytes = 0
        for old in self.snapshots():
            if _offset_of(old) > offset:  # from a history this one replaces
                old.unlink(missing_ok=True)
        head = json.dumps({**meta, "offset": offset}).encode()
        self.finish_snapshot(offset, META_MAGIC + _U32.pack(len(head)) + head + snapshot_bytes)
        for seg in self.segments():
            if _offset_of(seg) != offset:
                seg.unlink(missing_ok=True)
        (self.dir / _name("aof", offset, ".xlog")).unlink(missing_ok=True)
        self._open(offset, offset)
        self.synced = offset

    def truncate_to(self, offset: int) -> None:
        """Drop what was written past `offset` (a replica's partial record before a resync)."""
        self.flush()
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
        self.flush()
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
                with seg.open("r+b") as f:
                    f.truncate(offset - base)
                    os.fsync(f.fileno())
            break
        slog("log_cut_back", level="warning", offset=offset, was=self.written)
        self.written = self.synced = offset

    def close(self) -> None:
        if self._fd >= 0:
            self.flush()
            if self.fsync != "no":
                os.fsync(self._fd)
            os.close(self._fd)
            self._fd = -1
