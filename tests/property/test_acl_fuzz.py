"""Garbage in, Redis-style answers out: AUTH, HELLO and every ACL subcommand at the sans-I/O
layer (node/acl.py, aclrules.py, users.py and the RESP edge's command functions, called with
a connection's state but no socket).

Invariants, whatever the arguments: a command returns a reply or raises StreamError (Redis's
error line), never anything else; a refused ACL SETUSER, DELUSER or LOAD changes no user; a
SETUSER that succeeds installs exactly the user it prepared, rebuilt from the users record it
logged (what a replica applies), and that record holds no password in clear.
"""

from __future__ import annotations

import contextlib
import hashlib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from xstream.engine.errors import StreamError
from xstream.node import users
from xstream.node.acl import Acl
from xstream.server.resp import aclcommands, commandinfo, conncommands
from xstream.server.resp.codec import encode_error
from xstream.server.resp.conncommands import Conn
from xstream.server.resp.session import Clients

# Words rules are made of: valid ones of every kind, near misses, and noise.
RULE_WORDS = [
    b"on", b"off", b"nopass", b"resetpass", b"reset", b">pw", b">pw2", b"<pw", b"<nothere",
    b"#" + hashlib.sha256(b"pw").hexdigest().encode(), b"#abc", b"!" + b"ab" * 32,
    b"~*", b"~a:*", b"~", b"%R~r:*", b"%W~w*", b"%RW~x", b"%R", b"%RR~x", b"%X~y", b"%~z",
    b"allkeys", b"resetkeys", b"&*", b"&ch", b"allchannels", b"resetchannels", b"+@all",
    b"-@all", b"+@read", b"-@write", b"+@bogus", b"+xadd", b"-xadd", b"+XADD", b"+xgroup",
    b"-xgroup|create", b"+xgroup|bogus", b"+select|0", b"+xadd|x", b"-xadd|x", b"+xadd|",
    b"+xgroup|create|x", b"allcommands", b"nocommands", b"skip-sanitize-payload",
    b"sanitize-payload", b"(~x +get)", b"(~x", b"+get)", b"()", b"(on)", b"clearselectors",
    b"", b" ", b"\x00", b"\xff\xfe",
]  # fmt: skip
NAMES = [b"default", b"alice", b"bob", b"a b", b"", b"\xff", b"x\x00y"]

words = st.one_of(st.sampled_from(RULE_WORDS), st.binary(max_size=12))
names = st.one_of(st.sampled_from(NAMES), st.binary(max_size=6))
argvs = st.lists(st.one_of(words, names), max_size=7)


def conn_with(acl: Acl, logged: list[list[list[bytes]]]) -> Conn:
    """A connection's state over `acl`; users records are applied as a replica does, and
    kept in `logged`."""
    clients = Clients()
    session = clients.add("127.0.0.1:1", "127.0.0.1:2", lambda: None)

    def change(effects: list[list[bytes]]) -> None:
        if effects:
            logged.append(effects)
            users.install(acl, users.applied(acl.users, effects))

    return Conn(session, clients, lambda: "primary", lambda s: (0, 0), lambda i: 0, acl, change)


def answer(call: object) -> object:
    """The command's reply, or its StreamError: nothing else may escape."""
    try:
        return call()  # type: ignore[operator]
    except StreamError as e:
        wire = encode_error(e)  # one line on the wire, whatever the text holds
        assert wire[:1] == b"-" and wire.index(b"\r\n") == len(wire) - 2, wire
        return e


def seeded() -> Acl:
    acl = Acl()
    acl.setuser("alice", ["on", ">pw", "~a:*", "+@all", "(~x +get)"])
    acl.setuser("bob", ["off", "nopass", "-@all", "+select|0"])
    return acl


@given(argv=argvs)
def test_auth_and_hello(argv: list[bytes]) -> None:
    acl = seeded()
    conn = conn_with(acl, [])
    before = acl.listing()
    answer(lambda: aclcommands.auth(conn, [b"AUTH", *argv]))
    answer(lambda: conncommands.hello(conn, [b"HELLO", *argv]))
    answer(lambda: conncommands.hello(conn, [b"HELLO", b"3", b"AUTH", *argv]))
    assert acl.listing() == before
    if conn.session.authenticated:
        assert conn.session.user in acl.users


@given(name=names, rules=st.lists(words, max_size=8))
def test_setuser_all_or_nothing_and_replicated_as_prepared(name: bytes, rules: list[bytes]) -> None:
    acl, logged = seeded(), []
    conn = conn_with(acl, logged)
    before = acl.listing()
    text = name.decode("utf-8", "surrogateescape")
    try:
        expected = acl.prepare(text, [r.decode("utf-8", "surrogateescape") for r in rules])
    except (ValueError, users.AclError):
        expected = None
    reply = answer(lambda: aclcommands.acl(conn, [b"ACL", b"SETUSER", name, *rules]))
    if expected is None:
        assert isinstance(reply, StreamError) and acl.listing() == before and not logged
        return
    got = acl.users[text]
    assert reply is not None and not isinstance(reply, StreamError)
    assert (got.tokens(), got.allowed, got.firstargs) == (
        expected.tokens(), expected.allowed, expected.firstargs)  # fmt: skip
    for effects in logged:
        assert not any(w[:1] in (b">", b"<") for effect in effects for w in effect)
    answer(lambda: aclcommands.acl(conn, [b"ACL", b"GETUSER", name]))
    answer(lambda: aclcommands.acl(conn, [b"ACL", b"LIST"]))


@given(argv=argvs)
@settings(max_examples=4 * settings.default.max_examples)
def test_every_acl_subcommand(argv: list[bytes], tmp_path_factory: pytest.TempPathFactory) -> None:
    acl, logged = seeded(), []
    acl.file = str(tmp_path_factory.mktemp("acl") / "users.acl")
    Path(acl.file).write_text("user default on nopass ~* &* +@all\nuser carol on nopass\n")
    conn = conn_with(acl, logged)
    for sub in (b"SETUSER", b"DELUSER", b"GETUSER", b"DRYRUN", b"LOAD", b"SAVE", b"LOG",
                b"CAT", b"GENPASS", b"WHOAMI", b"LIST", b"USERS", b"HELP"):  # fmt: skip
        before, records = acl.listing(), len(logged)
        reply = answer(lambda s=sub: aclcommands.acl(conn, [b"ACL", s, *argv]))  # type: ignore[misc]
        if isinstance(reply, StreamError):
            assert acl.listing() == before and len(logged) == records, sub
    answer(lambda: aclcommands.acl(conn, [b"ACL", *argv]))
    answer(lambda: commandinfo.check([b"ACL", *argv]) if argv else None)


@given(lines=st.lists(st.lists(st.one_of(words, names), max_size=5), max_size=4))
def test_load_of_any_file(
    lines: list[list[bytes]], tmp_path_factory: pytest.TempPathFactory
) -> None:
    acl, logged = seeded(), []
    acl.file = str(tmp_path_factory.mktemp("load") / "users.acl")
    text = b"\n".join(b" ".join([b"user", *line]) if i % 2 else b" ".join(line)
                      for i, line in enumerate(lines))  # fmt: skip
    Path(acl.file).write_bytes(text)
    conn = conn_with(acl, logged)
    before = acl.listing()
    reply = answer(lambda: aclcommands.acl(conn, [b"ACL", b"LOAD"]))
    if isinstance(reply, StreamError):
        assert acl.listing() == before and not logged
    else:
        assert "default" in acl.users


@given(rules=st.lists(words, max_size=8), argv=argvs)
def test_checks_and_dryrun_never_fail(rules: list[bytes], argv: list[bytes]) -> None:
    acl = seeded()
    with contextlib.suppress(ValueError, users.AclError):
        acl.setuser("u", [r.decode("utf-8", "surrogateescape") for r in rules])
    for user in acl.users.values():
        acl.check(user, argv)
        acl.check(user, [b"XADD", *argv])
    conn = conn_with(acl, [])
    answer(lambda: aclcommands.acl(conn, [b"ACL", b"DRYRUN", b"u", b"xadd", *argv]))
    answer(lambda: aclcommands.gate(conn, argv) if argv else None)
