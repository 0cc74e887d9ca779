"""What a node keeps in memory is bounded by its settings (issue 15): the backlog references
less than its capacity plus one chunk, older positions are read back from the log on disk
until a snapshot supersedes them, and the commit-time bookkeeping stays under its capacity
whatever the replicas do; snapshots are never held whole; an idle node leaves out the libraries
only some nodes use. In-process, on temporary stores."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import tracemalloc
from pathlib import Path

from xstream.engine import Engine
from xstream.node import heap, records
from xstream.node.backlog import Backlog
from xstream.node.handshake import Hello
from xstream.node.metrics import Metrics
from xstream.node.store import Store
from xstream.primary.primary import CommitTimes, Primary


def test_the_backlog_references_less_than_its_capacity_plus_its_oldest_chunk() -> None:
    b = Backlog(capacity=1000, offset=0)
    sizes = [37, 300, 5, 999, 1, 64, 2000, 7] * 50
    for i, n in enumerate(sizes):
        b.append(bytes([i % 251]) * n)
        oldest = len(b.read(b.start, max_bytes=1))  # reads return whole chunks
        assert b.held_bytes() < b.capacity + oldest
        assert b.end - b.start == b.held_bytes()
    whole = b"".join(bytes([i % 251]) * n for i, n in enumerate(sizes))
    assert b.end == len(whole) and b.read(b.start) == whole[b.start :]


def test_a_recovered_backlog_keeps_only_the_last_capacity_bytes_of_the_tail() -> None:
    tail = [b"a" * 10, b"b" * 10, b"c" * 10]
    b = Backlog.holding(15, 1030, tail)
    assert (b.start, b.end) == (1015, 1030)
    assert b.read(1015) == b"b" * 5 + b"c" * 10
    assert Backlog.holding(100, 30, tail).read(0) == b"".join(tail)
    empty = Backlog.holding(0, 30, tail)
    assert (empty.start, empty.end) == (30, 30)


def test_commit_times_stay_under_capacity_and_never_overstate_a_lag() -> None:
    times = CommitTimes(capacity=16)
    floor = 0  # a replica that never acks: nothing can be forgotten, only thinned
    for i in range(1, 1001):
        times.add(i * 10, float(i), lambda: floor)
        assert len(times) <= 16
    assert times.first_after(10_000) is None
    assert times.first_after(9_990) == 1000.0  # the newest commit is always kept
    for offset in range(0, 10_000, 7):
        t = times.first_after(offset)
        assert t is not None and t >= offset // 10 + 1  # a later commit: a lag a little short


def test_commit_times_forget_what_every_replica_acked() -> None:
    times = CommitTimes(capacity=8)
    for i in range(1, 9):
        times.add(i, float(i), lambda: 0)
    times.add(9, 9.0, lambda: 6)  # full: the entries at or before 6 go, nothing is thinned
    assert list(times.offsets) == [7, 8, 9] and times.first_after(6) == 7.0


def _primary(tmp_path: Path, capacity: int) -> Primary:
    store = Store(tmp_path, "everysec")
    engine = Engine()
    store.recover(engine, engine.apply_record)
    return Primary(engine, store, Backlog(capacity), {"replid": "r" * 40}, "p")


async def _stream(p: Primary, pos: int) -> bytes:
    """The replication stream from `pos` to the end as a sender reads it, 100 bytes a read."""
    out = b""
    while pos < p.offset:
        data = await p.stream_from(pos, 100, p.offset)
        assert data, pos
        out += data
        pos += len(data)
    return out


def test_positions_before_the_backlog_are_read_from_the_log_until_a_snapshot(
    tmp_path: Path,
) -> None:
    async def run() -> None:
        p = _primary(tmp_path, capacity=200)
        p.attach(Hello(name="r1"))  # a replica: the backlog keeps the stream's tail
        for i in range(60):
            await p.write([b"XADD", b"s", b"*", b"i", b"%d" % i], None)
        whole = b"".join(path.read_bytes() for path in p.store.segments())
        assert len(whole) == p.offset and p.backlog.start > 0
        assert 200 <= p.backlog.held_bytes() < 400
        assert await _stream(p, 0) == whole  # disk, then memory: the same bytes
        assert [len(r) for r in records.scan(await _stream(p, 0))]
        assert p.resume_point(Hello(name="r", replid=p.replid, offset=0)) == 0
        await p.snapshot_now()
        for i in range(3):
            await p.write([b"XADD", b"s", b"*", b"i", b"%d" % i], None)
        assert await p.stream_from(0, 100, p.offset) is None  # superseded: a full sync
        assert p.resume_point(Hello(name="r", replid=p.replid, offset=0)) is None
        assert p.store.read_log(0, 100, p.offset) == b""

    asyncio.run(run())


def test_a_primary_keeps_commit_times_under_capacity_without_replicas(tmp_path: Path) -> None:
    async def run() -> None:
        p = _primary(tmp_path, capacity=1 << 20)
        p.commit_times = CommitTimes(capacity=32)
        for i in range(500):
            await p.write([b"XADD", b"s", b"*", b"i", b"%d" % i], None)
            assert len(p.commit_times) <= 32

    asyncio.run(run())


def _empty_store(path: Path) -> Store:
    store = Store(path, "no")
    store.recover(Engine(), lambda effects: None)
    return store


def _big_engine() -> Engine:
    engine = Engine()
    for ms in range(1, 81):  # 80,000 entries of ~100 bytes: a ~9 MB snapshot
        engine.xadd_many(b"s", [[b"f", b"%0100d" % i] for i in range(1000)], ms)
    return engine


def test_a_snapshot_is_written_as_it_is_serialized_never_held_whole(tmp_path: Path) -> None:
    """The capture on the loop holds references, not bytes; the writer joins ~1 MiB at a
    time: neither ever holds the 9 MB."""
    store, engine = _empty_store(tmp_path), _big_engine()
    tracemalloc.start()
    try:
        snap = store.begin_snapshot(engine, {"replid": "r"})
        _, captured = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        path = snap.tmp.with_name(f"snapshot-{snap.offset:020d}.xsnap")
        store.finish_snapshot(snap)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert snap.size > 8 << 20 and path.stat().st_size == snap.size and snap.body is None
    assert captured < 1 << 20  # a reference or a header a node
    assert peak < 4 << 20  # a chunk or two at a time (~1 MiB each), not the 9 MB
    again = Engine()
    Store(tmp_path).recover(again, again.apply_record)
    assert again.execute([b"XLEN", b"s"], 0).reply == 80_000


def test_a_snapshot_is_the_state_it_began_at_whatever_changes_before_it_is_written(
    tmp_path: Path,
) -> None:
    """Writes between begin_snapshot (on the loop) and finish_snapshot (in a worker thread)
    -- appends, XDEL and trims inside full nodes, a key deleted -- are not in the file."""
    store, engine = _empty_store(tmp_path), _big_engine()
    digest = engine.digest()
    snap = store.begin_snapshot(engine, {"replid": "r"})
    engine.xadd_many(b"s", [[b"f", b"late"]] * 10, 99)
    first, last = engine.execute([b"XRANGE", b"s", b"-", b"+", b"COUNT", b"2"], 0).reply  # type: ignore[misc]
    assert engine.execute([b"XDEL", b"s", first[0], last[0]], 0).reply == 2
    assert engine.execute([b"XTRIM", b"s", b"MAXLEN", b"=", b"1000"], 0).reply == 79_010 - 2
    engine.execute([b"SET", b"k", b"v"], 0)
    store.finish_snapshot(snap)
    again = Engine()
    Store(tmp_path).recover(again, again.apply_record)
    assert again.digest() == digest != engine.digest()


def test_snapshots_at_one_offset_do_not_share_a_temporary_and_a_crash_leaves_none(
    tmp_path: Path,
) -> None:
    store, engine = _empty_store(tmp_path), Engine()
    engine.xadd_many(b"s", [[b"f", b"v"]] * 10, 1)
    first, second = store.begin_snapshot(engine, {}), store.begin_snapshot(engine, {})
    assert first.offset == second.offset and first.tmp != second.tmp
    store.finish_snapshot(second)
    assert first.tmp.exists()  # as a crash before its fsync would leave it
    _empty_store(tmp_path)
    assert not list(tmp_path.glob("snapshot-*.tmp*"))
    assert len(store.snapshots()) == 1


def test_an_idle_node_imports_no_metrics_library_etcd_client_or_cryptography() -> None:
    """What a primary or replica imports to run (the CLI, the runner, the loop): Prometheus
    comes with --metrics-port, etcd's client with `xstream node`, cryptography with
    `xstream certs`, never before."""
    code = (
        "import sys, xstream.cli, xstream.server.runner, xstream.server.loops\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & "
        "{'prometheus_client', 'cryptography', 'redis', 'wsgiref'} | "
        "{m for m in sys.modules if m in ('xstream.coord.etcd', 'http.client')}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_metrics_are_no_ops_until_enabled_then_prometheus_counts() -> None:
    from prometheus_client import generate_latest  # noqa: PLC0415

    m = Metrics()
    m.full_syncs.inc()
    m.replica_ack.labels("r1").set(5)
    m.replica_ack.remove("r1")
    assert m.registry is None
    m.enable()
    m.enable()  # once
    m.full_syncs.inc()
    m.replica_ack.labels("r1").set(7)
    assert m.registry is not None
    body = generate_latest(m.registry).decode()
    assert "xstream_full_syncs_total 1.0" in body
    assert 'xstream_replica_ack_offset{replica="r1"} 7.0' in body


def test_a_primary_without_replicas_keeps_no_backlog_and_serves_from_the_log(
    tmp_path: Path,
) -> None:
    async def run() -> None:
        p = _primary(tmp_path, capacity=1 << 20)
        for i in range(20):
            await p.write([b"XADD", b"s", b"*", b"i", b"%d" % i], None)
        assert p.backlog.held_bytes() == 0 and p.backlog.start == p.offset > 0
        before = p.offset
        p.attach(Hello(name="r1"))
        await p.write([b"XADD", b"s", b"*", b"i", b"late"], None)
        assert p.backlog.start == before and p.backlog.held_bytes() == p.offset - before
        whole = b"".join(path.read_bytes() for path in p.store.segments())
        assert await _stream(p, 0) == whole

    asyncio.run(run())


def test_the_heap_is_trimmed_only_when_it_holds_more_free_bytes_than_asked() -> None:
    held = [bytes(3000) for _ in range(20_000)]  # ~60 MB of malloc'd blocks
    del held[::2]  # half freed, in holes between live blocks: not given back by free()
    assert heap.free_bytes() > 16 << 20
    assert not heap.trim(min_free=1 << 62)
    assert heap.trim(min_free=16 << 20)
    del held


def test_a_restarted_primary_keeps_its_backlog_so_replicas_resume_after_a_snapshot(
    tmp_path: Path,
) -> None:
    """Redis recreates its backlog at start (PSYNC2): a replica that comes back after the
    restarted primary took writes and a snapshot cut its log still resumes partially."""

    async def run() -> None:
        p = _primary(tmp_path, capacity=1 << 20)
        p.attach(Hello(name="r1"))
        for i in range(20):
            await p.write([b"XADD", b"s", b"*", b"i", b"%d" % i], None)
        left_at = p.offset  # where the replica stood when the primary went down
        store = Store(tmp_path, "everysec")
        engine = Engine()
        rec = store.recover(engine, engine.apply_record)
        backlog = Backlog.holding(1 << 20, rec.offset, rec.tail)
        again = Primary(engine, store, backlog, {"replid": p.replid}, "p")
        for i in range(3):
            await again.write([b"XADD", b"s", b"*", b"after", b"%d" % i], None)
        await again.snapshot_now()  # the log before it is gone
        assert again.store.read_log(left_at, 100, again.offset) == b""
        assert again.resume_point(Hello(name="r1", replid=p.replid, offset=left_at)) == left_at
        tail = await again.stream_from(left_at, 1 << 20, again.offset)
        assert tail is not None and len(tail) == again.offset - left_at
        assert [len(r) for r in records.scan(tail)] and len(list(records.scan(tail))) == 3

    asyncio.run(run())
