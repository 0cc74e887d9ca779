"""The commands of the stream core, sent to the engine and to a real redis-server, replies compared.

The reference is Redis 8.8; the server here is Debian's 7.0.15. Where stream-errors.md marks a
`[7.0.15]` difference (or where 7.0 predates an 8.8 behaviour), the case asserts the engine's
8.8 answer and accepts the server's documented 7.0 answer instead of comparing; every such
case says why. Streams use explicit IDs (or `<ms>-*`), so the server's clock never matters.
Engine replies are compared in their RESP2 form (`flatten`).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator

import pytest
from redis_conn import RedisConn, RedisServer

from xstream.engine import Engine, EngineConfig, StreamError
from xstream.engine.reply import Reply, flatten

pytestmark = pytest.mark.compat

Word = str | bytes | int
MAX = "18446744073709551615"
# XINFO STREAM fields Redis 7.0 does not have (IDMP, 8.6+).
NEWER_FIELDS = {b"idmp-duration", b"idmp-maxsize", b"pids-tracked", b"iids-tracked"}
NEWER_FIELDS |= {b"iids-added", b"iids-duplicates"}


def words(*ws: Word) -> list[bytes]:
    return [w if isinstance(w, bytes) else str(w).encode() for w in ws]


class Pair:
    """An engine and a redis-server with the same node limits, fed the same commands."""

    def __init__(self, server: RedisServer, max_bytes: int, max_entries: int) -> None:
        self.conn: RedisConn = server.conn()
        self.engine = Engine(EngineConfig(node_max_bytes=max_bytes, node_max_entries=max_entries))

    def both(self, *ws: Word) -> tuple[Reply | StreamError, Reply | StreamError]:
        argv = words(*ws)
        try:
            ours: Reply | StreamError = flatten(self.engine.execute(argv, now_ms=1).reply)
        except StreamError as err:
            ours = err
        self.engine.check_integrity()
        return ours, self.conn.call(*argv)

    def same(self, *ws: Word) -> Reply | StreamError:
        ours, theirs = self.both(*ws)
        assert ours == theirs, ws
        return ours

    def ok(self, *ws: Word) -> Reply:
        reply = self.same(*ws)
        assert not isinstance(reply, StreamError), (ws, reply)
        return reply

    def info_matches(self, key: Word = "s", *full: Word) -> None:
        """XINFO STREAM: every field 7.0 reports equals ours, in the same order."""
        ours, theirs = self.both("XINFO", "STREAM", key, *full)
        if isinstance(theirs, StreamError):
            assert ours == theirs
            return
        assert isinstance(ours, list) and isinstance(theirs, list)
        ours_map = dict(zip(ours[0::2], ours[1::2], strict=True))
        theirs_keys = theirs[0::2]
        assert set(ours_map) - set(theirs_keys) == NEWER_FIELDS  # type: ignore[arg-type]
        common = [k for k in ours[0::2] if k in theirs_keys]
        assert common == theirs_keys
        assert [ours_map[k] for k in theirs_keys] == theirs[1::2]  # type: ignore[index]


PairFactory = Callable[..., Pair]


@pytest.fixture
def make_pair(redis_factory: Callable[..., RedisServer]) -> Iterator[PairFactory]:
    made: list[Pair] = []

    def make(max_bytes: int = 4096, max_entries: int = 100) -> Pair:
        config = {}
        if (max_bytes, max_entries) != (4096, 100):  # the defaults share the plain server
            config = {"stream-node-max-bytes": max_bytes, "stream-node-max-entries": max_entries}
        server = redis_factory(config)
        server.flushall()
        made.append(Pair(server, max_bytes, max_entries))
        return made[-1]

    yield make
    for p in made:
        p.conn.close()


@pytest.fixture
def pair(make_pair: PairFactory) -> Pair:
    return make_pair()


# -- random writes under several node layouts --------------------------------------------------


class Writes:
    """A seeded mix of XADD (trims with ~/=, MAXLEN/MINID, LIMIT), XTRIM, XDEL and reads."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.ms = 1

    def trim(self) -> list[Word]:
        rng = self.rng
        if rng.random() < 0.5:
            strategy: list[Word] = ["MAXLEN", rng.randrange(40)]
        else:
            strategy = ["MINID", f"{rng.randrange(self.ms + 2)}-{rng.randrange(3)}"]
        if rng.random() < 0.6:
            strategy.insert(1, "~")
            if rng.random() < 0.5:
                strategy += ["LIMIT", rng.randrange(30)]
        elif rng.random() < 0.3:
            strategy.insert(1, "=")
        return strategy

    def next(self) -> list[Word]:
        rng = self.rng
        op = rng.random()
        if op < 0.55:
            self.ms += rng.choice([0, 0, 1, 3])
            cmd: list[Word] = ["XADD", "s"]
            if rng.random() < 0.25:
                cmd += self.trim()
            if rng.random() < 0.5:
                cmd.append(f"{self.ms}-*")
            else:
                cmd.append(f"{self.ms}-{rng.randrange(4)}")  # sometimes too small: an error
            for _ in range(rng.randint(1, 3)):
                cmd += [rng.choice(["f", "g", "h", "12"]), "v" * rng.choice([0, 1, 20, 150, 400])]
            return cmd
        if op < 0.72:
            return ["XTRIM", "s", *self.trim()]
        if op < 0.85:
            ids = [f"{rng.randrange(self.ms + 1)}-{rng.randrange(4)}" for _ in range(4)]
            return ["XDEL", "s", *ids[: rng.randint(1, 4)]]
        start = rng.choice(
            ["-", f"{rng.randrange(self.ms + 1)}", f"({rng.randrange(self.ms + 1)}-1"]
        )
        end = rng.choice(["+", f"{rng.randrange(self.ms + 1)}", f"({self.ms}"])
        count = ["COUNT", rng.randrange(6)] if rng.random() < 0.5 else []
        return rng.choice(
            [
                ["XRANGE", "s", start, end, *count],
                ["XREVRANGE", "s", end, start, *count],
                ["XREAD", *count, "STREAMS", "s", f"{rng.randrange(self.ms + 1)}-0"],
                ["XLEN", "s"],
            ]
        )


LAYOUTS = [(4096, 100), (0, 5), (300, 0), (200, 3), (1, 1)]


@pytest.mark.parametrize("seed", [11, 12])
@pytest.mark.parametrize(("max_bytes", "max_entries"), LAYOUTS)
def test_random_writes_match_redis(
    make_pair: PairFactory, seed: int, max_bytes: int, max_entries: int
) -> None:
    p = make_pair(max_bytes, max_entries)
    writes = Writes(seed)
    for _ in range(220):
        p.same(*writes.next())
        if p.engine.keyspace.get(b"s") is not None:
            p.info_matches()
    p.info_matches("s", "FULL", "COUNT", 0)
    p.ok("XRANGE", "s", "-", "+")


def test_default_limit_follows_node_entries(make_pair: PairFactory) -> None:
    p = make_pair(4096, 1)
    for i in range(1, 251):
        p.ok("XADD", "s", f"{i}-1", "f", "v")
    assert p.same("XTRIM", "s", "MAXLEN", "~", "0") == 100
    assert p.same("XADD", "s", "MAXLEN", "~", "0", "251-1", "f", "v") == b"251-1"
    p.info_matches()
    assert p.same("XTRIM", "s", "MINID", "~", "300", "LIMIT", "0") == 51
    p.info_matches()


def test_exact_minid_leaves_a_node_of_tombstones(make_pair: PairFactory) -> None:
    p = make_pair(4096, 3)
    for i in range(1, 11):
        p.ok("XADD", "s", f"{i}-0", "f", "v")
    p.ok("XDEL", "s", "6-0")
    assert p.same("XTRIM", "s", "MINID", "6") == 5
    p.info_matches()
    assert p.same("XTRIM", "s", "MINID", "~", "8") == 0  # the tombstone node ends at 6-0 < 8
    p.info_matches()
    p.ok("XADD", "s", "MAXLEN", "0", "11-0", "f", "v")
    p.info_matches()


# -- errors ------------------------------------------------------------------------------------

SETUP: list[list[Word]] = [
    ["XADD", "s", "1-1", "f", "v"],
    ["XADD", "s", "2-1", "f", "v", "g", "w"],
    ["XADD", "s", "3-1", "f", "v"],
    ["XADD", "s", "5-1", "f", "v"],
    ["XDEL", "s", "3-1"],
    ["SET", "str", "x"],
    ["XADD", "full", f"{MAX}-{MAX}", "f", "v"],
    ["XADD", "top", f"7-{MAX}", "f", "v"],
    ["XADD", "empty", "MAXLEN", "0", "4-4", "f", "v"],
    ["XADD", "gone", "6-6", "f", "v"],
    ["XDEL", "gone", "6-6"],
]

INVALID_ID = "Invalid stream ID specified as stream command argument"
NOT_INT = "value is not an integer or out of range"
WRONGTYPE = StreamError("Operation against a key holding the wrong kind of value", "WRONGTYPE")
SYNTAX = "syntax error"
XREAD_ONLY = "The {} option is only supported by XREADGROUP. You called XREAD instead."


def err(text: str) -> StreamError:
    return StreamError(text)


def arity(name: str) -> StreamError:
    return err(f"wrong number of arguments for '{name}' command")


# (command, the 8.8 error); all of these are answered identically by 7.0.15.
SHARED_ERRORS: list[tuple[list[Word], StreamError]] = [
    # arity, checked before anything else
    (["XADD", "s", "*", "f"], arity("xadd")),
    (["XADD", "s", "1-9", "f", "v", "g"], arity("xadd")),
    (["XADD", "s", "NOMKSTREAM", "NOMKSTREAM", "NOMKSTREAM"], arity("xadd")),
    (["XTRIM", "s", "MAXLEN"], arity("xtrim")),
    (["XDEL", "s"], arity("xdel")),
    (["XLEN", "s", "t"], arity("xlen")),
    (["XRANGE", "s", "-"], arity("xrange")),
    (["XREVRANGE", "s", "+"], arity("xrevrange")),
    (["XREAD", "STREAMS", "s"], arity("xread")),
    (["XSETID", "s"], arity("xsetid")),
    (["XINFO"], arity("xinfo")),
    (["XINFO", "STREAM"], arity("xinfo|stream")),
    (["XINFO", "HELP", "x"], arity("xinfo|help")),
    (["DEL"], arity("del")),
    (["EXISTS"], arity("exists")),
    (["TYPE", "a", "b"], arity("type")),
    (["KEYS"], arity("keys")),
    (["SCAN"], arity("scan")),
    (["GET"], arity("get")),
    (["SET", "k"], arity("set")),
    # unknown commands and subcommands
    (["foo", "a b", "c"], err("unknown command 'foo', with args beginning with: 'a b' 'c' ")),
    (["XINFO", "FOO"], err("unknown subcommand 'FOO'. Try XINFO HELP.")),
    (["xinfo", "foo", "s"], err("unknown subcommand 'foo'. Try XINFO HELP.")),
    (
        ["XINFO", "STREAM", "s", "FOO"],
        err("unknown subcommand or wrong number of arguments for 'STREAM'. Try XINFO HELP."),
    ),
    (
        ["XINFO", "stream", "s", "FULL", "COUNT"],
        err("unknown subcommand or wrong number of arguments for 'stream'. Try XINFO HELP."),
    ),
    (["XINFO", "STREAM", "s", "FULL", "COUNT", "x"], err(NOT_INT)),
    (["XINFO", "STREAM", "nokey", "FOO"], err("no such key")),
    (["XINFO", "STREAM", "str"], WRONGTYPE),
    # XADD
    (["XADD", "s", "0-0", "f", "v"], err("The ID specified in XADD must be greater than 0-0")),
    (["XADD", "str", "0", "f", "v"], err("The ID specified in XADD must be greater than 0-0")),
    (
        ["XADD", "s", "5-1", "f", "v"],
        err("The ID specified in XADD is equal or smaller than the target stream top item"),
    ),
    (
        ["XADD", "s", "4-*", "f", "v"],
        err("The ID specified in XADD is equal or smaller than the target stream top item"),
    ),
    (
        ["XADD", "full", "*", "f", "v"],
        err("The stream has exhausted the last possible ID, unable to add more items"),
    ),
    (
        ["XADD", "full", "1-1", "f", "v"],
        err("The stream has exhausted the last possible ID, unable to add more items"),
    ),
    (["XADD", "str", "*", "f", "v"], WRONGTYPE),
    (["XADD", "str", "NOMKSTREAM", "*", "f", "v"], WRONGTYPE),
    (["XADD", "s", "-", "f", "v"], err(INVALID_ID)),
    (["XADD", "s", "+", "f", "v"], err(INVALID_ID)),
    (["XADD", "s", "x", "f", "v", "g"], err(INVALID_ID)),
    (
        ["XADD", "s", "MAXLEN", "1", "MINID", "1", "9-1", "f", "v"],
        err("syntax error, MAXLEN and MINID options at the same time are not compatible"),
    ),
    (
        ["XADD", "s", "MAXLEN", "1", "MAXLEN", "1", "9-1", "f", "v"],
        err("syntax error, MAXLEN and MINID options at the same time are not compatible"),
    ),
    (["XADD", "s", "MAXLEN", "-1", "9-1", "f", "v"], err("The MAXLEN argument must be >= 0.")),
    (["XADD", "s", "MAXLEN", "x", "9-1", "f"], err(NOT_INT)),
    (["XADD", "s", "MAXLEN", "~", "9-1", "f", "v"], err(NOT_INT)),
    (["XADD", "s", "MINID", "-", "9-1", "f", "v"], err(INVALID_ID)),
    (
        ["XADD", "s", "LIMIT", "5", "9-1", "f", "v"],
        err("syntax error, LIMIT cannot be used without specifying a trimming strategy"),
    ),
    (
        ["XADD", "s", "LIMIT", "0", "9-1", "f", "v"],
        err("syntax error, LIMIT cannot be used without the special ~ option"),
    ),
    (
        ["XADD", "s", "MAXLEN", "=", "5", "LIMIT", "5", "9-1", "f", "v"],
        err("syntax error, LIMIT cannot be used without the special ~ option"),
    ),
    (
        ["XADD", "s", "MAXLEN", "~", "5", "LIMIT", "-1", "9-1", "f", "v"],
        err("The LIMIT argument must be >= 0."),
    ),
    (["XADD", "s", "MAXLEN", "~", "5", "LIMIT", "x", "9-1", "f", "v"], err(NOT_INT)),
    (["XADD", "s", "KEEPREF", "DELREF", "9-1", "f", "v"], err(INVALID_ID)),  # 7.0: KEEPREF = ID
    # XTRIM
    (
        ["XTRIM", "s", "LIMIT", "0"],
        err("syntax error, XTRIM must be called with a trimming strategy"),
    ),
    (
        ["XTRIM", "s", "LIMIT", "1"],
        err("syntax error, LIMIT cannot be used without specifying a trimming strategy"),
    ),
    (
        ["XTRIM", "s", "MAXLEN", "1", "LIMIT", "1"],
        err("syntax error, LIMIT cannot be used without the special ~ option"),
    ),
    (["XTRIM", "s", "FOO", "BAR"], err(SYNTAX)),
    (["XTRIM", "s", "NOMKSTREAM", "MAXLEN", "1"], err(SYNTAX)),
    (["XTRIM", "s", "MAXLEN", "1", "*"], err(SYNTAX)),
    (["XTRIM", "s", "MAXLEN", "1", "KEEPREF", "KEEPREF"], err(SYNTAX)),
    (["XTRIM", "s", "MAXLEN", "~"], err(NOT_INT)),
    (["XTRIM", "nokey", "MAXLEN", "x"], err(NOT_INT)),
    (["XTRIM", "str", "MAXLEN", "1"], WRONGTYPE),
    # XDEL
    (["XDEL", "s", "1-1", "x"], err(INVALID_ID)),
    (["XDEL", "s", "-"], err(INVALID_ID)),
    (["XDEL", "str", "x"], WRONGTYPE),
    # XRANGE / XREVRANGE
    (["XRANGE", "s", "x", "+"], err(INVALID_ID)),
    (["XRANGE", "nokey", "-", "x"], err(INVALID_ID)),
    (["XRANGE", "s", "(-", "+"], err(INVALID_ID)),
    (["XRANGE", "s", "-", "(+"], err(INVALID_ID)),
    (["XRANGE", "s", "(", "+"], err(INVALID_ID)),
    (["XRANGE", "s", f"({MAX}-{MAX}", "+"], err("invalid start ID for the interval")),
    (["XRANGE", "s", "-", "(0-0"], err("invalid end ID for the interval")),
    (["XREVRANGE", "s", "(0-0", f"({MAX}-{MAX}"], err("invalid start ID for the interval")),
    (["XRANGE", "s", "-", "+", "COUNT"], err(SYNTAX)),
    (["XRANGE", "s", "-", "+", "FOO", "1"], err(SYNTAX)),
    (["XRANGE", "s", "-", "+", "COUNT", "x"], err(NOT_INT)),
    (["XRANGE", "str", "-", "+"], WRONGTYPE),
    (["XREVRANGE", "str", "+", "-"], WRONGTYPE),
    (["XLEN", "str"], WRONGTYPE),
    # XREAD
    (["XREAD", "COUNT", "1", "BLOCK", "1", "s", "0"], err(SYNTAX)),
    (["XREAD", "FOO", "STREAMS", "s", "0"], err(SYNTAX)),
    (["XREAD", "COUNT", "x", "STREAMS", "s", "0"], err(NOT_INT)),
    (
        ["XREAD", "BLOCK", "x", "STREAMS", "s", "0"],
        err("timeout is not an integer or out of range"),
    ),
    (["XREAD", "BLOCK", "-1", "STREAMS", "s", "0"], err("timeout is negative")),
    (["XREAD", "GROUP", "g", "c", "STREAMS", "s", "0"], err(XREAD_ONLY.format("GROUP"))),
    (["XREAD", "NOACK", "STREAMS", "s", "0"], err(XREAD_ONLY.format("NOACK"))),
    (
        ["XREAD", "STREAMS", "s", ">"],
        err(
            "The > ID can be specified only when calling "
            "XREADGROUP using the GROUP <group> <consumer> option."
        ),
    ),
    (["XREAD", "STREAMS", "s", "-"], err(INVALID_ID)),
    (["XREAD", "STREAMS", "s", "str", "x", "0"], err(INVALID_ID)),
    (["XREAD", "STREAMS", "s", "str", "0", "x"], WRONGTYPE),
    # XSETID
    (["XSETID", "s", "x"], err(INVALID_ID)),
    (["XSETID", "nokey", "+"], err(INVALID_ID)),
    (["XSETID", "nokey", "9-1", "ENTRIESADDED", "-1"], err("entries_added must be positive")),
    (["XSETID", "nokey", "9-1", "ENTRIESADDED", "x"], err(NOT_INT)),
    (
        ["XSETID", "nokey", "9-1", "MAXDELETEDID", "9-2"],
        err("The ID specified in XSETID is smaller than the provided max_deleted_entry_id"),
    ),
    (["XSETID", "s", "9-1", "0"], err(SYNTAX)),
    (["XSETID", "s", "9-1", "ENTRIESADDED"], err(SYNTAX)),
    (["XSETID", "nokey", "9-1"], err("no such key")),
    (["XSETID", "str", "9-1"], WRONGTYPE),
    (
        ["XSETID", "s", "5-0"],
        err("The ID specified in XSETID is smaller than the target stream top item"),
    ),
    (
        ["XSETID", "s", "9-1", "ENTRIESADDED", "2"],
        err("The entries_added specified in XSETID is smaller than the target stream length"),
    ),
    # keyspace
    (["GET", "s"], WRONGTYPE),
    (["SCAN", "x"], err("invalid cursor")),
    (["SCAN", "18446744073709551616"], err("invalid cursor")),
    (["SCAN", "0", "COUNT", "0"], err(SYNTAX)),
    (["SCAN", "0", "COUNT", "x"], err(NOT_INT)),
    (["SCAN", "0", "MATCH"], err(SYNTAX)),
    (["FLUSHALL", "FOO"], err(SYNTAX)),
]


@pytest.fixture
def loaded(pair: Pair) -> Pair:
    for cmd in SETUP:
        pair.ok(*cmd)
    return pair


@pytest.mark.parametrize(("cmd", "expected"), SHARED_ERRORS, ids=lambda c: str(c)[:60])
def test_errors_match_redis(loaded: Pair, cmd: list[Word], expected: StreamError) -> None:
    ours, theirs = loaded.both(*cmd)
    assert ours == expected
    assert theirs == expected


# (command, our 8.8 answer, what 7.0.15 answers instead, why they differ). The server's answer
# is checked against the documented 7.0 text, so a newer server (answering like 8.8) also passes.
DIFFERENT_IN_7_0: list[tuple[list[Word], Reply | StreamError, Reply | StreamError, str]] = [
    (
        ["XADD", "top", "7-*", "f", "v"],
        err("The ID specified in XADD is equal or smaller than the target stream top item"),
        err("Elements are too large to be stored"),
        "stream-errors.md: 7.0.15 reports the sequence overflow of <ms>-* as too large",
    ),
    (
        ["XREAD", "STREAMS", "s", "t", "0"],
        err(
            "Unbalanced 'xread' list of streams: for each stream key an ID, '+', or '$' must "
            "be specified."
        ),
        err(
            "Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified."
        ),
        "stream-errors.md: the text changed with `+` (7.4)",
    ),
    (
        ["XREAD", "BLOCK", "9223372036854775807", "STREAMS", "s", "0"],
        err("timeout is out of range"),
        [
            [
                b"s",
                [
                    [b"1-1", [b"f", b"v"]],
                    [b"2-1", [b"f", b"v", b"g", b"w"]],
                    [b"5-1", [b"f", b"v"]],
                ],
            ]
        ],
        "stream-errors.md lists the overflow check for 8.8; 7.0.15 lacks it (data: no wait)",
    ),
    (
        ["XREAD", "CLAIM", "5", "STREAMS", "s", "0"],
        err(XREAD_ONLY.format("CLAIM")),
        err(SYNTAX),
        "CLAIM is 8.4+",
    ),
    (
        ["XREAD", "STREAMS", "s", "+"],
        [[b"s", [[b"5-1", [b"f", b"v"]]]]],
        err(INVALID_ID),
        "`+` in XREAD is 7.4+",
    ),
    (
        ["XSETID", "s", "2-9"],
        err("The ID specified in XSETID is smaller than current max_deleted_entry_id"),
        err("The ID specified in XSETID is smaller than the target stream top item"),
        "redis#11444 (7.2) checks max_deleted_entry_id first; 7.0 only checks the top item",
    ),
    (
        ["XSETID", "gone", "1-1"],
        err("The ID specified in XSETID is smaller than current max_deleted_entry_id"),
        "OK",
        "redis#11444: 7.0 lets the last ID go below max-deleted-entry-id",
    ),
    (
        ["XADD", "s", "KEEPREF", "9-1", "f", "v"],
        b"9-1",
        err(INVALID_ID),
        "KEEPREF/DELREF/ACKED are 8.2+; 7.0 reads KEEPREF as the ID",
    ),
    (
        ["XTRIM", "s", "MAXLEN", "1", "DELREF"],
        2,
        err(SYNTAX),
        "KEEPREF/DELREF/ACKED are 8.2+",
    ),
    (
        ["FOO"],
        err("unknown command 'FOO'"),
        err("unknown command 'FOO', with args beginning with: "),
        "Redis 8 writes the arguments' part only when there are arguments (checked on 8.8.0)",
    ),
]


@pytest.mark.parametrize(
    ("cmd", "ours_expected", "seven", "why"), DIFFERENT_IN_7_0, ids=lambda c: str(c)[:50]
)
def test_documented_differences_from_7_0(
    loaded: Pair, cmd: list[Word], ours_expected: Reply, seven: Reply, why: str
) -> None:
    ours, theirs = loaded.both(*cmd)
    assert ours == ours_expected, why
    assert theirs in (ours_expected, seven), why


def test_scan_cursor_minus_one(loaded: Pair) -> None:
    # 8.x parses the cursor with string2ull (invalid); 7.0's strtoul takes -1 as ULONG_MAX and
    # answers a page, whose keys depend on its hash table.
    ours, theirs = loaded.both("SCAN", "-1")
    assert ours == err("invalid cursor")
    assert theirs == ours or (isinstance(theirs, list) and len(theirs) == 2)


# -- ID parsing quirks -------------------------------------------------------------------------

QUIRKY_IDS: list[Word] = [
    " 5-1",
    "+6-1",
    "\t7-1",
    "08-1",
    "9--01",  # strtoull negates: 9-18446744073709551615
    "10--0",
    "11-+5",
    "12- 5",
    "13-1\x00junk",
    "14\x00-1",
    "15-" + "0" * 123 + "1",  # 127 bytes
    "16-" + "0" * 124 + "1",  # 128 bytes: invalid
    "17--1",
    "18-1 ",
    "-19-1",
    "20-*",
    "20-*",
    "21- *",
    "9223372036854775808-0",
    f"{MAX}-*",
    f"{MAX}-*",
]


def test_quirky_ids_in_xadd(pair: Pair) -> None:
    for id_ in QUIRKY_IDS:
        pair.same("XADD", "s", id_, "f", "v")
    pair.ok("XRANGE", "s", "-", "+")
    pair.info_matches()


@pytest.mark.parametrize(
    ("start", "end"),
    [
        ("-", "+"),
        ("5", "9"),
        ("(5", "(9"),
        ("( 5-1", "+"),
        ("(+5", "(+9"),
        ("-\x00x", "+\x00"),
        ("(0", "(1"),
        ("(-", "+"),
        ("0x5", "+"),
        ("9--01", "+"),
        ("(9--01", "+"),
        ("(9-18446744073709551614", "(10"),
        (f"({MAX}-18446744073709551614", "+"),
    ],
)
def test_quirky_range_bounds(pair: Pair, start: str, end: str) -> None:
    for id_ in ("1-1", "5-0", "5-1", "9-0", "9-18446744073709551615", "10-0"):
        pair.ok("XADD", "s", id_, "f", "v")
    pair.same("XRANGE", "s", start, end)
    pair.same("XREVRANGE", "s", end, start)
    pair.same("XRANGE", "s", start, end, "COUNT", "2")
    pair.same("XREAD", "STREAMS", "s", start)


def test_option_words_end_at_nul(pair: Pair) -> None:
    pair.ok("XADD", "s", "1-1", "f", "v")
    pair.ok("XADD", "s", "2-1", "f", "v")
    pair.same("XRANGE", "s", "-", "+", b"COUNT\x00x", "1")
    pair.same("XADD", "s", b"MAXLEN\x00x", b"~\x00y", "1", "3-1", "f", "v")
    pair.same("XTRIM", "s", b"maxlen\x00", b"=\x00", "1")
    pair.same("XREAD", b"COUNT\x00", "1", b"STREAMS\x00", "s", b"$\x00x")
    pair.info_matches("s", b"FULL\x00", b"COUNT\x00", "1")
    ours, theirs = pair.both("XADD", "s", b"*\x00x", "f", "v")  # `*`: each side's clock
    assert ours == b"3-2"  # the engine's clock (1) is behind the last ID 3-1
    assert isinstance(theirs, bytes) and theirs.endswith(b"-0")


# -- XREAD and XINFO ---------------------------------------------------------------------------


def test_xread_non_blocking(make_pair: PairFactory) -> None:
    p = make_pair(4096, 2)
    for key, ids in (("s", ["1-1", "2-1", "3-1", "4-1"]), ("t", ["5-0"])):
        for id_ in ids:
            p.ok("XADD", key, id_, "f", id_)
    p.ok("XDEL", "s", "2-1", "4-1")
    for cmd in (
        ["STREAMS", "s", "0"],
        ["STREAMS", "s", "1"],
        ["COUNT", "1", "STREAMS", "s", "t", "nokey", "0", "0", "0"],
        ["COUNT", "0", "STREAMS", "s", "0-0"],
        ["COUNT", "-1", "STREAMS", "t", "s", "$", "1-1"],
        ["STREAMS", "s", "s", "1-1", "0"],
        ["STREAMS", "s", "3-1"],
        ["STREAMS", "nokey", "$"],
        ["count", "2", "count", "1", "streams", "s", "0"],
        ["BLOCK", "1000", "STREAMS", "s", "0"],  # data is there: answered at once
    ):
        p.same("XREAD", *cmd)


def test_xinfo_stream_and_full(make_pair: PairFactory) -> None:
    p = make_pair(4096, 3)
    p.same("XINFO", "STREAM", "s")
    for i in range(1, 15):
        p.ok("XADD", "s", f"{i}-0", *(["f", "v"] if i % 3 else ["g", str(i), "h", "-0"]))
    p.ok("XDEL", "s", "1-0", "14-0", "5-0")
    p.info_matches()
    for full in (["FULL"], ["full", "count", "1"], ["FULL", "COUNT", "0"], ["FULL", "COUNT", "-2"]):
        p.info_matches("s", *full)
    p.ok("XTRIM", "s", "MAXLEN", "0")
    p.info_matches()
    p.info_matches("s", "FULL")


def test_xinfo_help(pair: Pair) -> None:
    ours, theirs = pair.both("XINFO", "HELP")
    assert isinstance(ours, list) and isinstance(theirs, list)
    assert ours[:-1] == theirs[:-1]
    assert ours[-1] == "    Print this help."  # 7.2+; 7.0.15 says "    Prints this help."
    assert theirs[-1] in ("    Print this help.", "    Prints this help.")


# -- the keyspace ------------------------------------------------------------------------------


def fill_keyspace(p: Pair) -> list[bytes]:
    keys = [b"s1", b"s2", b"str", b"", b"a\\b", b"\x80", b"\xff", b"[", b"a*"]
    keys += [b"key:%d" % i for i in range(60)]
    for k in keys:
        if k.startswith(b"s") and k != b"str":
            p.ok("XADD", k, "1-1", "f", "v")
        else:
            p.ok("SET", k, "x")
    return keys


def test_type_exists_del(pair: Pair) -> None:
    fill_keyspace(pair)
    for k in (b"s1", b"str", b"nokey"):
        pair.same("TYPE", k)
    pair.same("EXISTS", "s1", "str", "nokey", "s1", "")
    pair.same("DEL", "s1", "nokey", "s1", "str")
    pair.same("EXISTS", "s1", "str")
    pair.same("GET", "key:1")
    pair.same("GET", "nokey")


def test_keys_with_random_patterns(pair: Pair) -> None:
    fill_keyspace(pair)
    rng = random.Random(5)
    alphabet = [b"k", b"e", b"y", b":", b"1", b"*", b"?", b"[", b"]", b"^", b"-", b"\\", b"\x80"]
    patterns = [b"*", b"**", b"", b"key:?", b"key:[1-3]*", b"[^k]*", b"[a-\xff]"]
    patterns += [
        b"".join(rng.choice(alphabet) for _ in range(rng.randint(1, 7))) for _ in range(300)
    ]
    for pattern in patterns:
        ours, theirs = pair.both("KEYS", pattern)
        assert isinstance(ours, list) and isinstance(theirs, list)
        assert sorted(ours) == sorted(theirs), pattern  # type: ignore[type-var]


def full_scan(p: Pair, *options: Word) -> tuple[set[bytes], set[bytes]]:
    found = []
    for conn_side in (0, 1):
        cursor: bytes = b"0"
        keys: set[bytes] = set()
        for _ in range(10_000):
            reply = p.both("SCAN", cursor, *options)[conn_side]
            assert isinstance(reply, list), reply
            cursor, page = reply  # type: ignore[assignment]
            keys.update(page)  # type: ignore[arg-type]
            if cursor == b"0":
                break
        found.append(keys)
    return found[0], found[1]


@pytest.mark.parametrize(
    "options",
    [
        [],
        ["COUNT", "3"],
        ["MATCH", "key:1*"],
        ["MATCH", "*"],
        ["TYPE", "stream"],
        ["type", "STRING", "COUNT", "1000"],
    ],
)
def test_scan_collects_the_same_keys(pair: Pair, options: list[Word]) -> None:
    fill_keyspace(pair)
    ours, theirs = full_scan(pair, *options)
    assert ours == theirs
    assert ours


def test_flushall(pair: Pair) -> None:
    fill_keyspace(pair)
    pair.same("FLUSHALL")
    pair.same("KEYS", "*")
    pair.same("FLUSHALL", "ASYNC")


def test_unknown_command_texts(pair: Pair) -> None:
    pair.same("FOO", "a" * 100, "b" * 100, "c")
    pair.same("F" * 200, "x")
    pair.same("FOO", "é" * 100)
    pair.same("FOO", b"\xff\xfe", b"a\x00b", "x\r\ny")
    pair.same("XINFO", "x" * 200)
    pair.same("XINFO", b"a\x00b")
    pair.same("XINFO", "STREAM", "nokey")
