"""A snapshot fed to the Loader in pieces of any size loads as the whole does, once; any
damage, truncation or trailing bytes are refused; files written by earlier builds still load."""

from __future__ import annotations

import hashlib
import random
import struct
import zlib
from pathlib import Path

import pytest

from xstream.engine import Engine, SnapshotError, snapshot
from xstream.engine.snapload import Loader

GOLDEN = Path(__file__).parent / "fixtures" / "snapshot-v4.xsnap"
NOW = 1_700_000_000_000


def call(e: Engine, *words: object, db: int = 0) -> object:
    argv = [w if isinstance(w, bytes) else str(w).encode() for w in words]
    return e.execute(argv, NOW, db).reply


def golden() -> Engine:
    """Every kind of record: nodes with tombstones, a group with owned, released and NACKed
    entries, IDMP, a string with an expiry, a list and a set in db 3, a setting.
    WARNING: the commands that wrote fixtures/snapshot-v4.xsnap (with the build of that time)."""
    e = Engine()
    for i in range(1, 400):
        call(e, "XADD", "s", f"{i}-{i % 3}", "user_id", i * 7919, "action", "click", "amount", 42)
    call(e, "XDEL", "s", "5-2", "6-0")
    call(e, "XGROUP", "CREATE", "s", "g", "0")
    call(e, "XREADGROUP", "GROUP", "g", "alice", "COUNT", "30", "STREAMS", "s", ">")
    call(e, "XREADGROUP", "GROUP", "g", "bob", "COUNT", "5", "STREAMS", "s", ">")
    call(e, "XACK", "s", "g", "1-1", "2-2")
    call(e, "XGROUP", "DELCONSUMER", "s", "g", "bob")
    call(e, "XADD", "t", "IDMP", "p1", "i1", "*", "f", "v")
    call(e, "SET", "k", "v")
    call(e, "PEXPIRE", "k", "100000")
    call(e, "RPUSH", "l", "a", "b", "c", db=3)
    call(e, "SADD", "set", "x", "y", db=3)
    call(e, "XCONFIGSET", "stream-idmp-maxsize", "12")
    call(e, "XNACK", "s", "g", "SILENT", "IDS", "2", "3-0", "4-1")
    return e


def fed(data: bytes, sizes: list[int], deep: bool = False) -> Engine:
    """`data` fed in pieces of the given sizes (cycled), loaded into a fresh engine."""
    loader = Loader(16, deep)
    pos = i = 0
    while pos < len(data):
        n = sizes[i % len(sizes)]
        loader.feed(data[pos : pos + n])
        pos, i = pos + n, i + 1
    e = Engine()
    e.dbs[:], values = loader.finish()
    e.settings.load(values)
    return e


@pytest.mark.parametrize("sizes", [[1], [3, 16, 17], [64], [1000, 1], [1 << 20]])
def test_pieces_of_any_size_load_what_the_whole_does(sizes: list[int]) -> None:
    e = golden()
    data = snapshot.dump(e)
    loaded = fed(data, sizes, deep=True)
    loaded.foreign_layout = True
    loaded.check_integrity()
    assert loaded.digest() == e.digest()
    assert snapshot.dump(loaded) == data
    pending = [b"XPENDING", b"s", b"g"]
    assert loaded.execute(pending).reply == e.execute(pending).reply


def test_the_snapshot_an_earlier_build_wrote_still_loads() -> None:
    """fixtures/snapshot-v4.xsnap was written by the build before the Loader (format version 4,
    blake2b-closed): this build loads it whole and in pieces, and writes the same records back
    as version 5, closed by a CRC-32."""
    data = GOLDEN.read_bytes()
    e = golden()
    for loaded in (fed(data, [1 << 20]), fed(data, [5, 9])):
        assert loaded.digest() == e.digest()
        assert loaded.settings.values == {b"stream-idmp-maxsize": 12}
    again = Engine()
    snapshot.restore(again, data)
    assert again.digest() == e.digest()
    now = snapshot.dump(e)
    assert data[8:10] == b"\x00\x04" and now[8:10] == b"\x00\x05"
    assert now[10:-4] == data[10:-16]


def test_older_versions_load_in_pieces() -> None:
    """A version 3 header over a body without expiry records, and version 2 (no SELECTDB)."""
    e = Engine()
    for i in range(1, 200):
        call(e, "XADD", "s", f"{i}-1", "f", i)
    call(e, "SET", "k", "v")
    body = snapshot.dump(e)[:-4]  # less version 5's CRC-32
    v3 = bytearray(body)
    struct.pack_into(">H", v3, 8, 3)
    v2 = bytearray(v3)
    struct.pack_into(">H", v2, 8, 2)
    assert v2[10:15] == b"\xfe\x00\x00\x00\x00"
    del v2[10:15]
    for old in (v3, v2):
        data = bytes(old) + hashlib.blake2b(bytes(old), digest_size=16).digest()
        assert fed(data, [7]).digest() == e.digest()


def test_a_corrupt_piece_is_refused() -> None:
    data = snapshot.dump(golden())
    rng = random.Random(5)
    for _ in range(60):
        bad = bytearray(data)
        bad[rng.randrange(len(bad))] ^= 1 << rng.randrange(8)
        with pytest.raises(SnapshotError):
            fed(bytes(bad), [rng.choice([1, 100, 4096])])


def test_a_truncated_or_overlong_feed_is_refused() -> None:
    data = snapshot.dump(golden())
    for cut in (0, 5, 10, len(data) // 2, len(data) - 17, len(data) - 16, len(data) - 1):
        with pytest.raises(SnapshotError, match=r"truncated|checksum"):
            fed(data[:cut], [100])
    with pytest.raises(SnapshotError, match="bytes after the end marker"):
        fed(data + b"\0", [100])


def test_foreign_and_future_headers_are_refused_at_once() -> None:
    data = snapshot.dump(golden())
    with pytest.raises(SnapshotError, match="bad magic"):
        Loader().feed(b"REDIS0011" + data[9:20])
    future = bytearray(data[:20])
    struct.pack_into(">H", future, 8, snapshot.VERSION + 1)
    with pytest.raises(SnapshotError, match="unsupported snapshot version"):
        Loader().feed(bytes(future))


def test_a_long_tail_cut_by_many_pieces_loads_as_the_whole() -> None:
    """A PEL of 3,000 entries fed 50 bytes at a time: the tail is cut short and parsed again
    several times; nothing a cut-short try built leaks into the result."""
    e = Engine()
    for i in range(1, 3001):
        call(e, "XADD", "s", f"{i}-0", "f", "v")
    call(e, "XGROUP", "CREATE", "s", "g", "0")
    call(e, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
    call(e, "XNACK", "s", "g", "SILENT", "IDS", "1", "7-0")
    loaded = fed(snapshot.dump(e), [50], deep=True)
    assert loaded.digest() == e.digest()
    assert call(loaded, "XPENDING", "s", "g") == call(e, "XPENDING", "s", "g")


def test_checksum_is_the_last_piece_of_dump_chunks() -> None:
    """dump_chunks = body_chunks, then the checksum over them: what a full sync sends."""
    e = golden()
    body = list(snapshot.body_chunks(e, 512))
    chunks = list(snapshot.dump_chunks(e, 512))
    assert chunks[:-1] == body and len(chunks[-1]) == 4
    assert chunks[-1] == zlib.crc32(b"".join(body)).to_bytes(4, "big")


def test_a_crc_summed_by_the_caller_is_compared_instead() -> None:
    """Loader(crc_given=True) leaves a version 5 snapshot's CRC-32 to its caller (a full sync
    sums it on the file writer's thread): the right one loads, any other is refused as a
    corrupt snapshot, none is a refusal too; an older version's digest is summed here still."""
    e = golden()
    data = snapshot.dump(e)
    crc = zlib.crc32(data[:-4])

    def given(raw: bytes, summed: int | None) -> Engine:
        loader = Loader(16, crc_given=True)
        for pos in range(0, len(raw), 333):
            loader.feed(raw[pos : pos + 333])
        out = Engine()
        snapshot.restore_from(out, loader, summed)
        return out

    assert given(data, crc).digest() == e.digest()
    for wrong in (crc ^ 1, None):
        with pytest.raises(SnapshotError, match="checksum"):
            given(data, wrong)
    v4 = GOLDEN.read_bytes()
    assert given(v4, None).digest() == e.digest()
    bad = bytearray(v4)
    bad[-1] ^= 1
    with pytest.raises(SnapshotError, match="checksum mismatch"):
        given(bytes(bad), zlib.crc32(bytes(bad[:-4])))
