"""DUMP and RESTORE: round trips keep the state, older stream types load as Redis fills them
in, and a corrupt payload changes nothing."""

from __future__ import annotations

import random

import pytest

from xstream.engine import OK, Engine, EngineConfig, StreamError, listpack, rdb
from xstream.engine import lzf as lzf_
from xstream.engine.crc64 import crc64
from xstream.engine.ids import MIN_ID, StreamID
from xstream.engine.rdbio import Writer, as_uint64
from xstream.engine.stream import Stream

NOW = 1_700_000_000_000


def run(e: Engine, *argv: bytes | str | int, now: int = NOW) -> object:
    words = [a if isinstance(a, bytes) else str(a).encode() for a in argv]
    return e.execute(words, now).reply


def _engine(config: EngineConfig | None = None) -> Engine:
    e = Engine(config or EngineConfig(400, 7))
    rng = random.Random(5)
    for i in range(1, 400):
        fields = rng.choice([[b"a", b"b"], [b"user", b"n"], [b"x"]])
        argv: list[bytes | str | int] = ["XADD", f"s{i % 2}", f"{i}-{rng.randint(0, 3)}"]
        for f in fields:
            argv += [f, rng.choice([b"1", b"-77", b"hello", b"z" * rng.randint(0, 90)])]
        run(e, *argv)
    run(e, "XDEL", "s0", "4-0", "6-1", "10-3")
    run(e, "XTRIM", "s1", "MAXLEN", "150")
    run(e, "XGROUP", "CREATE", "s0", "g1", "0")
    run(e, "XGROUP", "CREATE", "s0", "g2", "$", "ENTRIESREAD", "3")
    run(e, "XREADGROUP", "GROUP", "g1", "alice", "COUNT", "9", "STREAMS", "s0", ">", now=NOW + 5)
    run(e, "XREADGROUP", "GROUP", "g1", "bob", "COUNT", "4", "STREAMS", "s0", ">", now=NOW + 9)
    run(e, "XGROUP", "CREATECONSUMER", "s0", "g1", "idle")
    first = run(e, "XPENDING", "s0", "g1", "-", "+", "3")
    assert isinstance(first, list)
    ids = [row[0] for row in first]
    run(e, "XNACK", "s0", "g1", "SILENT", "IDS", 1, ids[2])
    run(e, "XNACK", "s0", "g1", "FATAL", "IDS", 1, ids[0])
    run(e, "XADD", "idmp", "IDMP", "p2", "i1", "*", "f", "v", now=NOW - 500_000)
    run(e, "XADD", "idmp", "IDMP", "p1", "i1", "*", "f", "v", now=NOW)
    run(e, "XADD", "idmp", "IDMP", "p1", "i2", "*", "f", "v", now=NOW + 1)
    run(e, "XADD", "empty", "MAXLEN", "0", "1-1", "f", "v")
    run(e, "SET", "str", "hello")
    run(e, "SET", "num", "-12345")
    run(e, "SET", "long", "abc" * 100)
    return e


def _same_but_trim_bound(a: Engine, b: Engine) -> None:
    """Equal digests once xstream's max_trimmed_entry_id (not in RDB) is aligned."""
    for key in a.keyspace:
        va, vb = a.keyspace.get(key), b.keyspace.get(key)
        if isinstance(va, Stream) and isinstance(vb, Stream):
            vb.max_trimmed_entry_id = va.max_trimmed_entry_id
    assert a.digest() == b.digest()


def test_crc64_and_lzf_match_redis_definitions() -> None:
    assert crc64(b"123456789") == 0xE9C6D914C4B8D9CA
    data = b"abcabcabcabcabcabcabcabc-0123456789" * 20
    packed = lzf_.compress(data, len(data) - 4)
    assert packed is not None and len(packed) < len(data) // 4
    assert lzf_.decompress(packed, len(data)) == data
    with pytest.raises(lzf_.LzfError):
        lzf_.decompress(packed, len(data) + 1)
    assert lzf_.compress(bytes(range(30)), 26) is None  # incompressible: stored raw


def test_round_trip_every_key() -> None:
    e = _engine()
    copy = Engine(EngineConfig(100, 3))
    for key in list(e.keyspace):
        payload = run(e, "DUMP", key)
        assert isinstance(payload, bytes) and rdb.verify(payload)
        assert run(copy, "RESTORE", key, 0, payload)
    copy.check_integrity()
    _same_but_trim_bound(e, copy)
    info = ["XINFO", "STREAM", "s0", "FULL"]
    assert run(copy, *info) == run(e, *info)
    assert run(copy, "XPENDING", "s0", "g1", "-", "+", 99) == run(
        e, "XPENDING", "s0", "g1", "-", "+", 99
    )
    # the NACK zone keeps its order: XREADGROUP CLAIM serves it first, in release order
    claim = ["XREADGROUP", "GROUP", "g1", "carol", "COUNT", 2, "CLAIM", 0, "STREAMS", "s0", ">"]
    assert run(copy, *claim) == run(e, *claim)


def test_restored_nodes_are_byte_for_byte_and_dump_is_stable() -> None:
    e = _engine()
    payload = run(e, "DUMP", "s0")
    copy = Engine()
    run(copy, "RESTORE", "s0", 0, payload)
    assert run(copy, "DUMP", "s0") == payload
    original, restored = e.keyspace.get(b"s0"), copy.keyspace.get(b"s0")
    assert isinstance(original, Stream) and isinstance(restored, Stream)
    assert list(original.nodes()) == list(restored.nodes())


def test_payload_layout() -> None:
    e = Engine()
    run(e, "SET", "k", "12")
    assert run(e, "DUMP", "k") == rdb.seal(b"\x00\xc0\x0c")  # type 0, INT8 12
    run(e, "SET", "k", "x" * 5)
    payload = run(e, "DUMP", "k")
    assert isinstance(payload, bytes)
    assert payload[:7] == b"\x00\x05xxxxx" and payload[7:9] == b"\x0e\x00"  # RDB version 14
    assert payload[9:] == crc64(payload[:9]).to_bytes(8, "little")
    run(e, "XADD", "s", "1-1", "f", "v")
    stream_payload = run(e, "DUMP", "s")
    assert isinstance(stream_payload, bytes) and stream_payload[0] == 27
    assert run(e, "DUMP", "missing") is None


STRINGS = [b"", b"0", b"-1", b"127", b"-129", b"2147483647", b"2147483648", b"007", b"+5",
           b"a" * 21, bytes(range(256)), b"ab" * 300]  # fmt: skip


@pytest.mark.parametrize("value", STRINGS)
def test_strings(value: bytes) -> None:
    e = Engine()
    run(e, "SET", "k", value)
    payload = run(e, "DUMP", "k")
    run(e, "RESTORE", "k2", 0, payload)
    assert run(e, "GET", "k2") == value


def test_effect_replays_to_the_same_state() -> None:
    e = _engine()
    replica = Engine()
    for key in list(e.keyspace):
        res = e.execute([b"RESTORE", b"copy-" + key, b"0", run(e, "DUMP", key)], NOW)  # type: ignore[list-item]
        assert res.effects == [[b"RESTORE", b"copy-" + key, b"0", res.effects[0][3], b"REPLACE"]]
        assert res.signaled == [(0, b"copy-" + key)]
        for effect in res.effects:
            replica.apply(effect)
        assert replica.key_digest(b"copy-" + key) == e.key_digest(b"copy-" + key)


def test_expired_idmp_records_left_out_and_effect_redumped() -> None:
    e = Engine()
    run(e, "XADD", "s", "IDMP", "p", "old", "*", "f", "v", now=NOW)
    run(e, "XADD", "s", "IDMP", "p", "new", "*", "f", "v", now=NOW + 90_000)
    payload = run(e, "DUMP", "s", now=NOW + 90_001)
    assert isinstance(payload, bytes) and b"old" in payload  # still in its window
    later = NOW + 100_000  # "old" ended, "new" has not
    assert b"old" not in run(e, "DUMP", "s", now=later)  # type: ignore[operator]
    res = e.execute([b"RESTORE", b"t", b"0", payload], later)
    t = e.keyspace.get(b"t")
    assert isinstance(t, Stream) and list(t.idmp[b"p"]) == [b"new"]
    shipped = res.effects[0][3]
    assert shipped != payload and b"old" not in shipped
    replica = Engine()
    replica.apply(res.effects[0])
    assert replica.key_digest(b"t") == e.key_digest(b"t")


def test_restore_errors_in_redis_order() -> None:
    e = Engine()
    run(e, "XADD", "s", "1-1", "f", "v")
    good = run(e, "DUMP", "s")
    assert isinstance(good, bytes)

    def err(*argv: bytes | str | int) -> str:
        with pytest.raises(StreamError) as info:
            run(e, "RESTORE", *argv)
        return info.value.line

    assert err("s", "x", b"junk", "BOGUS") == "ERR syntax error"
    assert err("s", 0, good, "IDLETIME", -1) == "ERR Invalid IDLETIME value, must be >= 0"
    assert err("s", 0, good, "FREQ", 256) == "ERR Invalid FREQ value, must be >= 0 and <= 255"
    assert err("s", 0, good, "FREQ", 1, "IDLETIME", 1) == "ERR syntax error"
    assert err("s", 0, good, "IDLETIME") == "ERR syntax error"
    assert err("s", "x", b"junk") == "BUSYKEY Target key name already exists."
    assert err("t", "x", good) == "ERR value is not an integer or out of range"
    assert err("t", -1, good) == "ERR Invalid TTL value, must be >= 0"
    assert err("t", 0, b"short") == "ERR DUMP payload version or checksum are wrong"
    newer = good[:-10] + b"\x0f\x00"
    assert err("t", 0, rdb_crc(newer)) == "ERR DUMP payload version or checksum are wrong"
    assert err("t", 0, good[:-1] + bytes([good[-1] ^ 1])) == (
        "ERR DUMP payload version or checksum are wrong"
    )
    assert err("t", 0, rdb.seal(b"\x04\x00")) == "ERR Bad data format"  # a hash: not ours
    assert "t" not in [k.decode() for k in e.keyspace]
    # options are case-insensitive; IDLETIME / FREQ are accepted and change nothing
    assert run(e, "RESTORE", "t", 0, good, "replace", "IdleTime", 10) == OK
    assert run(e, "RESTORE", "t", 0, good, "REPLACE", "FREQ", 0) == OK
    # a zero checksum means none, as Redis allows
    assert run(e, "RESTORE", "u", 0, good[:-8] + bytes(8)) == OK


def rdb_crc(body_and_version: bytes) -> bytes:
    return body_and_version + crc64(body_and_version).to_bytes(8, "little")


def test_abstl_in_the_past_deletes_what_replace_names() -> None:
    e = Engine()
    run(e, "SET", "k", "v")
    payload = run(e, "DUMP", "k")
    res = e.execute([b"RESTORE", b"k", b"1000", payload, b"ABSTTL", b"REPLACE"], NOW)  # type: ignore[list-item]
    assert res.reply == OK and res.effects == [[b"DEL", b"k"]]
    assert b"k" not in e.keyspace
    res = e.execute([b"RESTORE", b"k", b"1000", payload, b"ABSTTL"], NOW)  # type: ignore[list-item]
    assert res.reply == OK and res.effects == [] and b"k" not in e.keyspace


def test_restore_with_a_ttl_expires_and_ships_the_absolute_time() -> None:
    e = Engine()
    run(e, "XADD", "s", "1-1", "f", "v")
    payload = run(e, "DUMP", "s")
    res = e.execute([b"RESTORE", b"t", b"5000", payload], NOW)  # type: ignore[list-item]
    assert res.effects == [[b"RESTORE", b"t", b"%d" % (NOW + 5000), payload, b"REPLACE", b"ABSTTL"]]
    assert e.execute([b"PTTL", b"t"], NOW).reply == 5000
    e.execute([b"RESTORE", b"u", b"%d" % (NOW + 7), payload, b"ABSTTL"], NOW)  # type: ignore[list-item]
    assert e.execute([b"PEXPIRETIME", b"u"], NOW).reply == NOW + 7
    replica = Engine()
    for effect in res.effects:
        replica.apply(effect)
    assert replica.execute([b"PEXPIRETIME", b"t"], NOW).reply == NOW + 5000


def test_corrupt_payloads_change_nothing() -> None:
    e = _engine()
    payload = run(e, "DUMP", "s0")
    assert isinstance(payload, bytes)
    body = payload[:-10]
    before = e.digest()
    rng = random.Random(11)
    outcomes = {"loaded": 0, "refused": 0}
    for _ in range(600):
        b = bytearray(body)
        for _ in range(rng.randint(1, 3)):
            b[rng.randrange(len(b))] = rng.randrange(256)
        cut = rng.choice([len(b), len(b), rng.randrange(len(b))])
        try:
            run(e, "RESTORE", "s0", 0, rdb.seal(bytes(b[:cut])), "REPLACE")
        except StreamError as err:
            assert err.line == "ERR Bad data format"
            assert e.digest() == before
            outcomes["refused"] += 1
            continue
        e.check_integrity()  # whatever loads keeps every invariant
        outcomes["loaded"] += 1
        run(e, "RESTORE", "s0", 0, payload, "REPLACE")
    assert outcomes["refused"] > 400


# -- older stream types, written here as Redis 6.2 / 7.0 / 7.2 / 8.6 write them ---------------


def old_payload(s: Stream, kind: int) -> bytes:
    w = Writer()
    w.raw(bytes((kind,)))
    w.length(len(s.rax))
    for key, lp in s.nodes():
        w.string(key)
        w.string(bytes(lp))
    w.length(s.length)
    ids = [s.last_id] + ([s.first_id, s.max_deleted_entry_id] if kind >= 19 else [])
    for i in ids:
        w.length(i.ms)
        w.length(i.seq)
    if kind >= 19:
        w.length(s.entries_added)
    w.length(len(s.cgroups))
    for name in sorted(s.cgroups):
        g = s.cgroups[name]
        w.string(name)
        w.length(g.last_id.ms)
        w.length(g.last_id.seq)
        if kind >= 19:
            w.length(as_uint64(g.entries_read))
        w.length(len(g.pel))
        for entry_id, nack in g.pel.items():
            w.raw(entry_id.key())
            w.millis(nack.delivery_time)
            w.length(nack.delivery_count)
        w.length(len(g.consumers))
        for cname in sorted(g.consumers):
            c = g.consumers[cname]
            w.string(cname)
            w.millis(c.seen_time)
            if kind >= 21:
                w.millis(c.active_time)
            w.length(len(c.pel))
            for entry_id, _ in c.pel.items():
                w.raw(entry_id.key())
    if kind >= 26:
        w.length(s.idmp_duration)
        w.length(s.idmp_maxsize)
        w.length(len(s.idmp))
        for pid in sorted(s.idmp):
            w.string(pid)
            w.length(len(s.idmp[pid]))
            for iid, entry_id in s.idmp[pid].items():
                w.string(iid)
                w.length(entry_id.ms)
                w.length(entry_id.seq)
        w.length(s.iids_added)
        w.length(s.iids_duplicates)
    body = b"".join(w.parts) + {15: b"\x09\x00", 19: b"\x0a\x00", 21: b"\x0b\x00"}.get(
        kind, b"\x0d\x00"
    )
    return rdb_crc(body)


def _grouped() -> Engine:
    e = Engine()
    for i in range(1, 20):
        run(e, "XADD", "s", f"{i}-1", "f", i)
    run(e, "XDEL", "s", "15-1")
    run(e, "XGROUP", "CREATE", "s", "g", "0")
    run(e, "XREADGROUP", "GROUP", "g", "c1", "COUNT", 3, "STREAMS", "s", ">", now=NOW)
    run(e, "XCLAIM", "s", "g", "c2", 0, "2-1", now=NOW + 7)  # active_time != seen_time
    run(e, "XGROUP", "CREATE", "s", "behind", "0")
    run(e, "XADD", "s", "IDMP", "p", "i", "*", "f", "v", now=NOW)
    return e


@pytest.mark.parametrize("kind", [15, 19, 21, 26])
def test_older_stream_types_load_as_redis_fills_them(kind: int) -> None:
    e = _grouped()
    s = e.keyspace.get(b"s")
    assert isinstance(s, Stream)
    copy = Engine()
    run(copy, "RESTORE", "s", 0, old_payload(s, kind))
    copy.check_integrity()
    t = copy.keyspace.get(b"s")
    assert isinstance(t, Stream)
    assert t.range(MIN_ID, StreamID(2**64 - 1, 2**64 - 1)) == s.range(
        MIN_ID, StreamID(2**64 - 1, 2**64 - 1)
    )
    assert (t.length, t.last_id, t.first_id) == (s.length, s.last_id, s.first_id)
    if kind == 15:  # no counters before 7.0: Redis takes them from what it has
        assert (t.entries_added, t.max_deleted_entry_id) == (t.length, MIN_ID)
        # entries_read estimated: impossible for an ID inside the stream, 0 before its start
        assert t.cgroups[b"g"].entries_read == -1
        assert t.cgroups[b"behind"].entries_read == 0
    else:
        assert (t.entries_added, t.max_deleted_entry_id) == (
            s.entries_added,
            s.max_deleted_entry_id,
        )
        assert t.cgroups[b"g"].entries_read == s.cgroups[b"g"].entries_read
    c2 = t.cgroups[b"g"].consumers[b"c2"]
    if kind < 21:
        assert c2.active_time == c2.seen_time
    else:
        assert c2.active_time == s.cgroups[b"g"].consumers[b"c2"].active_time
    assert bool(t.idmp) == (kind >= 26)


def test_unowned_pel_entry_outside_a_nack_zone_is_bad_data() -> None:
    e = _grouped()
    s = e.keyspace.get(b"s")
    assert isinstance(s, Stream)
    g = s.cgroups[b"g"]
    g.consumers[b"c1"].pel.remove(StreamID(1, 1))  # its owner forgets it: unowned in type 21
    with pytest.raises(StreamError, match="Bad data format"):
        run(Engine(), "RESTORE", "s", 0, old_payload(s, 21))


def test_node_without_live_entries_is_refused_as_redis_8_8_does() -> None:
    """An exact MINID trim can leave a node of tombstones (streamTrim keeps it); Redis 8.8's
    loader wants lp_live >= 1 in every node (redis#15124), so such a stream's DUMP does not
    RESTORE there either (7.0 accepted it)."""
    e = Engine()
    for i in range(1, 4):
        run(e, "XADD", "s", f"{i}-0", "f", "v")
    run(e, "XDEL", "s", "3-0")
    run(e, "XTRIM", "s", "MINID", "3-0")
    s = e.keyspace.get(b"s")
    assert isinstance(s, Stream) and s.length == 0 and len(s.rax) == 1
    with pytest.raises(StreamError, match="Bad data format"):
        run(e, "RESTORE", "t", 0, run(e, "DUMP", "s"))


# DUMP payloads a Redis 8.8.0 server wrote: RPUSH l a b 1 (a quicklist of one listpack node),
# SADD w a b (a listpack set), SADD z 3 1 2 (an intset)
REDIS_8_8 = {
    b"l": "1201020f0f00000003008161028162020101ff0e009240733514fd4d53",
    b"w": "140d0d0000000200816102816202ff0e0011686fb8e70f2bac",
    b"z": "0b0e02000000030000000100020003000e00d759849d3e5d596a",
}


def test_redis_8_8_list_and_set_encodings_restore() -> None:
    e = Engine()
    for key, payload in REDIS_8_8.items():
        assert e.execute([b"RESTORE", key, b"0", bytes.fromhex(payload)]).reply == OK
    assert e.execute([b"LRANGE", b"l", b"0", b"-1"]).reply == [b"a", b"b", b"1"]
    assert e.execute([b"SMEMBERS", b"w"]).reply in ([b"a", b"b"], [b"b", b"a"])
    assert sorted(e.execute([b"SMEMBERS", b"z"]).reply) == [b"1", b"2", b"3"]  # type: ignore[type-var]


def _body(kind: int, *strings: bytes, lengths: tuple[int, ...] = ()) -> bytes:
    w = Writer()
    w.raw(bytes((kind,)))
    for n in lengths:
        w.length(n)
    for s in strings:
        w.string(s)
    return rdb.seal(b"".join(w.parts))


def test_malformed_compact_encodings_are_bad_data() -> None:
    intset = bytes.fromhex("0200000003000000010003000200")  # not ascending
    wide = bytes.fromhex("0300000001000000010000")  # a 3-byte width
    twice = rdb_listpack([b"a", b"a"])
    empty = rdb_listpack([])
    for payload in (
        _body(rdb.TYPE_SET_INTSET, intset),
        _body(rdb.TYPE_SET_INTSET, wide),
        _body(rdb.TYPE_SET_LISTPACK, twice),
        _body(rdb.TYPE_SET_LISTPACK, empty),
        _body(rdb.TYPE_LIST_QUICKLIST_2, empty, lengths=(1, 2)),  # only an empty node
        _body(rdb.TYPE_LIST_QUICKLIST_2, b"x", lengths=(1, 3)),  # container 3
        _body(rdb.TYPE_LIST_QUICKLIST_2, b"\x07\x00\x00\x00\x01\x00", lengths=(1, 2)),  # cut
    ):
        e = Engine()
        with pytest.raises(StreamError, match="Bad data format"):
            e.execute([b"RESTORE", b"k", b"0", payload])
        assert e.key_count() == 0


def rdb_listpack(items: list[bytes]) -> bytes:
    return bytes(listpack.build(items))
