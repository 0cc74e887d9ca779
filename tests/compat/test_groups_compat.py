"""Consumer groups on the engine and on a real redis-server, replies compared.

The reference is Redis 8.8; the server here is Debian's 7.0.15. Replies are compared in RESP2
form (`flatten`) and errors by their line. Only clock readings are left out: the idle column of
XPENDING's extended form and of XINFO CONSUMERS, and the absolute times of XINFO STREAM FULL
(seen-time, delivery times), which come from each side's own clock. Min-idle arguments are 0
or far larger than a test runs, so what is claimed never depends on the clocks.

Where 7.0 differs from 8.8 by design, the case asserts the engine's 8.8 answer and the server's
7.0 answer separately and says why: 7.0's XINFO CONSUMERS has no `inactive`, its XINFO STREAM
FULL no active-time / nacked-count, it does not cap ENTRIESREAD, creates no consumer for a read
or claim that delivers nothing, predates the 7.4+ lag rules (redis#13338, #13473, #13958), and
words two XREADGROUP errors differently (stream-errors.md `[7.0.15]`).
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from redis_conn import RedisConn, RedisServer

from xstream.engine import NULL_ARRAY, Engine, StreamError
from xstream.engine.reply import Reply, flatten

pytestmark = pytest.mark.compat

Word = str | bytes | int
NEWER_STREAM_FIELDS = {  # XINFO STREAM fields 7.0 does not have (IDMP, 8.6+)
    b"idmp-duration", b"idmp-maxsize", b"pids-tracked", b"iids-tracked", b"iids-added",
    b"iids-duplicates",
}  # fmt: skip
NEWER_GROUP_FIELDS = {b"nacked-count"}  # 8.8
NEWER_CONSUMER_FIELDS = {b"active-time", b"inactive"}  # 7.2
CLOCK_FIELDS = {b"idle", b"seen-time"}


def words(*ws: Word) -> list[bytes]:
    return [w if isinstance(w, bytes) else str(w).encode() for w in ws]


def pairs(flat: Reply) -> list[tuple[Reply, Reply]]:
    assert isinstance(flat, list)
    return list(zip(flat[::2], flat[1::2], strict=True))


def common(flat: Reply, drop: set[bytes]) -> list[Reply]:
    """A flattened map without the fields in `drop` and with clock fields blanked."""
    out: list[Reply] = []
    for k, v in pairs(flat):
        if k in drop:
            continue
        out += [k, None if k in CLOCK_FIELDS else v]
    return out


def common_full(flat: Reply) -> list[Reply]:
    """XINFO STREAM FULL as both versions have it, absolute times blanked."""
    out: list[Reply] = []
    for k, v in pairs(flat):
        if k in NEWER_STREAM_FIELDS:
            continue
        out += [k, [common_group(g) for g in v] if k == b"groups" else v]  # type: ignore[union-attr]
    return out


def common_group(flat: Reply) -> list[Reply]:
    out: list[Reply] = []
    for k, v in pairs(flat):
        if k in NEWER_GROUP_FIELDS:
            continue
        if k == b"pending":
            out += [k, [[row[0], row[1], None, row[3]] for row in v]]  # type: ignore[index, union-attr]
        elif k == b"consumers":
            out += [k, [common_consumer(c) for c in v]]  # type: ignore[union-attr]
        else:
            out += [k, v]
    return out


def common_consumer(flat: Reply) -> list[Reply]:
    out: list[Reply] = []
    for k, v in pairs(flat):
        if k in NEWER_CONSUMER_FIELDS:
            continue
        if k == b"pending":
            out += [k, [[row[0], None, row[2]] for row in v]]  # type: ignore[index, union-attr]
        else:
            out += [k, None if k in CLOCK_FIELDS else v]
    return out


def comparable(argv: list[bytes], reply: Reply | StreamError) -> Reply | StreamError:
    """The part of a reply both versions must agree on (clock readings and 8.x-only fields
    dropped); errors and other replies as they are."""
    if isinstance(reply, StreamError) or not isinstance(reply, list):
        return reply
    cmd = [a.upper() for a in argv[:2]]
    if cmd[0] == b"XPENDING" and len(argv) > 3:
        return [[r[0], r[1], None, r[3]] for r in reply]  # type: ignore[index]
    if cmd == [b"XINFO", b"CONSUMERS"]:
        return [common(c, NEWER_CONSUMER_FIELDS) for c in reply]
    if cmd == [b"XINFO", b"STREAM"]:
        return common_full(reply) if len(argv) > 3 else common(reply, NEWER_STREAM_FIELDS)
    return reply


class Both:
    """An engine and a redis-server fed the same commands; the engine's clock is the wall's."""

    def __init__(self, conn: RedisConn) -> None:
        self.conn = conn
        self.engine = Engine()
        assert conn.call("FLUSHALL") == "OK"

    def both(self, *ws: Word) -> tuple[Reply | StreamError, Reply | StreamError]:
        argv = words(*ws)
        try:
            ours: Reply | StreamError = flatten(
                self.engine.execute(argv, int(time.time() * 1000)).reply
            )
        except StreamError as err:
            ours = err
        self.engine.check_integrity()
        return ours, self.conn.call(*argv)

    def same(self, *ws: Word) -> Reply | StreamError:
        ours, theirs = self.both(*ws)
        argv = words(*ws)
        assert comparable(argv, ours) == comparable(argv, theirs), ws
        return ours

    def ok(self, *ws: Word) -> Reply:
        reply = self.same(*ws)
        assert not isinstance(reply, StreamError), (ws, reply)
        return reply

    def differs(self, *ws: Word, ours: Reply | StreamError, seven: Reply | StreamError) -> None:
        """A documented 7.0 / 8.8 difference: each side must give its own version's answer."""
        got_ours, got_seven = self.both(*ws)
        assert got_ours == ours, ws
        assert got_seven == seven, ws

    def add(self, key: str, *ids: str) -> None:
        for i in ids:
            self.ok("XADD", key, i, "f", i)

    def state(self, key: str = "s") -> None:
        """Everything group-related about `key` must agree."""
        self.ok("XINFO", "GROUPS", key)
        self.ok("XINFO", "STREAM", key, "FULL", "COUNT", 0)
        groups = self.engine.execute(words("XINFO", "GROUPS", key), 0).reply
        assert isinstance(groups, list)
        for g in groups:
            name = dict(g)[b"name"]  # type: ignore[arg-type]
            self.ok("XPENDING", key, name)
            self.ok("XPENDING", key, name, "-", "+", 100)
            self.ok("XINFO", "CONSUMERS", key, name)


@pytest.fixture
def both(redis_server: RedisServer) -> Iterator[Both]:
    with redis_server.conn() as conn:
        yield Both(conn)


def test_xgroup_create_setid_destroy(both: Both) -> None:
    both.add("s", "1-1", "2-1", "3-1")
    both.ok("XGROUP", "CREATE", "s", "g", "0")
    both.ok("XGROUP", "CREATE", "s", "d", "$")
    both.ok("XGROUP", "CREATE", "s", "m", "2")
    both.ok("XGROUP", "CREATE", "s", "e", "3-1", "ENTRIESREAD", 3)
    both.ok("XGROUP", "CREATE", "new", "g", "$", "MKSTREAM")
    both.ok("XGROUP", "create", "new2", "g", "0", "mkstream", "entriesread", 0)
    for ws in (
        ["s", "g", "0"],
        ["s", "g", "x"],
        ["s", "x", "-"],
        ["s", "x", "+"],
        ["nokey", "g", "$"],
        ["s", "x", "0", "ENTRIESREAD", -2],
        ["s", "x", "0", "ENTRIESREAD", "y"],
        ["s", "x", "0", "ENTRIESREAD"],
        ["s", "x", "0", "FOO"],
        ["nokey", "g", "0", "ENTRIESREAD", "x"],
        ["nokey", "g", "$", "ENTRIESREAD", 1, "ENTRIESREAD", 2],
        ["s", "x", "$", "ENTRIESREAD", 1, "ENTRIESREAD", 2],
        ["nokey", "g", "$", "MKSTREAM", "MKSTREAM", "MKSTREAM", "MKSTREAM"],
        ["nokey", "g", "x", "MKSTREAM"],
    ):
        assert isinstance(both.same("XGROUP", "CREATE", *ws), StreamError), ws
    assert both.same("EXISTS", "nokey") == 0
    both.ok("XGROUP", "SETID", "s", "g", "2-1", "ENTRIESREAD", 2)
    both.ok("XGROUP", "SETID", "s", "d", "-")
    both.ok("XGROUP", "SETID", "s", "m", "+")
    both.ok("XGROUP", "SETID", "s", "e", "$")
    for ws in (
        ["nokey", "g", "0"],
        ["s", "nog", "0"],
        ["s", "g", "bad"],
        ["s", "g", "0", "MKSTREAM"],
        ["s", "g", "0", "ENTRIESREAD", -5],
        ["nokey", "g", "0", "ENTRIESREAD", 1, "ENTRIESREAD", 2],
        ["s", "nog", "0", "ENTRIESREAD", 1, "ENTRIESREAD", 2],
        ["s", "g", "0", "ENTRIESREAD", 1, "ENTRIESREAD", 2],
    ):
        assert isinstance(both.same("XGROUP", "SETID", *ws), StreamError), ws
    both.state()
    assert both.ok("XGROUP", "DESTROY", "s", "d") == 1
    assert both.ok("XGROUP", "DESTROY", "s", "d") == 0
    assert isinstance(both.same("XGROUP", "DESTROY", "nokey", "d"), StreamError)
    assert isinstance(both.same("XGROUP", "FOO", "s", "g"), StreamError)
    assert isinstance(both.same("XGROUP", "CREATE", "s", "g"), StreamError)
    both.state()


def test_createconsumer_delconsumer(both: Both) -> None:
    both.add("s", "1-1", "2-1", "3-1")
    both.ok("XGROUP", "CREATE", "s", "g", "0")
    assert both.ok("XGROUP", "CREATECONSUMER", "s", "g", "a") == 1
    assert both.ok("XGROUP", "CREATECONSUMER", "s", "g", "a") == 0
    both.ok("XREADGROUP", "GROUP", "g", "a", "COUNT", 2, "STREAMS", "s", ">")
    both.ok("XREADGROUP", "GROUP", "g", "b", "STREAMS", "s", ">")
    both.state()
    assert both.ok("XGROUP", "DELCONSUMER", "s", "g", "a") == 2
    assert both.ok("XGROUP", "DELCONSUMER", "s", "g", "a") == 0
    assert isinstance(both.same("XGROUP", "DELCONSUMER", "s", "nog", "a"), StreamError)
    assert isinstance(both.same("XGROUP", "CREATECONSUMER", "nokey", "g", "a"), StreamError)
    both.state()


def test_xreadgroup(both: Both) -> None:
    both.add("s", "1-1", "2-1", "3-1", "4-1", "5-1")
    both.add("t", "1-1")
    both.ok("XGROUP", "CREATE", "s", "g", "0")
    both.ok("XGROUP", "CREATE", "t", "g", "0")
    both.ok("XREADGROUP", "GROUP", "g", "a", "COUNT", 2, "STREAMS", "s", ">")
    both.ok("XREADGROUP", "GROUP", "g", "b", "COUNT", 1, "NOACK", "STREAMS", "s", ">")
    both.ok("XREADGROUP", "GROUP", "g", "b", "COUNT", -1, "STREAMS", "s", "t", ">", ">")
    both.ok("XDEL", "s", "2-1", "4-1")
    both.ok("XREADGROUP", "GROUP", "g", "a", "STREAMS", "s", "0")  # [2-1, nil]
    both.ok("XREADGROUP", "GROUP", "g", "b", "COUNT", 1, "STREAMS", "s", "t", "0", "0")
    both.ok("XREADGROUP", "GROUP", "g", "b", "STREAMS", "s", "99-0")
    both.ok("XREADGROUP", "GROUP", "g", "a", "BLOCK", 0, "STREAMS", "s", "0-0")
    both.state()
    both.ok("XGROUP", "SETID", "s", "g", "0")
    both.ok("XREADGROUP", "GROUP", "g", "a", "STREAMS", "s", ">")  # re-delivery
    both.add("s", "6-1", "7-1")
    # Redis encodes `>` as the maximum ID: reading "after" it reads new entries
    both.ok("XREADGROUP", "GROUP", "g", "a", "COUNT", 1, "STREAMS", "s", f"{2**64 - 1}-{2**64 - 1}")
    both.state()
    both.state("t")


@pytest.mark.parametrize(
    "ws",
    [
        ["GROUP", "nog", "c", "STREAMS", "s", ">"],
        ["GROUP", "g", "c", "STREAMS", "nokey", ">"],
        ["GROUP", "g", "c", "STREAMS", "s", "$"],
        ["GROUP", "g", "c", "STREAMS", "s", "-"],
        ["GROUP", "g", "c", "STREAMS", "s", "x"],
        ["COUNT", 1, "BLOCK", 1, "STREAMS", "s", ">"],
        ["GROUP", "g", "c", "FOO", "STREAMS", "s", ">"],
        ["GROUP", "g", "c", "COUNT", 1, "s", ">"],
        ["GROUP", "g", "c", "COUNT", "x", "STREAMS", "s", ">"],
        ["GROUP", "g", "c", "BLOCK", -1, "STREAMS", "s", ">"],
        ["GROUP", "g", "c", "BLOCK", "x", "STREAMS", "s", ">"],
        ["GROUP", "g", "c", "STREAMS", "s"],
        ["GROUP", "g", "c", "STREAMS", "s", "str", ">", ">"],
        ["GROUP", "g", "c", "STREAMS", "str", "s", ">", ">"],
    ],
)
def test_xreadgroup_errors(both: Both, ws: list[Word]) -> None:
    both.add("s", "1-1")
    both.ok("SET", "str", "v")
    both.ok("XGROUP", "CREATE", "s", "g", "0")
    assert isinstance(both.same("XREADGROUP", *ws), StreamError)
    both.state()  # nothing served, no consumer created


def test_xack(both: Both) -> None:
    both.add("s", "1-1", "2-1", "3-1")
    both.ok("XGROUP", "CREATE", "s", "g", "0")
    both.ok("XREADGROUP", "GROUP", "g", "a", "STREAMS", "s", ">")
    assert isinstance(both.same("XACK", "s", "g", "1-1", "bad"), StreamError)
    assert isinstance(both.same("XACK", "s", "g", "-"), StreamError)
    assert both.ok("XACK", "s", "g", "1-1", "1-1", "9-9", "2") == 1
    assert both.ok("XACK", "nokey", "g", "bad") == 0
    assert both.ok("XACK", "s", "nog", "bad") == 0
    both.state()


def test_xpending(both: Both) -> None:
    both.add("s", "1-1", "2-1", "3-1", "4-1")
    both.ok("XGROUP", "CREATE", "s", "g", "0")
    both.ok("XGROUP", "CREATE", "s", "empty", "$")
    both.ok("XREADGROUP", "GROUP", "g", "a", "COUNT", 2, "STREAMS", "s", ">")
    both.ok("XREADGROUP", "GROUP", "g", "b", "STREAMS", "s", ">")
    both.ok("XGROUP", "CREATECONSUMER", "s", "g", "idle")
    for ws in (
        ["s", "g"],
        ["s", "empty"],
        ["s", "g", "-", "+", 10],
        ["s", "g", "-", "+", 1],
        ["s", "g", "(1-1", "(4-1", 10],
        ["s", "g", "2", "3", 10],
        ["s", "g", "-", "+", 10, "b"],
        ["s", "g", "-", "+", 10, "nobody"],
        ["s", "g", "-", "+", 0],
        ["s", "g", "-", "+", -1],
        ["s", "g", "IDLE", 0, "-", "+", 10],
        ["s", "g", "IDLE", 99999999, "-", "+", 10],
        ["s", "g", "-", "+", 10, "b", "extra"],
        ["s", "g", "-", "+", 10, "b", "x", "y"],
        ["s", "g", "IDLE", 0, "-", "+", 10, "a", "extra"],
        ["s", "g", "-"],
        ["s", "g", "-", "+"],
        ["s", "g", "-", "+", 1, "c", "a", "b", "c"],
        ["s", "g", "IDLE", 5, "-", "+"],
        ["s", "g", "IDLE", "x", "-", "+"],
        ["s", "g", "-", "+", "x"],
        ["s", "g", "x", "+", 1],
        ["s", "g", "(-", "+", 1],
        ["s", "g", f"({2**64 - 1}-{2**64 - 1}", "+", 1],
        ["s", "g", "-", "(0-0", 1],
        ["s", "nog"],
        ["nokey", "g", "x", "+", 1],
    ):
        both.same("XPENDING", *ws)


def test_xclaim(both: Both) -> None:
    both.add("s", "1-1", "2-1", "3-1", "4-1", "5-1")
    both.ok("XGROUP", "CREATE", "s", "g", "0")
    both.ok("XREADGROUP", "GROUP", "g", "a", "COUNT", 3, "STREAMS", "s", ">")
    both.ok("XCLAIM", "s", "g", "b", 0, "1-1")
    both.ok("XCLAIM", "s", "g", "b", 0, "1-1", "JUSTID")
    both.ok("XCLAIM", "s", "g", "b", 0, "2-1", "RETRYCOUNT", 7, "JUSTID")
    both.ok("XCLAIM", "s", "g", "b", 0, "2-1", "RETRYCOUNT", -3)
    both.ok("XCLAIM", "s", "g", "b", -5, "3-1", "IDLE", 500, "JUSTID")
    both.ok("XCLAIM", "s", "g", "a", 0, "3-1", "TIME", 1000)
    both.ok("XCLAIM", "s", "g", "a", 99999999, "1-1", "2-1")  # not idle enough
    both.ok("XCLAIM", "s", "g", "a", 99999999, "4-1", "FORCE")  # FORCE ignores min-idle
    both.ok("XCLAIM", "s", "g", "a", 0, "5-1", "9-9", "FORCE", "JUSTID")
    both.ok("XCLAIM", "s", "g", "a", 0, "1-1", "1-1", "JUSTID")
    both.state()
    both.ok("XDEL", "s", "1-1", "4-1")
    both.ok("XCLAIM", "s", "g", "b", 0, "1-1", "4-1", "5-1")  # gone ones leave the PEL
    both.ok("XCLAIM", "s", "g", "b", 0, "2-1", "LASTID", "9-0")
    both.state()
    for ws in (
        ["nokey", "g", "b", "x", "1-1"],
        ["s", "nog", "b", "x", "1-1"],
        ["s", "g", "b", "x", "1-1"],
        ["s", "g", "b", 0, "abc"],
        ["s", "g", "b", 0, "2-1", "FOO"],
        ["s", "g", "b", 0, "2-1", "IDLE"],
        ["s", "g", "b", 0, "2-1", "IDLE", "x"],
        ["s", "g", "b", 0, "2-1", "TIME", "x"],
        ["s", "g", "b", 0, "2-1", "RETRYCOUNT", "x"],
        ["s", "g", "b", 0, "2-1", "LASTID", "x"],
        ["s", "g", "b", 0, "2-1", "LASTID", "-"],
        ["s", "g", "b", 0, "2-1", "FORCE", "3-1"],
        ["s", "g", "b", 0],
    ):
        assert isinstance(both.same("XCLAIM", *ws), StreamError), ws
    both.state()


def test_xautoclaim(both: Both) -> None:
    both.add("s", *[f"{i}-1" for i in range(1, 16)])
    both.ok("XGROUP", "CREATE", "s", "g", "0")
    both.ok("XREADGROUP", "GROUP", "g", "a", "STREAMS", "s", ">")
    both.ok("XAUTOCLAIM", "s", "g", "b", 99999999, "0", "COUNT", 1)  # 10 visits
    both.ok("XAUTOCLAIM", "s", "g", "b", 0, "0", "COUNT", 2)
    both.ok("XAUTOCLAIM", "s", "g", "b", 0, "(2-1", "COUNT", 2, "JUSTID")
    both.ok("XDEL", "s", "5-1", "6-1", "9-1")
    both.ok("XAUTOCLAIM", "s", "g", "c", 0, "5-1", "COUNT", 3)
    both.ok("XAUTOCLAIM", "s", "g", "c", 0, "-")
    both.state()
    for ws in (
        ["s", "g", "c", "x", "0"],
        ["s", "g", "c", 0, "x"],
        ["s", "g", "c", 0, f"({2**64 - 1}-{2**64 - 1}"],
        ["s", "g", "c", 0, "0", "COUNT", 0],
        ["s", "g", "c", 0, "0", "COUNT", "x"],
        ["s", "g", "c", 0, "0", "COUNT", 2**59],
        ["s", "g", "c", 0, "0", "COUNT"],
        ["s", "g", "c", 0, "0", "FOO"],
        ["nokey", "g", "c", 0, "0"],
        ["nokey", "g", "c", 0, "0", "FOO"],
        ["s", "nog", "c", 0, "0"],
    ):
        assert isinstance(both.same("XAUTOCLAIM", *ws), StreamError), ws
    both.state()


def test_lag_cases_both_versions_agree_on(both: Both) -> None:
    both.add("s", "1-1", "2-1", "3-1", "4-1", "5-1")
    both.ok("XGROUP", "CREATE", "s", "g", "0")
    both.ok("XGROUP", "CREATE", "s", "end", "$")
    both.ok("XGROUP", "CREATE", "s", "first", "1-1")
    both.ok("XGROUP", "CREATE", "s", "mid", "3-1")
    both.ok("XGROUP", "CREATE", "s", "x", "0")
    both.ok("XINFO", "GROUPS", "s")
    both.ok("XREADGROUP", "GROUP", "g", "c", "COUNT", 2, "STREAMS", "s", ">")
    both.ok("XINFO", "GROUPS", "s")
    both.ok("XDEL", "s", "4-1")  # past g's last ID: lag unknown
    both.ok("XINFO", "GROUPS", "s")
    both.ok("XREADGROUP", "GROUP", "g", "c", "COUNT", 1, "STREAMS", "s", ">")
    both.ok("XINFO", "GROUPS", "s")
    both.ok("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
    both.ok("XREADGROUP", "GROUP", "mid", "c", "STREAMS", "s", ">")
    both.ok("XINFO", "GROUPS", "s")
    both.ok("XGROUP", "SETID", "s", "x", "+")
    both.add("s", "6-1")
    both.ok("XINFO", "GROUPS", "s")
    both.ok("XSETID", "s", "6-1", "ENTRIESADDED", 50)
    both.state()


# -- documented differences ------------------------------------------------------------------


def test_help_wording(both: Both) -> None:
    ours, seven = both.both("XGROUP", "HELP")
    assert isinstance(ours, list) and isinstance(seven, list)
    assert ours[:-1] == seven[:-1]
    assert (ours[-1], seven[-1]) == ("    Print this help.", "    Prints this help.")


def test_xreadgroup_error_wording(both: Both) -> None:
    both.add("s", "1-1")
    both.ok("XGROUP", "CREATE", "s", "g", "0")
    both.differs(
        "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "+",
        ours=StreamError(
            "The + ID is meaningless in the context of XREADGROUP: you want to read the history "
            "of this consumer by specifying a proper ID, or use the > ID to get new messages. "
            "The + ID would just return an empty result set."
        ),
        seven=StreamError("Invalid stream ID specified as stream command argument"),
    )  # fmt: skip
    both.differs(
        "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "t", ">",
        ours=StreamError(
            "Unbalanced 'xreadgroup' list of streams: for each stream key an ID or '>' must be "
            "specified."
        ),
        seven=StreamError(
            "Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified."
        ),
    )  # fmt: skip


def test_entriesread_cap(both: Both) -> None:
    both.add("s", "1-1", "2-1", "3-1")
    both.ok("XGROUP", "CREATE", "s", "g", "3-1", "ENTRIESREAD", 10)
    both.ok("XGROUP", "CREATE", "s", "h", "0")
    both.ok("XGROUP", "SETID", "s", "h", "3-1", "ENTRIESREAD", 99)
    ours, seven = both.both("XINFO", "GROUPS", "s")
    entries_read_lag = [(dict(pairs(g))[b"entries-read"], dict(pairs(g))[b"lag"]) for g in ours]  # type: ignore[union-attr]
    assert entries_read_lag == [(3, 0), (3, 0)]  # capped at entries-added (8.2+)
    entries_read_lag = [(dict(pairs(g))[b"entries-read"], dict(pairs(g))[b"lag"]) for g in seven]  # type: ignore[union-attr]
    assert entries_read_lag == [(10, -7), (99, -96)]


def test_consumers_created_without_deliveries(both: Both) -> None:
    both.add("s", "1-1")
    both.ok("XGROUP", "CREATE", "s", "g", "$")
    # 8.8 creates the consumer of a read that returns nothing, and of a claim that claims
    # nothing; 7.0 created it only when something was delivered or claimed
    both.same("XREADGROUP", "GROUP", "g", "reader", "STREAMS", "s", ">")
    both.same("XCLAIM", "s", "g", "claimer", 0, "1-1")
    both.same("XAUTOCLAIM", "s", "g", "autoclaimer", 0, "0")
    ours, seven = both.both("XINFO", "CONSUMERS", "s", "g")
    assert [dict(pairs(c))[b"name"] for c in ours] == [  # type: ignore[union-attr]
        b"autoclaimer",
        b"claimer",
        b"reader",
    ]
    assert seven == []


def test_newer_info_fields(both: Both) -> None:
    both.add("s", "1-1", "2-1")
    both.ok("XGROUP", "CREATE", "s", "g", "0")
    both.ok("XREADGROUP", "GROUP", "g", "a", "COUNT", 1, "STREAMS", "s", ">")
    both.ok("XGROUP", "CREATECONSUMER", "s", "g", "never")
    ours, seven = both.both("XINFO", "CONSUMERS", "s", "g")
    assert [[k for k, _ in pairs(c)] for c in ours] == [  # type: ignore[union-attr]
        [b"name", b"pending", b"idle", b"inactive"]
    ] * 2
    assert [[k for k, _ in pairs(c)] for c in seven] == [  # type: ignore[union-attr]
        [b"name", b"pending", b"idle"]
    ] * 2
    assert dict(pairs(ours[1]))[b"inactive"] == -1  # type: ignore[index]
    ours_full, _ = both.both("XINFO", "STREAM", "s", "FULL")
    group = dict(pairs(dict(pairs(ours_full))[b"groups"][0]))  # type: ignore[index]
    assert group[b"nacked-count"] == 0
    consumer = dict(pairs(group[b"consumers"][1]))  # type: ignore[index]
    assert (consumer[b"name"], consumer[b"active-time"]) == (b"never", -1)


@pytest.mark.parametrize(
    ("setup", "ours", "seven"),
    [
        # the last tombstone lies before the first entry but after the group (redis#13337)
        (
            [["XREADGROUP", "GROUP", "g", "c", "COUNT", 2, "STREAMS", "s", ">"],
             ["XDEL", "s", "1-1", "2-1", "3-1"]],
            (2, 2), (2, 3),
        ),
        # a group behind the first entry with a counter set: lag is the remaining length
        ([["XGROUP", "SETID", "s", "g", "0", "ENTRIESREAD", 2]], (2, 5), (2, 3)),
        # everything deleted: lag 0, whatever the counter says
        (
            [["XGROUP", "SETID", "s", "g", "0", "ENTRIESREAD", 0],
             ["XDEL", "s", "1-1", "2-1", "3-1", "4-1", "5-1"]],
            (0, 0), (0, 5),
        ),
        # a trim past a group that counted: re-estimated on the next read
        (
            [["XGROUP", "SETID", "s", "g", "0", "ENTRIESREAD", 0], ["XTRIM", "s", "MAXLEN", 2],
             ["XREADGROUP", "GROUP", "g", "c", "COUNT", 1, "STREAMS", "s", ">"]],
            (4, 1), (1, 4),
        ),
    ],
)  # fmt: skip
def test_lag_rules_of_7_4(
    both: Both,
    setup: list[list[Word]],
    ours: tuple[Reply, Reply],
    seven: tuple[Reply, Reply],
) -> None:
    both.add("s", "1-1", "2-1", "3-1", "4-1", "5-1")
    both.ok("XGROUP", "CREATE", "s", "g", "0")
    for ws in setup:
        both.ok(*ws)
    got_ours, got_seven = both.both("XINFO", "GROUPS", "s")
    for got, want in ((got_ours, ours), (got_seven, seven)):
        g = dict(pairs(got[0]))  # type: ignore[index]
        assert (g[b"entries-read"], g[b"lag"]) == want


def test_autoclaim_count_too_high_for_7_0s_allocator(both: Both) -> None:
    """COUNT near LONG_MAX/16 makes Redis fail to allocate; the engine needs no buffer."""
    both.add("s", "1-1")
    both.ok("XGROUP", "CREATE", "s", "g", "0")
    both.differs(
        "XAUTOCLAIM", "s", "g", "c", 0, "0", "COUNT", 2**59 - 1,
        ours=[b"0-0", [], []],
        seven=StreamError(
            "Insufficient memory, failed allocating transient memory, COUNT too high."
        ),
    )  # fmt: skip


def test_null_history_entry_is_a_null_array(both: Both) -> None:
    both.add("s", "1-1")
    both.ok("XGROUP", "CREATE", "s", "g", "0")
    both.ok("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
    both.ok("XDEL", "s", "1-1")
    assert both.ok("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "0") == [
        [b"s", [[b"1-1", NULL_ARRAY]]]
    ]
