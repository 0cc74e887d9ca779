"""DUMP/RESTORE against Debian's redis-server 7.0.15.

7.0 dumps RDB version 10 (streams as type 19, STREAM_LISTPACKS_2); the engine dumps Redis
8.8's version 14 (type 27), which 7.0 refuses as newer than its own, as any Redis refuses a
newer version. So the direction tested is 7.0 -> engine: a stream 7.0 built, restored here,
answers XRANGE / XINFO / XPENDING as 7.0 does, and dumped again its nodes are 7.0's bytes
(listpacks, LZF included). Strings are type 0 in both versions: their payloads agree byte for
byte apart from the footer.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest
from redis_conn import RedisConn, RedisServer

from xstream.engine import Engine, StreamError
from xstream.engine.rdbio import Reader
from xstream.engine.reply import Reply, flatten

pytestmark = pytest.mark.compat

NEWER = {  # fields 7.0 does not have (7.2+, 8.6+, 8.8)
    b"idmp-duration", b"idmp-maxsize", b"pids-tracked", b"iids-tracked", b"iids-added",
    b"iids-duplicates", b"nacked-count", b"active-time", b"inactive",
}  # fmt: skip
UNCOMPARED = {b"lag", b"idle"}  # 7.4's lag rules differ from 7.0's; idle reads each clock


def strip(reply: Reply) -> Reply:
    """A flattened reply with the fields of NEWER and UNCOMPARED left out, at any depth."""
    if not isinstance(reply, list):
        return reply
    keys = reply[::2]
    is_map = len(reply) % 2 == 0 and keys and all(isinstance(k, bytes) for k in keys)
    if is_map and any(k in NEWER | UNCOMPARED or k in (b"name", b"length") for k in keys):
        out: list[Reply] = []
        for k, v in zip(keys, reply[1::2], strict=True):
            if k not in NEWER | UNCOMPARED:
                out += [k, strip(v)]
        return out
    return [strip(x) for x in reply]


class Pair:
    def __init__(self, conn: RedisConn) -> None:
        self.conn = conn
        self.engine = Engine()

    def seven(self, *args: str | bytes | int) -> Reply:
        reply = self.conn.call(*args)
        assert not isinstance(reply, StreamError), (args, reply)
        return reply

    def ours(self, *args: str | bytes | int) -> Reply:
        argv = [a if isinstance(a, bytes) else str(a).encode() for a in args]
        return flatten(self.engine.execute(argv, 0).reply)

    def move(self, key: str) -> bytes:
        """DUMP in 7.0, RESTORE here; the payload."""
        payload = self.seven("DUMP", key)
        assert isinstance(payload, bytes) and payload[-10:-8] == b"\x0a\x00"  # RDB version 10
        assert self.ours("RESTORE", key, 0, payload, "REPLACE") == "OK"
        self.engine.check_integrity()
        return payload

    def same(self, *args: str | bytes | int) -> None:
        assert strip(self.ours(*args)) == strip(self.seven(*args)), args


@pytest.fixture
def pair(redis_server: RedisServer) -> Iterator[Pair]:
    redis_server.flushall()
    with redis_server.conn() as conn:
        yield Pair(conn)


def test_strings_byte_for_byte(pair: Pair) -> None:
    rng = random.Random(2)
    values = [b"", b"0", b"-128", b"32767", b"-2147483648", b"2147483648", b"12345678901",
              b"007", b"x" * 20, b"x" * 21, bytes(range(256)) * 3]  # fmt: skip
    values += [bytes(rng.choice(b"ab-01") for _ in range(rng.randint(0, 600))) for _ in range(60)]
    for v in values:
        pair.seven("SET", "k", v)
        payload = pair.seven("DUMP", "k")
        assert isinstance(payload, bytes)
        ours = pair.ours("DUMP", "k") if pair.ours("SET", "k", v) == "OK" else None
        assert isinstance(ours, bytes) and ours[:-10] == payload[:-10], v
        pair.move("k")
        assert pair.ours("GET", "k") == v


def _nodes_section(payload: bytes) -> bytes:
    """The bytes of a stream payload's nodes (count, then master IDs and listpacks)."""
    r = Reader(payload[1:-10])
    for _ in range(r.length()):
        r.string()
        r.string()
    return payload[1 : 1 + r.pos]


def _no_idle(rows: Reply) -> list[Reply]:
    assert isinstance(rows, list)
    return [[r[0], r[1], r[3]] for r in rows]  # type: ignore[index]


def _compare(pair: Pair, key: str) -> None:
    payload = pair.move(key)
    pair.same("XRANGE", key, "-", "+")
    pair.same("XINFO", "STREAM", key)
    pair.same("XINFO", "STREAM", key, "FULL")
    groups = pair.seven("XINFO", "GROUPS", key)
    pair.same("XINFO", "GROUPS", key)
    assert isinstance(groups, list)
    for g in groups:
        name = dict(zip(g[::2], g[1::2], strict=True))[b"name"]  # type: ignore[index]
        pair.same("XPENDING", key, name)
        ext = ("XPENDING", key, name, "-", "+", 1000)  # idle (column 2) reads each clock
        assert _no_idle(pair.ours(*ext)) == _no_idle(pair.seven(*ext))
        pair.same("XINFO", "CONSUMERS", key, name)
    ours = pair.ours("DUMP", key)
    assert isinstance(ours, bytes) and ours[0] == 27
    assert _nodes_section(ours) == _nodes_section(payload)


def _build(pair: Pair, key: str, n: int, seed: int) -> None:
    rng = random.Random(seed)
    for i in range(n):
        fields: list[str | int] = ["f", i, "name", "x" * rng.randint(0, 40)]
        if rng.random() < 0.2:
            fields += ["extra", rng.randint(-(10**12), 10**12)]
        pair.seven("XADD", key, "*", *fields)


def test_plain_streams(pair: Pair) -> None:
    _build(pair, "s", 500, 1)
    _compare(pair, "s")
    pair.seven("XADD", "one", "5-5", "f", "v")
    _compare(pair, "one")


def test_deletions_trims_and_counters(pair: Pair) -> None:
    _build(pair, "s", 400, 2)
    ids = [row[0] for row in pair.seven("XRANGE", "s", "-", "+")]  # type: ignore[index, union-attr]
    pair.seven("XDEL", "s", *ids[:3], ids[50], ids[51], ids[-2])
    pair.seven("XTRIM", "s", "MAXLEN", 300)
    _compare(pair, "s")
    pair.seven("XADD", "e", "1-1", "f", "v")
    pair.seven("XDEL", "e", "1-1")
    pair.seven("XSETID", "e", "99-9", "ENTRIESADDED", 40, "MAXDELETEDID", "50-0")
    _compare(pair, "e")


def test_groups_consumers_and_pels(pair: Pair) -> None:
    _build(pair, "s", 300, 3)
    ids = [row[0] for row in pair.seven("XRANGE", "s", "-", "+")]  # type: ignore[index, union-attr]
    pair.seven("XGROUP", "CREATE", "s", "g1", "0")
    pair.seven("XGROUP", "CREATE", "s", "g2", "$")
    pair.seven("XGROUP", "CREATE", "s", "g3", ids[10], "ENTRIESREAD", 11)
    pair.seven("XREADGROUP", "GROUP", "g1", "alice", "COUNT", 20, "STREAMS", "s", ">")
    pair.seven("XREADGROUP", "GROUP", "g1", "bob", "COUNT", 7, "STREAMS", "s", ">")
    pair.seven("XREADGROUP", "GROUP", "g3", "123", "COUNT", 3, "STREAMS", "s", ">")
    pair.seven("XGROUP", "CREATECONSUMER", "s", "g1", "nobody")
    pair.seven("XCLAIM", "s", "g1", "bob", 0, ids[0], ids[1], "RETRYCOUNT", 5)
    pair.seven("XACK", "s", "g1", ids[2], ids[3])
    pair.seven("XDEL", "s", ids[4], ids[25])
    _compare(pair, "s")


def test_small_nodes(redis_factory: object) -> None:
    server = redis_factory(stream_node_max_entries=3, stream_node_max_bytes=200)  # type: ignore[operator]
    with server.conn() as conn:
        pair = Pair(conn)
        _build(pair, "s", 120, 4)
        pair.seven("XTRIM", "s", "MINID", "~", "0-1")
        ids = [row[0] for row in pair.seven("XRANGE", "s", "-", "+")]  # type: ignore[index, union-attr]
        pair.seven("XDEL", "s", *ids[::4])
        _compare(pair, "s")


def test_lists_and_sets_in_7_0_encodings(pair: Pair) -> None:
    """7.0 dumps lists as quicklists (type 18: listpack nodes, a plain node for an element
    over 8 KiB), integer sets as intsets (11), other sets as type 2: each restores here."""
    writes: list[tuple[str | int, ...]] = [
        ("RPUSH", "l", "a", "b", 1, -7, "x" * 70, 2**40),
        ("RPUSH", "big", *range(3000)),
        ("RPUSH", "huge", "x" * 9000, "y"),
        ("SADD", "ints", 1, 2, -5, 70000, 5_000_000_000),
        ("SADD", "words", "a", "b", 12),
    ]
    for words in writes:
        pair.seven(*words)
    for key, encoding in [("l", b"quicklist"), ("big", b"quicklist"), ("huge", b"quicklist"),
                          ("ints", b"intset"), ("words", b"hashtable")]:  # fmt: skip
        assert pair.seven("OBJECT", "ENCODING", key) == encoding
        pair.move(key)
        pair.same("TYPE", key)
    for key in ("l", "big", "huge"):
        pair.same("LRANGE", key, 0, -1)
    for key in ("ints", "words"):
        assert sorted(pair.ours("SMEMBERS", key)) == sorted(pair.seven("SMEMBERS", key))  # type: ignore[arg-type]


def test_7_0_refuses_8_8_payloads_as_newer(pair: Pair) -> None:
    pair.ours("XADD", "s", "1-1", "f", "v")
    pair.ours("SET", "k", "v")
    for key in ("s", "k"):
        payload = pair.ours("DUMP", key)
        assert isinstance(payload, bytes)
        err = pair.conn.call("RESTORE", key, 0, payload)
        assert isinstance(err, StreamError)
        assert err.line == "ERR DUMP payload version or checksum are wrong"


@pytest.mark.parametrize(
    "tail",
    [
        ["BOGUS"],
        ["IDLETIME", -1],
        ["IDLETIME", "x"],
        ["FREQ", 256],
        ["FREQ", 1, "IDLETIME", 1],
        ["IDLETIME"],
        ["REPLACE", "ABSTTL", "IDLETIME", 5],
    ],
)
def test_restore_option_errors_as_7_0(pair: Pair, tail: list[str | int]) -> None:
    pair.seven("SET", "src", "v")
    payload = pair.seven("DUMP", "src")
    assert isinstance(payload, bytes)
    for key, ttl, body in [("new", 0, payload), ("new", "x", payload), ("new", -5, payload),
                           ("new", 0, b"short"), ("new", 0, payload[:-1] + b"\x00"),
                           ("new", 0, b"\x04\x00" + payload[-10:])]:  # fmt: skip
        argv = ["RESTORE", key, ttl, body, *tail]
        seven = pair.conn.call(*argv)
        try:
            ours: Reply | StreamError = pair.ours(*argv)
        except StreamError as e:
            ours = e
        if isinstance(seven, StreamError) or isinstance(ours, StreamError):
            assert ours == seven, argv
        pair.conn.call("DEL", "new")
        pair.ours("DEL", "new")
    pair.ours("SET", "src", "v")
    busy = ["RESTORE", "src", 0, payload, *tail]
    seven = pair.conn.call(*busy)
    try:
        ours = pair.ours(*busy)
    except StreamError as e:
        ours = e
    assert (ours == seven) or not isinstance(seven, StreamError), busy
