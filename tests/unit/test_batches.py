"""Batches and transactions on the node floor: the engine's touched keys (what spoils a WATCH),
the WATCH registry, Primary.write_batch and Node.transaction (EXEC) as one record each.

Touched keys are Redis 7's signalModifiedKey calls (checked against redis-server 7.0.15):
entries added or removed, a key added, deleted or replaced; never group or consumer state.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from xstream.engine import NULL_ARRAY, Engine, StreamError
from xstream.node import records
from xstream.node.backlog import Backlog
from xstream.node.batch import Batch
from xstream.node.refusals import ReadOnlyError
from xstream.node.store import Store
from xstream.node.watches import Watch, Watches
from xstream.primary.primary import Primary


def make_primary(tmp_path: Path) -> Primary:
    store = Store(tmp_path / "data", "everysec")
    engine = Engine()
    store.recover(engine, engine.apply)  # opens the log segment
    return Primary(engine, store, Backlog(1 << 20), {"replid": "r" * 40}, "p")


def a(line: str) -> list[bytes]:
    return [w.encode() for w in line.split()]


def prepared() -> Engine:
    """A stream s (1-0, 2-0) with group g, whose consumer c holds 1-0; a string k."""
    e = Engine()
    for line in ("XADD s 1-0 f v", "XADD s 2-0 f v", "XGROUP CREATE s g 0", "SET k v"):
        e.execute(a(line))
    e.execute(a("XREADGROUP GROUP g c COUNT 1 STREAMS s >"))
    return e


TOUCHES = [
    ("XADD s * f v", [b"s"]),
    ("XADD new * f v", [b"new"]),
    ("XADD nokey NOMKSTREAM * f v", []),
    ("XDEL s 1-0", [b"s"]),
    ("XDEL s 7-7", []),
    ("XTRIM s MAXLEN 1", [b"s"]),
    ("XTRIM s MAXLEN 10", []),
    ("XDELEX s IDS 1 2-0", [b"s"]),
    ("XACKDEL s g IDS 1 1-0", [b"s"]),
    ("DEL s k nokey", [b"s", b"k"]),
    ("SET s x", [b"s"]),
    ("FLUSHALL", [b"s", b"k"]),
    ("XGROUP CREATE new g $ MKSTREAM", [b"new"]),
    ("XGROUP CREATE s g2 $", []),
    ("XGROUP SETID s g 0", []),
    ("XGROUP CREATECONSUMER s g c2", []),
    ("XGROUP DELCONSUMER s g c", []),
    ("XGROUP DESTROY s g", []),
    ("XSETID s 99-0", []),
    ("XACK s g 1-0", []),
    ("XCLAIM s g c2 0 1-0", []),
    ("XAUTOCLAIM s g c2 0 0", []),
    ("XREADGROUP GROUP g c2 STREAMS s >", []),
    ("XRANGE s - +", []),
]


@pytest.mark.parametrize(("line", "touched"), TOUCHES)
def test_touched_keys_are_redis_modified_keys(line: str, touched: list[bytes]) -> None:
    assert sorted(prepared().execute(a(line), 5).touched) == sorted((0, k) for k in touched)


def test_touched_keys_replay_on_the_replica_side() -> None:
    e, r = prepared(), prepared()
    result = e.execute(a("XADD s MAXLEN = 1 * f v"), 5)
    replayed = [k for eff in result.effects for k in r.apply(eff).touched]
    assert set(replayed) == {(0, b"s")}


def test_xadd_many_touches_its_key() -> None:
    assert Engine().xadd_many(b"s", [[b"f", b"v"]] * 3, 5).touched == [(0, b"s")]
    assert Engine().xadd_many(b"s", [[b"f", b"v"]], 5, db=4).touched == [(4, b"s")]


def test_watches_registry() -> None:
    w1, w2, reg = Watch(), Watch(), Watches()
    reg.add(w1, [(0, b"a"), (0, b"b")])
    reg.add(w2, [(0, b"b")])
    reg.touch([(0, b"x"), (1, b"a")])  # another key, or the same name in another database
    assert not w1.dirty and not w2.dirty
    reg.touch([(0, b"a")])
    assert w1.dirty and not w1.keys and not w2.dirty  # a dirty watch stops watching
    reg.add(w1, [(0, b"c")])  # no point once dirty (Redis's watchCommand)
    assert len(reg) == 1
    reg.drop(w2)
    assert len(reg) == 0
    reg.add(w2, [(0, b"z")])
    reg.touch_all()
    assert w2.dirty


def _records(p: Primary, start: int = 0) -> int:
    return sum(1 for _ in records.scan(p.store.read_log(start, 1 << 30, p.offset)))


def _replayed_digest(p: Primary) -> bytes:
    fresh = Engine()
    for begin, stop in records.scan(data := p.store.read_log(0, 1 << 30, p.offset)):
        for argv in records.decode_payload(records.payload(data, begin, stop)):
            fresh.apply(argv)
    return fresh.digest()


def test_write_batch_is_one_record_with_replies_in_order(tmp_path: Path) -> None:
    p = make_primary(tmp_path)
    argvs = [a("XADD s 1-0 f v"), a("XADD s 1-0 f v"), a("SET k v"), a("XADD k * f v"),
             a("XADD s * f v"), a("DEL k")]  # fmt: skip
    out = asyncio.run(p.write_batch(argvs, None))
    assert out[0] == b"1-0"
    assert isinstance(out[1], StreamError) and "equal or smaller" in out[1].message
    assert out[2].__class__.__name__ == "Status"
    assert isinstance(out[3], StreamError) and out[3].prefix == "WRONGTYPE"
    assert isinstance(out[4], bytes) and out[5] == 1
    assert _records(p) == 1
    assert p.store.written == p.offset  # logged once, before the replies
    assert _replayed_digest(p) == p.engine.digest()
    p.engine.check_integrity()


def test_write_batch_equals_the_writes_one_by_one(tmp_path: Path) -> None:
    p, q = make_primary(tmp_path / "p"), make_primary(tmp_path / "q")
    argvs = [a(f"XADD s {i}-1 f {i}") for i in range(1, 50)] + [a("XTRIM s MAXLEN 10")]
    argvs.insert(7, a("XADD s 3-1 f bad"))
    batched = asyncio.run(p.write_batch(argvs, None))

    async def one_by_one() -> list[object]:
        out: list[object] = []
        for argv in argvs:
            try:
                out.append((await q.write(argv, None))[0])
            except StreamError as e:
                out.append(e)
        return out

    assert batched == asyncio.run(one_by_one())
    assert p.engine.digest() == q.engine.digest() == _replayed_digest(p)
    assert (_records(p), _records(q)) == (1, 50)


def test_write_batch_refused_applies_nothing(tmp_path: Path) -> None:
    p = make_primary(tmp_path)
    p.lease_until = time.monotonic() - 1
    out = asyncio.run(p.write_batch([a("XADD s * f v"), a("SET k v")], None))
    assert all(isinstance(r, ReadOnlyError) for r in out)
    assert p.offset == 0 and not p.engine.keyspace


def test_transaction_is_one_record_at_one_time(tmp_path: Path) -> None:
    p = make_primary(tmp_path)
    argvs = [a("XADD s * f 1"), a("XLEN s"), a("XADD s * f 2"), a("XADD s 0-1 f v"),
             a("XREAD BLOCK 0 STREAMS s $"), a("PING")]  # fmt: skip
    out = asyncio.run(p.transaction(argvs, None))
    assert out is not None
    first, second = out[0], out[2]
    assert isinstance(first, bytes) and isinstance(second, bytes)
    ms1, seq1 = first.split(b"-")
    assert second == ms1 + b"-%d" % (int(seq1) + 1)  # one frozen time, as Redis's EXEC
    assert out[1] == 1
    assert isinstance(out[3], StreamError)  # in place, the others stay applied
    assert out[4] is NULL_ARRAY  # a blocking read answers at once
    assert str(out[5]) == "PONG"
    assert _records(p) == 1 and _replayed_digest(p) == p.engine.digest()


def test_transaction_aborted_by_a_touched_watch(tmp_path: Path) -> None:
    p = make_primary(tmp_path)
    watch = Watch()
    p.watches.add(watch, [(0, b"s")])
    asyncio.run(p.write(a("XADD t * f v"), None))
    assert not watch.dirty  # another key
    asyncio.run(p.write_batch([a("XADD s * f v")], None))
    assert watch.dirty
    before = p.offset
    assert asyncio.run(p.transaction([a("XADD s * f v")], watch)) is None
    assert p.offset == before


def test_transaction_refused_before_anything_runs(tmp_path: Path) -> None:
    p = make_primary(tmp_path)
    p.lease_until = time.monotonic() - 1
    with pytest.raises(ReadOnlyError):
        asyncio.run(p.transaction([a("XLEN s"), a("XADD s * f v")], None))
    assert asyncio.run(p.transaction([a("XLEN s")], None)) == [0]  # reads only: served
    assert p.offset == 0


def test_a_run_of_plain_xadds_is_one_append() -> None:
    argvs = [a("XADD s * f 1"), a("XADD s * f 2 g 3"), a("XADD s * f 4"), a("XADD t * f 5"),
             a("SET k v"), a("XADD k * f 6"), a("XADD k * f 7"), a("XADD s * f")]  # fmt: skip
    batch, alone = Batch(), Batch()
    batched_engine, alone_engine = Engine(), Engine()
    batch.run_writes(batched_engine, argvs, 7)
    for argv in argvs:
        alone.run(alone_engine, argv, 7)
    assert batch.replies == alone.replies
    assert isinstance(batch.replies[5], StreamError) and batch.replies[5].prefix == "WRONGTYPE"
    assert batched_engine.digest() == alone_engine.digest()
    assert [e[0] for e in batch.result.effects] == [b"XAPPEND", b"XADD", b"SET"]
    replayed = Engine()
    for effect in batch.result.effects:
        replayed.apply(effect)
    assert replayed.digest() == alone_engine.digest()
    batched_engine.check_integrity()
