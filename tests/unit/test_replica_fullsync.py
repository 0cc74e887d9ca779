"""A replica's full sync piece by piece (replica/fullsync.py): loaded and written as the pieces
come, installed at the end; a damaged or broken-off one changes nothing and leaves no file."""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path

import pytest

from xstream.engine import Engine, snapshot
from xstream.node import epochs, users
from xstream.node.acl import Acl
from xstream.node.store import META_MAGIC, Store
from xstream.primary.replication import chunk_message
from xstream.replica.link import _primary_message
from xstream.replica.replica import Diverged, Replica
from xstream.v1 import xstream_pb2 as pb


def _primary_engine() -> Engine:
    e = Engine()
    for i in range(1, 3000):
        e.execute([b"XADD", b"s", b"%d-0" % i, b"f", b"%d" % i])
    e.execute([b"XGROUP", b"CREATE", b"s", b"g", b"0"])
    e.execute([b"XREADGROUP", b"GROUP", b"g", b"c", b"COUNT", b"10", b"STREAMS", b"s", b">"])
    return e


def _replica(directory: Path) -> Replica:
    store = Store(directory, "always")
    engine = Engine()
    store.recover(engine, engine.apply_record)
    r = Replica(engine, store, 0, "r", "", "127.0.0.1:1")
    r.engine.execute([b"SET", b"mine", b"1"])
    return r


def _begin(r: Replica, offset: int = 700) -> None:
    acl = Acl()
    acl.setuser("alice", ["on", ">pw", "~*", "+@all"])
    r.on_full_sync("x" * 40, offset, 0, epochs.history_of([]), users.encode(acl.users), 0)


def _leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.glob("snapshot-*"))


def test_pieces_are_loaded_and_written_then_installed(tmp_path: Path) -> None:
    p, r = _primary_engine(), _replica(tmp_path)
    _begin(r)
    for piece in snapshot.dump_chunks(p, chunk_size=4096):
        r.on_snapshot_piece(piece)
    assert r.engine.execute([b"GET", b"mine"]).reply == b"1"  # nothing installed before the end
    r.on_snapshot()
    assert r.engine.digest() == p.digest() and r.offset == 700 and r.replid == "x" * 40
    assert "alice" in r.acl.users
    assert _leftovers(tmp_path) == [f"snapshot-{700:020d}.xsnap"]
    again = Engine()  # the file written piece by piece is the state after a restart
    Store(tmp_path, "always").recover(again, again.apply_record)
    assert again.digest() == p.digest()


def test_a_damaged_piece_is_refused_and_leaves_nothing(tmp_path: Path) -> None:
    p, r = _primary_engine(), _replica(tmp_path)
    before = r.engine.digest()
    _begin(r)
    pieces = list(snapshot.dump_chunks(p, chunk_size=4096))
    bad = bytearray(pieces[3])
    bad[100] ^= 0x10  # a node's bytes: the checksum at the end refuses it
    pieces[3] = bytes(bad)
    with pytest.raises(Diverged, match="does not load"):
        for piece in pieces:
            r.on_snapshot_piece(piece)
        r.on_snapshot()
    assert r.engine.digest() == before and r.offset == 0 and r.receiving is None
    assert _leftovers(tmp_path) == []


def test_a_sync_broken_off_leaves_no_file(tmp_path: Path) -> None:
    p, r = _primary_engine(), _replica(tmp_path)
    _begin(r)
    r.on_snapshot_piece(next(iter(snapshot.dump_chunks(p, chunk_size=4096))))
    assert len(_leftovers(tmp_path)) == 1  # the temporary file, being written
    r.link_stopped("the stream broke")
    assert _leftovers(tmp_path) == [] and r.receiving is None
    with pytest.raises(Diverged, match="without a full sync"):
        r.on_snapshot()


def test_a_snapshot_file_of_version_4_still_recovers(tmp_path: Path) -> None:
    """A data directory written before version 5 (its snapshot closed by blake2b) recovers,
    the file read and parsed piece by piece (Store._load_snapshot)."""
    golden = Path(__file__).parent / "fixtures" / "snapshot-v4.xsnap"
    head = json.dumps({"replid": "r" * 40, "offset": 0}).encode()
    path = tmp_path / f"snapshot-{0:020d}.xsnap"
    path.write_bytes(META_MAGIC + struct.pack("<I", len(head)) + head + golden.read_bytes())
    engine = Engine()
    rec = Store(tmp_path, "always").recover(engine, engine.apply_record)
    assert rec.meta["replid"] == "r" * 40
    assert engine.key_count() == 5 and engine.settings.values == {b"stream-idmp-maxsize": 12}


def test_a_piece_the_disk_refuses_fails_the_sync_and_leaves_no_file(tmp_path: Path) -> None:
    """The file is written by a thread of its own (store.SnapshotWriter): a write that fails
    there is raised to the link at a later piece or at the end, and the file is removed."""
    p, r = _primary_engine(), _replica(tmp_path)
    before = r.engine.digest()
    _begin(r)
    sync = r.receiving
    assert sync is not None
    os.close(sync.file.fd)  # every write from now on fails (EBADF), as a dead disk's would
    sync.file.fd = os.open(os.devnull, os.O_RDONLY)
    with pytest.raises(OSError):
        for piece in snapshot.dump_chunks(p, chunk_size=4096):
            r.on_snapshot_piece(piece)
        r.on_snapshot()
    r.link_stopped("disk")  # what the link does on OSError
    assert r.engine.digest() == before and r.offset == 0 and r.receiving is None
    assert _leftovers(tmp_path) == []


def test_the_file_is_flushed_as_it_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every FLUSH_BYTES the writer thread fdatasyncs the file while the sync goes on (the
    fsync at the end finds little left), and what it wrote is the snapshot, byte for byte."""
    synced: list[int] = []
    real = os.fdatasync

    def fdatasync(fd: int) -> None:
        synced.append(fd)
        real(fd)

    monkeypatch.setattr(os, "fdatasync", fdatasync)
    writer = Store(tmp_path, "always").receive_snapshot(5, {"replid": "r" * 40})
    writer.FLUSH_BYTES = 4096
    pieces = list(snapshot.dump_chunks(_primary_engine(), chunk_size=4096))
    for piece in pieces:
        writer.write(piece)
    file = writer.close()
    assert len(synced) >= sum(map(len, pieces)) // 8192
    assert file.tmp.read_bytes().endswith(b"".join(pieces))
    assert file.size == file.tmp.stat().st_size


@pytest.mark.parametrize("sizes", [[4096], [1], [3], [5, 2, 1], [100_000]])
def test_the_writer_sums_the_crc_of_all_but_the_checksum(tmp_path: Path, sizes: list[int]) -> None:
    """The writer thread's CRC-32 covers every byte written but the last four (the snapshot's
    own checksum), however the pieces cut them: what the snapshot closes with."""
    data = b"".join(snapshot.dump_chunks(_primary_engine(), chunk_size=4096))
    writer = Store(tmp_path, "always").receive_snapshot(5, {"replid": "r" * 40})
    pos = i = 0
    while pos < len(data):
        n = sizes[i % len(sizes)]
        writer.write(data[pos : pos + n])
        pos, i = pos + n, i + 1
    assert writer.summed().to_bytes(4, "big") == data[-4:]
    writer.close()


@pytest.mark.parametrize("size", [1, 127, 128, 16_383, 16_384, 1 << 20])
def test_a_piece_goes_out_as_its_message_would_serialize(size: int) -> None:
    """The primary sends each piece already serialized (primary/replication.py): the bytes
    are the message's, and a replica parses them back to the piece."""
    data = bytes(range(256)) * (size // 256) + bytes(size % 256)
    wire = chunk_message(data)
    assert wire == pb.PrimaryMessage(chunk=pb.SnapshotChunk(data=data)).SerializeToString()
    assert pb.PrimaryMessage.FromString(wire).chunk.data == data
    piece = _primary_message(wire)  # the replica's reading: a view of the data, no parse
    assert isinstance(piece, memoryview) and piece == data


def test_any_other_message_is_parsed_by_protobuf() -> None:
    """Only a chunk framed exactly as one data field is read as a view; an empty chunk, a
    chunk with more fields, or any other kind of message goes to protobuf's parser."""
    others = [
        pb.PrimaryMessage(chunk=pb.SnapshotChunk()),
        pb.PrimaryMessage(full_sync=pb.FullSync(replid="r", offset=7, size=9)),
        pb.PrimaryMessage(snapshot_end=pb.SnapshotEnd()),
    ]
    for msg in others:
        assert _primary_message(msg.SerializeToString()) == msg
    extra = (
        chunk_message(b"abc") + pb.PrimaryMessage(snapshot_end=pb.SnapshotEnd()).SerializeToString()
    )
    parsed = _primary_message(extra)
    assert isinstance(parsed, pb.PrimaryMessage) and parsed.WhichOneof("kind") == "snapshot_end"
