"""Snapshots round-trip the whole keyspace and refuse anything corrupt, truncated or foreign."""

from __future__ import annotations

import random
import zlib

import pytest

from xstream.engine import Engine, EngineConfig, SnapshotError, snapshot


def _engine(config: EngineConfig | None = None) -> Engine:
    e = Engine(config)
    rng = random.Random(7)
    for i in range(1, 3000):
        fields = rng.choice([[b"a", b"b"], [b"user_id", b"action", b"amount"], [b"x"]])
        argv = [b"XADD", b"s%d" % (i % 3), b"%d-%d" % (i, rng.randint(0, 5))]
        for f in fields:
            argv += [f, rng.choice([b"1", b"-77", b"hello", b"z" * rng.randint(0, 300)])]
        e.execute(argv)
    e.execute([b"XDEL", b"s0", b"3-0", b"6-1", b"9-2"])
    e.execute([b"XTRIM", b"s1", b"MAXLEN", b"500"])
    e.execute([b"XSETID", b"s2", b"99999-5", b"ENTRIESADDED", b"5000", b"MAXDELETEDID", b"7-0"])
    e.execute([b"XADD", b"empty", b"MAXLEN", b"0", b"1-1", b"f", b"v"])
    e.execute([b"SET", b"plain", b"value"])
    return e


@pytest.mark.parametrize("chunk", [64, 1 << 20])
def test_round_trip_keeps_state_and_layout(chunk: int) -> None:
    e = _engine(EngineConfig(300, 7))
    data = b"".join(snapshot.dump_chunks(e, chunk_size=chunk))
    assert data == snapshot.dump(e)
    restored = Engine(EngineConfig(300, 7))
    snapshot.restore(restored, data, deep=True)
    restored.check_integrity()
    assert restored.digest() == e.digest()
    info = [b"XINFO", b"STREAM", b"s0"]
    assert restored.execute(info).reply == e.execute(info).reply
    # appends after a restore continue in the restored tail node, as they would have
    for eng in (e, restored):
        eng.execute([b"XADD", b"s0", b"100000-0", b"a", b"1"])
    assert restored.execute(info).reply == e.execute(info).reply
    assert snapshot.dump(restored) == snapshot.dump(e)


def test_a_capture_is_the_state_of_its_moment_whatever_changes_after() -> None:
    """snapshot.captured takes full nodes by reference (a full sync joins them into pieces
    while the primary goes on writing): writes after the capture -- appends to the tail, an
    XDEL and a trim inside full nodes, a key deleted, groups read -- change nothing of what
    its pieces hold."""
    e = _engine(EngineConfig(300, 7))
    e.execute([b"XGROUP", b"CREATE", b"s0", b"g", b"0"])
    expected = snapshot.dump(e)
    parts = snapshot.captured(e)
    assert any(type(p) is bytes and len(p) > 300 for p in parts)  # nodes taken as they are
    e.execute([b"XADD", b"s0", b"*", b"f", b"v"])
    entries = e.execute([b"XRANGE", b"s0", b"-", b"+"]).reply
    assert isinstance(entries, list)
    doomed = [entries[i][0] for i in (10, 11, 400)]  # in full nodes
    assert e.execute([b"XDEL", b"s0", *doomed]).reply == 3
    assert e.execute([b"XTRIM", b"s1", b"MAXLEN", b"=", b"10"]).reply == 490
    e.execute([b"XREADGROUP", b"GROUP", b"g", b"c", b"COUNT", b"5", b"STREAMS", b"s0", b">"])
    e.execute([b"DEL", b"s2"])
    e.execute([b"XADD", b"new", b"*", b"f", b"v"])
    data = b"".join(snapshot.sealed(snapshot.pieces(parts, 4096)))
    assert data == expected and parts == []
    again = Engine(EngineConfig(300, 7))
    snapshot.restore(again, data, deep=True)
    assert again.execute([b"XLEN", b"s1"]).reply != e.execute([b"XLEN", b"s1"]).reply


def test_restore_into_engine_with_other_limits() -> None:
    e = _engine()
    other = Engine(EngineConfig(100, 2))
    snapshot.restore(other, snapshot.dump(e))
    assert other.digest() == e.digest()
    other.execute([b"XADD", b"s0", b"100000-0", b"a", b"1"])
    other.check_integrity()


def test_empty_keyspace() -> None:
    data = snapshot.dump(Engine())
    e = Engine()
    e.execute([b"SET", b"k", b"v"])
    snapshot.restore(e, data)
    assert len(e.keyspace) == 0


def test_truncated_snapshots_are_refused_and_change_nothing() -> None:
    data = snapshot.dump(_engine())
    target = Engine()
    target.execute([b"SET", b"keep", b"me"])
    before = target.digest()
    for cut in (0, 5, 10, len(data) // 2, len(data) - 17, len(data) - 1):
        with pytest.raises(SnapshotError):
            snapshot.restore(target, data[:cut])
        assert target.digest() == before


def test_corrupt_bytes_are_refused() -> None:
    data = bytearray(snapshot.dump(_engine()))
    rng = random.Random(3)
    for _ in range(50):
        bad = bytearray(data)
        pos = rng.randrange(len(bad))
        bad[pos] ^= 1 << rng.randrange(8)
        with pytest.raises(SnapshotError):
            snapshot.load(bytes(bad))


def test_foreign_and_future_snapshots_are_refused() -> None:
    data = snapshot.dump(_engine())
    with pytest.raises(SnapshotError, match="bad magic"):
        snapshot.load(b"REDIS0011" + data[9:])
    future = bytearray(data)
    future[9] = snapshot.VERSION + 1
    with pytest.raises(SnapshotError, match="unsupported snapshot version"):
        snapshot.load(bytes(future))


def test_structural_damage_with_a_valid_checksum_is_refused() -> None:
    """A snapshot whose checksum was recomputed over bad structure is still refused."""
    e = Engine()
    e.execute([b"XADD", b"s", b"1-1", b"f", b"v"])
    body = bytearray(snapshot.dump(e)[:-4])  # version 5: a CRC-32 closes it
    body[-3] ^= 0x40  # inside the listpack's last element
    forged = bytes(body) + zlib.crc32(body).to_bytes(4, "big")
    with pytest.raises(SnapshotError):
        snapshot.load(forged, deep=True)
