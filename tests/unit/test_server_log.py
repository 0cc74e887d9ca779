"""The replication log's pieces without processes: records, the backlog, the store."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

from xstream.engine import Engine
from xstream.node import records
from xstream.node.backlog import Backlog
from xstream.node.store import Store

ROOT = Path(__file__).parents[2]


def test_records_round_trip_and_scan() -> None:
    effects = [[b"XADD", b"s", b"1-1", b"f", b""], [b"DEL", b"k" * 300]]
    data = records.encode(effects) + records.encode([[b"PING"]])
    spans = list(records.scan(data))
    assert len(spans) == 2 and spans[-1][1] == len(data)
    assert records.decode_payload(records.payload(data, *spans[0])) == effects
    assert list(records.scan(data[:-1])) == spans[:1]  # an incomplete record is not yielded
    bad = bytearray(data)
    bad[10] ^= 1
    with pytest.raises(records.CorruptRecordError, match="checksum"):
        list(records.scan(bytes(bad)))


def test_backlog_serves_from_any_held_offset_and_drops_whole_chunks() -> None:
    b = Backlog(capacity=10, offset=100)
    for chunk in (b"aaaa", b"bbbb", b"cccc", b"dddd"):
        b.append(chunk)
    assert (b.start, b.end) == (104, 116)  # "aaaa" dropped: the rest still holds 10+
    assert not b.holds(103) and b.holds(104) and b.holds(116)
    assert b.read(106) == b"bbcccc" + b"dddd"
    assert b.read(106, max_bytes=1) == b"bb"
    assert b.read(116) == b""


def _store(path: Path, fsync: str = "always") -> tuple[Store, Engine]:
    store, engine = Store(path, fsync), Engine()
    store.recover(engine, engine.apply_record)
    return store, engine


def _write(store: Store, engine: Engine, argv: list[bytes]) -> None:
    result = engine.execute(argv, 1)
    store.append(records.encode(result.effects))
    asyncio.run(store.durable(store.written))


def test_store_recovers_snapshot_plus_log_and_cuts_a_torn_tail(tmp_path: Path) -> None:
    store, engine = _store(tmp_path)
    _write(store, engine, [b"XADD", b"s", b"1-1", b"f", b"v"])
    snap = store.begin_snapshot(engine, {"replid": "x"})
    store.finish_snapshot(snap)
    offset = snap.offset
    _write(store, engine, [b"XADD", b"s", b"2-1", b"f", b"v"])
    _write(store, engine, [b"XADD", b"s", b"3-1", b"f", b"v"])
    end = store.written
    store.close()
    seg = sorted(tmp_path.glob("aof-*.xlog"))[-1]
    seg.write_bytes(seg.read_bytes()[:-5])
    again, engine2 = Store(tmp_path), Engine()
    rec = again.recover(engine2, engine2.apply_record)
    assert rec.snapshot_offset == offset and rec.meta["replid"] == "x"
    assert rec.records == 1 and rec.cut_bytes > 0 and rec.offset < end
    assert engine2.execute([b"XLEN", b"s"]).reply == 2
    assert len(list(tmp_path.glob("*.cut-*"))) == 1
    assert len(list(tmp_path.glob("snapshot-*"))) == 1  # older snapshots and segments deleted


def test_proto_code_is_what_the_script_generates(tmp_path: Path) -> None:
    subprocess.run(
        ["bash", "scripts/gen_proto.sh", str(tmp_path)],
        cwd=ROOT,
        check=True,
        env={"PY": sys.executable, "PATH": "/usr/bin:/bin"},
    )
    for name in ("xstream_pb2.py", "xstream_pb2.pyi", "xstream_pb2_grpc.py"):
        generated = (tmp_path / "xstream" / "v1" / name).read_text()
        committed = (ROOT / "proto" / "gen" / "xstream" / "v1" / name).read_text()
        assert generated == committed, f"{name} is stale: run scripts/gen_proto.sh"
