"""AUTH, HELLO AUTH and ACL against redis-server, over raw RESP (byte for byte) and redis-py.

Both servers start from the same ACL file (`user default on nopass ~* &* +@all`), reloaded
before each test (ACL LOAD), and get the same sessions; each session runs on a fresh
connection ending with QUIT, and everything each server sent back is compared.

redis-server here is 7.0.15, xstream answers as Redis 8. Where Redis 7.2 changed a text or a
shape, the 7.0 reply is rewritten to the newer form before comparing (`redis8`), and only
there:
* NOPERM: `this user has no permissions to run the 'x' command` became `User <name> has no
  permissions to run the 'x' command`; `... to access one of the keys used as arguments`
  became `No permissions to access a key`; ACL DRYRUN's `This user has no permissions to ...`
  became `User <name> has no permissions to ...`.
* `sanitize-payload`: a user's flags name it by default since 7.2 (7.0 only after `reset`).
* HELLO's NOAUTH text names `HELLO <proto> AUTH` since 7.2.
* An unknown command without arguments: 7.0 writes `, with args beginning with: ` after its
  name, Redis 8 nothing.
Not compared at all: command rules as ACL LIST and GETUSER print them (7.0 recomputes a
canonical order from its bitmaps, 7.2+ keeps the rules in the order given: the sessions use
rules whose order both agree on), ACL LOG's 7.2 fields (entry-id, timestamp-created,
timestamp-last-updated), its age-seconds digits and client-info line, ACL HELP's prose, the
commands ACL CAT lists for a category (Redis 8's and xstream's own beside 7.0's: a superset is
checked), and HELLO's version and id.
"""

from __future__ import annotations

import re
import socket
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis
from redis_conn import RedisServer, xstream_node

from xstream.engine.errors import StreamError
from xstream.engine.reply import Reply, ReplyMap
from xstream.server.resp.codec import NEED_MORE, ReplyParser, encode

INITIAL = "user default on nopass ~* &* +@all\n"
Ports = tuple[int, int]  # (redis-server, xstream)


@pytest.fixture(scope="module")
def servers(
    redis_factory: Callable[..., RedisServer], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Ports, tuple[Path, Path]]]:
    files = []
    for name in ("redis-acl", "xstream-acl"):
        path = tmp_path_factory.mktemp(name) / "users.acl"
        path.write_text(INITIAL)
        files.append(path)
    server = redis_factory(aclfile=str(files[0]))
    data = tmp_path_factory.mktemp("xstream-acl-data")
    for port in xstream_node(data, "--aclfile", str(files[1])):
        yield (server.port, port), (files[0], files[1])


@pytest.fixture
def ports(servers: tuple[Ports, tuple[Path, Path]]) -> Ports:
    """Both servers back to the initial users, an empty ACL LOG and no data."""
    pair, files = servers
    for port, path in zip(pair, files, strict=True):
        path.write_text(INITIAL)
        assert exchange(port, ["ACL", "LOAD"], ["ACL", "LOG", "RESET"], ["FLUSHALL"]) == (
            b"+OK\r\n" * 4
        )
    return pair


def exchange(port: int, *commands: list[str]) -> bytes:
    """The commands then QUIT on a new connection; every byte received until it closes."""
    return exchange_bytes(port, *([w.encode() for w in c] for c in commands))


def replies(raw: bytes) -> list[Reply | StreamError]:
    parser = ReplyParser()
    parser.feed(raw)
    out: list[Reply | StreamError] = []
    while (reply := parser.next_reply()) is not NEED_MORE:
        out.append(reply)
    return out


def same(ports: Ports, *commands: list[str]) -> None:
    """Both servers answer the session with the same bytes."""
    theirs, ours = (exchange(p, *commands) for p in ports)
    assert ours == theirs, _diff(commands, theirs, ours)


def same_as_8(ports: Ports, user: str, *commands: list[str]) -> list[object]:
    """Both answer the same once Redis 7.0's texts are the newer ones (see the module doc),
    and drop `sanitize-payload`; the replies, normalized."""
    theirs, ours = (exchange(p, *commands) for p in ports)
    a = [redis8(r, user) for r in replies(theirs)]
    b = [redis8(r, user) for r in replies(ours)]
    assert b == a, _diff(commands, theirs, ours)
    return b


_NOPERM_CMD = re.compile(r"NOPERM this user (has no permissions to run)")
_DRYRUN = re.compile(rb"^This user (has no permissions to (run|access))")


def redis8(reply: object, user: str) -> object:
    """A reply as plain values, Redis 7.0's texts as 7.2+ words them (module doc)."""
    if isinstance(reply, StreamError):
        line = _NOPERM_CMD.sub(f"NOPERM User {user} \\1", reply.line)
        line = line.replace(
            "NOPERM this user has no permissions to access one of the keys used as arguments",
            "NOPERM No permissions to access a key",
        )
        line = line.replace("HELLO <proto> AUTH", "HELLO AUTH")
        line = line.removesuffix(", with args beginning with: ")  # 8: none without arguments
        return ("error", line)
    if isinstance(reply, ReplyMap):
        return [(redis8(k, user), redis8(v, user)) for k, v in reply]
    if isinstance(reply, list):
        if reply[:3] == [b"server", b"redis", b"version"]:  # HELLO: not its version and id
            reply = [b"<version>" if i == 3 else b"<id>" if i == 7 else x
                     for i, x in enumerate(reply)]  # fmt: skip
        return [redis8(x, user) for x in reply if x != b"sanitize-payload"]
    if isinstance(reply, bytes):
        return _DRYRUN.sub(f"User {user} \\1".encode(), reply).replace(b" sanitize-payload", b"")
    return reply


def _diff(commands: tuple[list[str], ...], theirs: bytes, ours: bytes) -> str:
    return f"\n{commands}\nredis-server: {theirs!r}\nxstream:      {ours!r}"


# --- AUTH and HELLO ---------------------------------------------------------------------------


def test_auth(ports: Ports) -> None:
    same(ports, ["AUTH", "pw"], ["AUTH", "default", "x"], ["AUTH", "nouser", "x"],
         ["AUTH", "a", "b", "c"], ["AUTH"], ["ACL", "WHOAMI"])  # fmt: skip
    same(ports, ["ACL", "SETUSER", "alice", "on", ">pw", "~a:*", "+@all"],
         ["ACL", "SETUSER", "off1", "off", ">pw", "+@all"],
         ["AUTH", "alice", "wrong"], ["ACL", "WHOAMI"], ["AUTH", "alice", "pw"],
         ["ACL", "WHOAMI"], ["AUTH", "off1", "pw"], ["ACL", "WHOAMI"], ["RESET"],
         ["ACL", "WHOAMI"])  # fmt: skip
    # the default user with a password: a new connection must authenticate
    same(ports, ["ACL", "SETUSER", "default", "resetpass", ">defpw"])
    same(ports, ["PING"], ["XLEN", "s"], ["AUTH", "nope"], ["AUTH", "defpw"], ["PING"])
    same(ports, ["AUTH", "default", "defpw"], ["ACL", "SETUSER", "default", "nopass"])


def test_hello_auth(ports: Ports) -> None:
    same(ports, ["ACL", "SETUSER", "alice", "on", ">pw", "~*", "+@all"],
         ["ACL", "SETUSER", "default", "off"])  # fmt: skip
    same(ports, ["HELLO", "3", "AUTH", "alice", "wrong"], ["HELLO", "2", "AUTH", "nouser", "x"],
         ["HELLO", "2", "AUTH", "alice"], ["HELLO", "3", "AUTH"], ["PING"])  # fmt: skip
    same_as_8(ports, "default", ["HELLO", "3"])
    ok = [replies(exchange(p, ["HELLO", "3", "AUTH", "alice", "pw"], ["ACL", "WHOAMI"]))
          for p in ports]  # fmt: skip
    for hello, whoami, _quit in ok:
        assert isinstance(hello, ReplyMap) and whoami == b"alice"
        fields = dict(hello)
        assert (fields[b"proto"], fields[b"role"], fields[b"mode"]) == (3, b"master", b"standalone")
    assert [k for k, _ in ok[0][0]] == [k for k, _ in ok[1][0]]  # type: ignore[union-attr,misc]
    same(ports, ["AUTH", "alice", "pw"], ["ACL", "SETUSER", "default", "on"])


# --- ACL SETUSER, GETUSER, LIST, USERS, DELUSER ---------------------------------------------------


RULES = [
    ["alice", "on", ">pw", "~a:*", "%R~r:*", "%W~w:*", "&ch", "+@all", "-flushall"],
    ["bob", "on", "nopass", "allcommands", "allkeys", "allchannels"],
    ["carol", "on", ">p1", ">p2", "<p1", "resetpass", "nopass", "skip-sanitize-payload"],
    ["dave", "-@all", "+xgroup", "-xgroup|create", "%RW~x", "%rw~y"],
    ["erin", "+@all", "-@read", "+xrange", "resetkeys", "allkeys", "resetchannels", "&x", "&y"],
    ["fay", "on", "nopass", "-@all", "+select|0"],
    ["kay", "%R", "%W~x", "%R~x", "%w~", "&a", "&a"],
    ["gus", "ON", "OFF", "NOPASS", "reset"],
    ["hal", "on", "#" + "ab" * 32, "~*", "+get", "(~x +get)", "(%R~y* +@read)"],
    ["ida", "(~x", "+get)", "(allkeys allcommands allchannels)", "()"],
    ["jo", "(~b +set)", "clearselectors", "(~c +xadd &ch)"],
]


def test_setuser_getuser_list_users(ports: Ports) -> None:
    for rule in RULES:
        same(ports, ["ACL", "SETUSER", *rule])
    for rule in RULES:
        same_as_8(ports, "default", ["ACL", "GETUSER", rule[0]])
    same_as_8(ports, "default", ["ACL", "LIST"])
    same(ports, ["ACL", "USERS"], ["ACL", "GETUSER", "nobody"])
    same(ports, ["ACL", "DELUSER", "alice", "nobody", "alice"], ["ACL", "DELUSER", "default"],
         ["ACL", "DELUSER"], ["ACL", "USERS"])  # fmt: skip


SETUSER_ERRORS = [
    ["bogus"], ["+bogus"], ["+@bogus"], ["-@bogus"], ["+xgroup|bogus"], ["-xadd|x"],
    ["+xgroup|create|x"], ["+xadd|"], ["~*", "~a"], ["allkeys", "~a"], ["%X~a"], ["%~a"],
    ["%RR~x"], ["#abc"], ["#" + "AB" * 32], ["<nothere"], ["!" + "ab" * 32], ["&*", "&a"],
    ["(~x +bogus)"], ["(on)"], ["(~x", "+get"], ["~x", "+get)"], ["(~x"], ["on", "bogus"],
]  # fmt: skip


def test_setuser_errors_change_nothing(ports: Ports) -> None:
    same(ports, ["ACL", "SETUSER", "u", "on", ">pw", "~a*", "+get"])
    before = [exchange(p, ["ACL", "LIST"]) for p in ports]
    for rules in SETUSER_ERRORS:
        same(ports, ["ACL", "SETUSER", "u", "off", *rules])
    same(ports, ["ACL", "SETUSER", "a b", "on"], ["ACL", "SETUSER"], ["ACL", "SETUSER", "x\0y"])
    assert [exchange(p, ["ACL", "LIST"]) for p in ports] == before


def test_first_args_and_no_auth_commands(ports: Ports) -> None:
    same(ports, ["ACL", "SETUSER", "fay", "on", ">pw", "-@all", "+select|0", "+xadd|x"],
         ["ACL", "SETUSER", "none", "on", ">pw", "-@all"])  # fmt: skip
    same_as_8(ports, "fay", ["AUTH", "fay", "pw"], ["SELECT", "0"], ["SELECT", "1"], ["SELECT"],
              ["XADD", "x"], ["XADD", "y", "*", "f", "v"], ["SELECT", "00"])  # fmt: skip
    # pipelined writes (one batch on xstream): a first-argument rule is checked on each
    same(ports, ["ACL", "SETUSER", "fx", "on", ">pw", "-@all", "+xadd|x", "allkeys"])
    same_as_8(ports, "fx", ["AUTH", "fx", "pw"], ["XADD", "x", "1-1", "f", "v"],
              ["XADD", "y", "1-2", "f", "v"], ["XADD", "x", "1-3", "f", "v"])  # fmt: skip
    same_as_8(ports, "none", ["AUTH", "none", "pw"], ["AUTH", "none", "pw"], ["HELLO", "2"],
              ["PING"], ["ACL", "WHOAMI"], ["CLIENT", "ID"], ["FOO"], ["XADD", "x"],
              ["XADD", "x", "*", "f", "v"], ["XGROUP", "BOGUS"], ["XGROUP"], ["ACL"],
              ["ACL", "BOGUS"], ["CLIENT", "BOGUS"], ["ACL", "WHOAMI", "x"])  # fmt: skip


# --- NOPERM, MULTI, ACL LOG -------------------------------------------------------------------


def test_noperm_for_commands_and_keys(ports: Ports) -> None:
    same(ports, ["ACL", "SETUSER", "alice", "on", ">pw", "~a:*", "%R~r:*", "%W~w:*", "+@all",
                 "-flushall"])  # fmt: skip
    same_as_8(ports, "alice", ["AUTH", "alice", "pw"], ["SET", "b:1", "v"], ["SET", "a:1", "v"],
              ["FLUSHALL"], ["GET", "w:1"], ["SET", "w:1", "v"], ["SET", "r:1", "v"],
              ["GET", "r:1"], ["XREAD", "STREAMS", "a:1", "b:1", "0", "0"],
              ["DEL", "a:1", "b:1"], ["XLEN", "a:1"])  # fmt: skip
    same_as_8(ports, "alice", ["AUTH", "alice", "pw"], ["MULTI"], ["SET", "b:1", "v"],
              ["EXEC"])  # fmt: skip
    same_as_8(ports, "alice", ["AUTH", "alice", "pw"], ["MULTI"], ["FLUSHALL"], ["EXEC"])
    same(ports, ["ACL", "SETUSER", "none", "on", ">pw", "-@all"])
    same_as_8(ports, "none", ["AUTH", "none", "pw"], ["MULTI"], ["FOO"], ["EXEC"])
    # each entry's count, reason, context, object and username (7.2 adds more fields)
    theirs, ours = (_log(p) for p in ports)
    assert len(ours) == 8 and ours == theirs


def _log(port: int) -> list[list[object]]:
    (entries, _quit) = replies(exchange(port, ["ACL", "LOG"]))
    assert isinstance(entries, list)
    keys = (b"count", b"reason", b"context", b"object", b"username")
    out = []
    for entry in entries:
        assert isinstance(entry, list)
        fields = dict(zip(entry[::2], entry[1::2], strict=True))
        assert {b"age-seconds", b"client-info", *keys} <= fields.keys()
        out.append([fields[k] for k in keys])
    return out


def test_acl_log_arguments(ports: Ports) -> None:
    same(ports, ["AUTH", "nobody", "x"])
    same(ports, ["ACL", "LOG", "0"], ["ACL", "LOG", "-1"], ["ACL", "LOG", "x"],
         ["ACL", "LOG", "1_0"], ["acl", "log", "1", "2"], ["ACL", "LOG", "RESET"],
         ["ACL", "LOG"])  # fmt: skip


# --- DRYRUN, CAT, GENPASS, HELP, unknown subcommands ----------------------------------------------


def test_dryrun(ports: Ports) -> None:
    same(ports, ["ACL", "SETUSER", "s6", "on", "nopass", "~a", "+get", "(~b +set)",
                 "(~c +xadd)"])  # fmt: skip
    same(ports, ["ACL", "SETUSER", "fay", "on", "nopass", "-@all", "+select|0"])
    for words in (["get", "a"], ["get", "b"], ["set", "a", "1"], ["set", "b", "1"],
                  ["xadd", "c", "*", "f", "v"], ["xadd", "b", "*", "f", "v"], ["xlen", "c"],
                  ["auth", "x"]):  # fmt: skip
        same_as_8(ports, "s6", ["ACL", "DRYRUN", "s6", *words])
    for words in (["select", "0"], ["select", "1"], ["SELECT", "0"]):
        same_as_8(ports, "fay", ["ACL", "DRYRUN", "fay", *words])
    same(ports, ["ACL", "DRYRUN", "nobody", "get", "x"], ["ACL", "DRYRUN", "s6", "nosuch"],
         ["ACL", "DRYRUN", "s6", "xadd"], ["ACL", "DRYRUN", "s6", "xgroup", "bogus"],
         ["ACL", "DRYRUN", "s6", "xgroup"], ["ACL", "DRYRUN", "s6"])  # fmt: skip


def test_cat_genpass_and_subcommands(ports: Ports) -> None:
    same(ports, ["ACL", "CAT"], ["ACL", "CAT", "bogus"], ["acl", "cat", "a", "b"],
         ["ACL", "GENPASS", "0"], ["ACL", "GENPASS", "5000"], ["ACL", "GENPASS", "x"],
         ["acl", "genpass", "1", "2"], ["ACL", "BOGUS"], ["ACL"], ["ACL", "WHOAMI", "x"],
         ["ACL", "LIST", "x"], ["ACL", "USERS", "x"], ["ACL", "GETUSER"],
         ["ACL", "LOAD", "x"], ["ACL", "SAVE", "x"], ["ACL", "HELP", "x"])  # fmt: skip
    theirs, ours = (replies(exchange(p, ["ACL", "CAT", "stream"], ["ACL", "GENPASS", "7"],
                                     ["ACL", "HELP"])) for p in ports)  # fmt: skip
    assert isinstance(theirs[0], list) and isinstance(ours[0], list)
    assert set(theirs[0]) <= set(ours[0])  # 7.0's stream commands; 8's and ours besides
    assert [len(r) for r in (theirs[1], ours[1])] == [2, 2]  # type: ignore[arg-type]
    assert isinstance(theirs[2], list) and isinstance(ours[2], list)
    assert ours[2][0] == theirs[2][0]  # HELP's first line; the rest is each one's prose


# --- ACL SAVE and LOAD --------------------------------------------------------------------------


def test_save_and_load(ports: Ports, servers: tuple[Ports, tuple[Path, Path]]) -> None:
    _, files = servers
    same(ports, ["ACL", "SETUSER", "alice", "on", ">pw", "~a:*", "&ch", "+@all", "-flushall"],
         ["ACL", "SETUSER", "hal", "(~x +get)"], ["ACL", "SAVE"])  # fmt: skip
    saved = [redis8(f.read_text().encode(), "") for f in files]
    assert saved[1] == saved[0]
    for path in files:
        path.write_text(INITIAL + "user zed on nopass (~z +get) +@read\n")
    same(ports, ["ACL", "LOAD"], ["ACL", "USERS"])
    same_as_8(ports, "default", ["ACL", "GETUSER", "zed"])
    for path in files:
        path.write_text(INITIAL + "user zed on +bogus\n")
    theirs, ours = (exchange(p, ["ACL", "LOAD"], ["ACL", "USERS"]) for p in ports)
    assert ours.replace(str(files[1]).encode(), b"F") == theirs.replace(
        str(files[0]).encode(), b"F"
    )


def test_load_reports_every_error(ports: Ports, servers: tuple[Ports, tuple[Path, Path]]) -> None:
    """A file with many bad lines: every error, in order and words, then nothing changed.
    (No `#` line: Redis 8 skips comments, 7.0 refuses them; the unit tests hold that.)"""
    _, files = servers
    bad = (
        "foo bar\n"  # not a user line
        "user a  on\n"  # two blanks: an empty rule does nothing
        "user b on +bogus -nosuch|x +@nocat >x <y badop\n"  # each unknown; the first other
        "user c on\tnopass\n"  # a tab inside a rule: one rule, a syntax error
        "user d\tx on\n"  # a blank in the name
        "user e on\n"
        "user e off\n"  # a duplicate
        "user b on\n"  # b claimed by its bad line
    )
    for path in files:
        path.write_text(INITIAL + bad)
    theirs, ours = (
        exchange(p, ["ACL", "LOAD"], ["ACL", "USERS"]).replace(str(f).encode(), b"F")
        for p, f in zip(ports, files, strict=True)
    )
    assert ours == theirs
    assert ours.count(b"F:") == 7 and ours.count(b"WARNING: Duplicate") == 2
    assert ours.endswith(b"*1\r\n$7\r\ndefault\r\n+OK\r\n")  # nothing changed


def test_load_of_a_missing_file(ports: Ports, servers: tuple[Ports, tuple[Path, Path]]) -> None:
    _, files = servers
    for path in files:
        path.unlink()
    theirs, ours = (
        exchange(p, ["ACL", "LOAD"]).replace(str(f).encode(), b"F")
        for p, f in zip(ports, files, strict=True)
    )
    assert (
        ours
        == theirs
        == b"-ERR Error loading ACLs, opening file 'F': No such file or directory\r\n+OK\r\n"
    )


def test_file_bytes_that_are_not_utf8(
    ports: Ports, servers: tuple[Ports, tuple[Path, Path]]
) -> None:
    """Redis reads and writes the ACL file as bytes: a name and a password that are not UTF-8
    load, authenticate, and come back from ACL SAVE byte for byte."""
    _, files = servers
    for path in files:
        path.write_bytes(INITIAL.encode() + b"user b\xffz on >p\xe9w ~* +@all\n")
    session = [[b"ACL", b"LOAD"], [b"ACL", b"USERS"], [b"AUTH", b"b\xffz", b"p\xe9w"],
               [b"ACL", b"WHOAMI"], [b"AUTH", b"b\xffz", b"pew"],
               [b"ACL", b"SETUSER", b"c\xfe", b"on", b">\x80\x81", b"+@all"], [b"ACL", b"SAVE"],
               [b"AUTH", b"c\xfe", b"\x80\x81"]]  # fmt: skip
    theirs, ours = (exchange_bytes(p, *session) for p in ports)
    assert ours == theirs
    assert b"+OK\r\n$3\r\nb\xffz\r\n" in ours  # authenticated as b\xffz
    saved = [f.read_bytes() for f in files]  # ours names sanitize-payload, as 7.2+ (module doc)
    assert saved[1].replace(b" sanitize-payload", b"") == saved[0] and b"user c\xfe on" in saved[1]


def exchange_bytes(port: int, *commands: list[bytes]) -> bytes:
    """The commands (as bytes) then QUIT on a new connection; every byte received until it
    closes."""
    data = b"".join(encode(c) for c in commands) + encode([b"QUIT"])
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(data)
        out = b""
        while chunk := s.recv(65536):
            out += chunk
    return out


# --- redis-py ------------------------------------------------------------------------------------


def test_redis_py(ports: Ports) -> None:
    clients = [redis.Redis(port=p, decode_responses=True) for p in ports]
    results = []
    for r in clients:
        r.acl_setuser("py", enabled=True, passwords=["+secret"], keys=["py:*"],
                      commands=["+@all", "-flushall"], reset=True)  # fmt: skip
        got = r.acl_getuser("py")
        got["flags"] = [f for f in got["flags"] if f != "sanitize-payload"]
        user = redis.Redis(port=r.connection_pool.connection_kwargs["port"], username="py",
                           password="secret", decode_responses=True)  # fmt: skip
        with pytest.raises(redis.exceptions.NoPermissionError):
            user.set("other", "v")
        results.append((got, r.acl_whoami(), user.acl_whoami(), sorted(r.acl_users()),
                        r.acl_dryrun("py", "set", "py:1", "v"), r.acl_deluser("py"),
                        "stream" in r.acl_cat()))  # fmt: skip
        user.close()
        r.close()
    assert results[1] == results[0]
