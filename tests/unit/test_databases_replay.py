"""Databases survive replication and restarts: a seeded workload over several databases (MOVE,
SWAPDB, COPY ... DB, RENAME, FLUSHDB, FLUSHALL, blocked-free group reads) runs on a primary
engine; each command's effects, applied as one record on a replica engine with other node
limits, give the same digest and the same keys in every database after every step. Snapshots
keep every key's database; version 2 files (before databases) load into db 0."""

from __future__ import annotations

import hashlib
import random
import struct

import pytest
from enginecalls import argv, call, engine

from xstream.engine import Engine, EngineConfig, SnapshotError, StreamError, snapshot

DBS = [0, 1, 3, 15]
KEYS = [b"s", b"t", b"k"]


class Workload:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.now = 1_000

    def command(self) -> tuple[int, list[bytes]]:
        rng = self.rng
        self.now += rng.choice([0, 1, 2])
        db = rng.choice(DBS)
        key, other = rng.choice(KEYS), rng.choice(KEYS)
        n = b"%d" % rng.choice(DBS)
        op = rng.random()
        if op < 0.4:
            return db, [b"XADD", key, b"*", b"f", b"%d" % rng.randrange(100)]
        choices = [
            [b"XGROUP", b"CREATE", key, b"g", b"0", b"MKSTREAM"],
            [b"XREADGROUP", b"GROUP", b"g", b"c", b"COUNT", b"2", b"STREAMS", key, b">"],
            [b"XACK", key, b"g", b"%d-0" % (self.now - rng.randrange(5))],
            [b"MOVE", key, n],
            [b"SWAPDB", b"%d" % db, n],
            [b"COPY", key, other, b"DB", n, *([b"REPLACE"] if rng.random() < 0.5 else [])],
            [b"COPY", key, other],
            [b"RENAME", key, other],
            [b"RENAMENX", key, other],
            [b"SET", key, b"x"],
            [b"DEL", key],
            [b"UNLINK", key, other],
            [b"FLUSHDB"],
        ]
        if rng.random() < 0.05:
            return db, [b"FLUSHALL"]
        return db, rng.choice(choices)


def observe(e: Engine) -> list[object]:
    return [sorted(call(e, "KEYS", "*", db=db)) for db in range(16)]  # type: ignore[arg-type]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_replaying_records_reaches_the_same_databases(seed: int) -> None:
    p, r = engine(4096, 100), engine(1, 1)
    work = Workload(seed)
    ran = 0
    for _ in range(400):
        db, words = work.command()
        try:
            result = p.execute(words, work.now, db)
        except StreamError:
            continue
        ran += 1
        r.apply_record(result.effects)
        p.check_integrity()
        r.check_integrity()
        assert observe(r) == observe(p), (db, words)
        assert r.digest() == p.digest(), (db, words)
    assert ran > 200
    again = Engine(EngineConfig(300, 7))
    snapshot.restore(again, snapshot.dump(p), deep=True)
    again.check_integrity()
    assert again.digest() == p.digest() and observe(again) == observe(p)


def several() -> Engine:
    e = Engine()
    for db in (0, 2, 15):
        call(e, "XADD", "s", f"{db + 1}-1", "f", "v", db=db)
        call(e, "SET", f"k{db}", "v", db=db)
    call(e, "XGROUP", "CREATE", "s", "g", "0", db=15)
    call(e, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">", db=15)
    return e


def test_snapshot_round_trip_keeps_every_database() -> None:
    e = several()
    data = snapshot.dump(e)
    restored = Engine()
    snapshot.restore(restored, data, deep=True)
    assert restored.digest() == e.digest()
    assert [len(ks) for ks in restored.dbs] == [len(ks) for ks in e.dbs]
    assert call(restored, "XPENDING", "s", "g", db=15) == call(e, "XPENDING", "s", "g", db=15)
    assert snapshot.dump(restored) == data


def test_snapshot_naming_a_missing_database_is_refused() -> None:
    e = several()
    with pytest.raises(SnapshotError, match="beyond this engine's 4 databases"):
        snapshot.restore(Engine(EngineConfig(databases=4)), snapshot.dump(e))


def _as_version_2(data: bytes) -> bytes:
    """A version 3 snapshot of db 0 only, as version 2 wrote it: no SELECTDB."""
    body = bytearray(data[:-4])  # less the CRC-32 of version 5
    struct.pack_into(">H", body, 8, 2)
    assert body[10:15] == b"\xfe\x00\x00\x00\x00"
    del body[10:15]
    return bytes(body) + hashlib.blake2b(bytes(body), digest_size=16).digest()


def test_a_version_2_snapshot_loads_into_db_0() -> None:
    e = Engine()
    call(e, "XADD", "s", "1-1", "f", "v")
    call(e, "SET", "k", "v")
    restored = Engine()
    snapshot.restore(restored, _as_version_2(snapshot.dump(e)))
    assert restored.digest() == e.digest() and call(restored, "DBSIZE") == 2


def test_selectdb_in_a_version_2_file_is_corrupt() -> None:
    e = several()
    data = bytearray(snapshot.dump(e)[:-4])
    struct.pack_into(">H", data, 8, 2)
    forged = bytes(data) + hashlib.blake2b(bytes(data), digest_size=16).digest()
    with pytest.raises(SnapshotError):
        snapshot.load(forged)


def test_effects_replay_through_store_records() -> None:
    """The engine's SELECT effects are what make records self-contained: applied record by
    record, a write in db 7 lands in db 7 even after records of db 0."""
    p, r = Engine(), Engine()
    for db, words in [(7, ("SET", "a", "1")), (0, ("SET", "a", "0")), (7, ("MOVE", "a", 2))]:
        r.apply_record(p.execute(argv(*words), 0, db).effects)
    assert r.digest() == p.digest()
    assert call(r, "GET", "a", db=2) == b"1" and call(r, "GET", "a") == b"0"
