"""The commands a RESP connection answers itself: they read or change the connection, not
the data, so they never reach the node (HELLO, PING, ECHO, QUIT, RESET, SELECT, CLIENT).

    handler(conn, argv) -> Reply | Verbatim      raises StreamError with Redis's line

Texts and arities are Redis's (checked on redis-server 7.0.15; CLIENT SETINFO and NO-TOUCH
are 7.2's). COMMAND is in commandinfo.py. Everything not in EDGE_COMMANDS goes to the node.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from xstream.engine.commands import arity_ok
from xstream.engine.errors import StreamError, unknown_subcommand, wrong_arity
from xstream.engine.ids import string2ll
from xstream.engine.reply import OK, Reply, ReplyMap, Status
from xstream.node.acl import WRONGPASS, Acl, Denial, auth_denial
from xstream.node.infotext import VERSION

from .codec import encode
from .session import Clients, Session

NOT_AN_INTEGER = "value is not an integer or out of range"


@dataclass(frozen=True)
class Verbatim:
    """A text reply: RESP3 `=<len>\\r\\ntxt:<text>`, RESP2 a bulk (CLIENT INFO, INFO)."""

    text: bytes


@dataclass
class Conn:
    """What an edge command may see: its connection, the others, and the node's role."""

    session: Session
    clients: Clients
    role: Callable[[], str]  # "primary" or "replica": the node of the moment's
    buffers: Callable[[Session], tuple[int, int]]  # (query, output) bytes of a connection
    check_db: Callable[[bytes], int]  # a database index, or SELECT's errors (Engine.check_db)
    acl: Acl = field(default_factory=Acl)  # the node's users (shared by every connection)
    # Logs and applies a users record (Node.change_users: the node of the moment's; a
    # replica refuses it with READONLY); the default changes `acl` alone (no node: tests).
    change_users: Callable[[list[list[bytes]]], object] | None = None


EdgeReply = Reply | Verbatim
EdgeCommand = Callable[[Conn, list[bytes]], EdgeReply]


def encode_edge(reply: EdgeReply, proto: int) -> bytes:
    """An edge command's reply in RESP `proto`."""
    if isinstance(reply, Verbatim):
        if proto == 3:
            return b"=%d\r\ntxt:%s\r\n" % (len(reply.text) + 4, reply.text)
        return encode(reply.text, proto)
    return encode(reply, proto)


def _int(arg: bytes, message: str = NOT_AN_INTEGER) -> int:
    n = string2ll(arg)
    if n is None:
        raise StreamError(message)
    return n


def _valid_name(name: bytes) -> bool:
    """Redis's validateClientName: printable ASCII without blanks ('!' to '~')."""
    return all(0x21 <= b <= 0x7E for b in name)


# --- HELLO, PING, ECHO, QUIT, RESET, SELECT -----------------------------------------------------


def hello(conn: Conn, argv: list[bytes]) -> EdgeReply:
    """HELLO [protover [AUTH username password] [SETNAME clientname]]."""
    proto = 0
    if len(argv) >= 2:
        proto = _int(argv[1], "Protocol version is not an integer or out of range")
        if proto not in (2, 3):
            raise StreamError("unsupported protocol version", "NOPROTO")
    name: bytes | None = None
    credentials: tuple[bytes, bytes] | None = None
    i = 2
    while i < len(argv):
        more = len(argv) - 1 - i
        opt = argv[i].upper()
        if opt == b"AUTH" and more >= 2:
            credentials = (argv[i + 1], argv[i + 2])
            i += 3
        elif opt == b"SETNAME" and more >= 1:
            name = argv[i + 1]
            if not _valid_name(name):
                raise StreamError(
                    "Client names cannot contain spaces, newlines or special characters."
                )
            i += 2
        else:
            raise StreamError(f"Syntax error in HELLO option '{_text(argv[i])}'")
    session = conn.session
    if credentials is not None:
        login(conn, *credentials)
    if not session.authenticated:
        raise StreamError(
            "HELLO must be called with the client already authenticated, otherwise the "
            "HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client "
            "and select the RESP protocol version at the same time",
            "NOAUTH",
        )
    if name is not None:
        session.name = name
    if proto:
        session.proto = proto
    role = b"master" if conn.role() == "primary" else b"replica"
    return ReplyMap(
        [
            (b"server", b"redis"),
            (b"version", VERSION.encode()),
            (b"proto", session.proto),
            (b"id", session.id),
            (b"mode", b"standalone"),
            (b"role", role),
            (b"modules", []),
        ]
    )


def login(conn: Conn, username: bytes, password: bytes) -> None:
    """The connection becomes `username` (AUTH, HELLO AUTH), or WRONGPASS, logged in ACL LOG."""
    user = conn.acl.authenticate(username.decode("utf-8", "surrogateescape"), password)
    if user is None:
        note_denial(conn, auth_denial(), "toplevel", username.decode("utf-8", "replace"))
        raise StreamError(WRONGPASS, "WRONGPASS")
    conn.session.user, conn.session.authenticated = user.name, True


def note_denial(conn: Conn, denial: Denial, context: str, username: str = "") -> None:
    """An ACL LOG entry for this connection (its CLIENT INFO line as client-info); a failed
    AUTH names the user it tried, as Redis's."""
    session = conn.session
    info = session.info_line(*conn.buffers(session))
    now = time.time_ns() // 1_000_000
    conn.acl.note(denial, username or session.user, context, info, now)


def ping(conn: Conn, argv: list[bytes]) -> EdgeReply:
    if len(argv) > 2:
        raise wrong_arity("ping")
    return argv[1] if len(argv) == 2 else Status("PONG")


def echo(conn: Conn, argv: list[bytes]) -> EdgeReply:
    if len(argv) != 2:
        raise wrong_arity("echo")
    return argv[1]


def quit_(conn: Conn, argv: list[bytes]) -> EdgeReply:
    conn.session.closing = True  # after this reply
    return OK


def reset(conn: Conn, argv: list[bytes]) -> EdgeReply:
    if len(argv) != 1:
        raise wrong_arity("reset")
    conn.session.reset()
    conn.session.user = "default"  # Redis's clearClientConnectionState
    conn.session.authenticated = not conn.acl.requires_auth()
    return Status("RESET")


def select(conn: Conn, argv: list[bytes]) -> EdgeReply:
    """SELECT index: the connection's database from now on (the node checks the index)."""
    if len(argv) != 2:
        raise wrong_arity("select")
    conn.session.db = conn.check_db(argv[1])
    return OK


# --- CLIENT -------------------------------------------------------------------------------------


def _client_id(conn: Conn, argv: list[bytes]) -> EdgeReply:
    return conn.session.id


def _client_getname(conn: Conn, argv: list[bytes]) -> EdgeReply:
    return conn.session.name or None


def _client_setname(conn: Conn, argv: list[bytes]) -> EdgeReply:
    if not _valid_name(argv[2]):
        raise StreamError("Client names cannot contain spaces, newlines or special characters.")
    conn.session.name = argv[2]
    return OK


def _client_setinfo(conn: Conn, argv: list[bytes]) -> EdgeReply:
    attr = argv[2].lower()
    if attr not in (b"lib-name", b"lib-ver"):
        raise StreamError(f"Unrecognized option '{_text(argv[2])}'")
    if not _valid_name(argv[3]):
        raise StreamError(
            f"{_text(argv[2])} cannot contain spaces, newlines or special characters."
        )
    if attr == b"lib-name":
        conn.session.lib_name = argv[3]
    else:
        conn.session.lib_ver = argv[3]
    return OK


def _client_flag(conn: Conn, argv: list[bytes]) -> EdgeReply:
    """NO-EVICT, NO-TOUCH on|off: accepted, nothing to change (no eviction, no LRU)."""
    if argv[2].lower() not in (b"on", b"off"):
        raise StreamError("syntax error")
    return OK


def _line(conn: Conn, session: Session) -> str:
    return session.info_line(*conn.buffers(session))


def _client_info(conn: Conn, argv: list[bytes]) -> EdgeReply:
    return Verbatim((_line(conn, conn.session) + "\n").encode("utf-8", "surrogateescape"))


def _client_list(conn: Conn, argv: list[bytes]) -> EdgeReply:
    """CLIENT LIST [TYPE normal|master|replica|pubsub] [ID id ...]."""
    chosen = list(conn.clients)
    i = 2
    while i < len(argv):
        opt = argv[i].upper()
        if opt == b"TYPE" and i + 1 < len(argv):
            kind = argv[i + 1].lower()
            if kind not in (b"normal", b"master", b"replica", b"slave", b"pubsub"):
                raise StreamError(f"Unknown client type '{_text(argv[i + 1])}'")
            chosen = chosen if kind == b"normal" else []
            i += 2
        elif opt == b"ID" and i + 1 < len(argv):
            ids = {_int(a, "Invalid client ID") for a in argv[i + 1 :]}
            chosen = [s for s in chosen if s.id in ids]
            i = len(argv)
        else:
            raise StreamError("syntax error")
    text = "".join(_line(conn, s) + "\n" for s in chosen)
    return Verbatim(text.encode("utf-8", "surrogateescape"))


def _client_kill(conn: Conn, argv: list[bytes]) -> EdgeReply:
    """CLIENT KILL ip:port (+OK), or CLIENT KILL <filter value> ... (how many were killed)."""
    if len(argv) == 3:
        addr = argv[2].decode("utf-8", "surrogateescape")
        victims = [s for s in conn.clients if s.addr == addr]
        if not victims:
            raise StreamError("No such client")
        _kill(conn, victims)
        return OK
    if len(argv) % 2:
        raise StreamError("syntax error")
    want: dict[bytes, object] = {}  # filter -> the value a client must have
    skipme = True
    for word, value in zip(argv[2::2], argv[3::2], strict=True):
        opt = word.upper()
        text = value.decode("utf-8", "surrogateescape")
        if opt == b"ID":
            cid = string2ll(value)
            if cid is None or cid <= 0:
                raise StreamError("client-id should be greater than 0")
            want[opt] = cid
        elif opt in (b"ADDR", b"LADDR", b"USER"):
            want[opt] = text
        elif opt == b"TYPE":
            if value.lower() not in (b"normal", b"master", b"replica", b"slave", b"pubsub"):
                raise StreamError(f"Unknown client type '{text}'")
            want[opt] = value.lower()
        elif opt == b"SKIPME" and value.lower() in (b"yes", b"no"):
            skipme = value.lower() == b"yes"
        else:
            raise StreamError("syntax error")
    victims = [s for s in conn.clients if _matches(s, want) and not (skipme and s is conn.session)]
    _kill(conn, victims)
    return len(victims)


def _matches(s: Session, want: dict[bytes, object]) -> bool:
    have = {b"ID": s.id, b"ADDR": s.addr, b"LADDR": s.laddr, b"USER": "default",
            b"TYPE": b"normal"}  # fmt: skip
    return all(have[k] == v for k, v in want.items())


def _kill(conn: Conn, victims: list[Session]) -> None:
    for s in victims:
        if s is conn.session:
            s.closing = True  # after the reply, as Redis does
        else:
            s.kill()


def _client_help(conn: Conn, argv: list[bytes]) -> EdgeReply:
    lines = [
        "CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "GETNAME", "ID", "INFO", "KILL <ip:port>", "KILL <option> <value> [<option> <value> ...]",
        "LIST [TYPE (NORMAL|MASTER|REPLICA|PUBSUB)] [ID <id> [<id> ...]]",
        "NO-EVICT (ON|OFF)", "NO-TOUCH (ON|OFF)", "SETINFO <LIB-NAME|LIB-VER> <value>",
        "SETNAME <name>", "HELP",
    ]  # fmt: skip
    return [Status(line) for line in lines]


# name -> (handler, Redis's arity with the container counted)
CLIENT_SUBCOMMANDS: dict[bytes, tuple[EdgeCommand, int]] = {
    b"id": (_client_id, 2),
    b"getname": (_client_getname, 2),
    b"setname": (_client_setname, 3),
    b"setinfo": (_client_setinfo, 4),
    b"no-evict": (_client_flag, 3),
    b"no-touch": (_client_flag, 3),
    b"info": (_client_info, 2),
    b"list": (_client_list, -2),
    b"kill": (_client_kill, -3),
    b"help": (_client_help, 2),
}


def client(conn: Conn, argv: list[bytes]) -> EdgeReply:
    if len(argv) < 2:
        raise wrong_arity("client")
    sub = argv[1].lower()
    entry = CLIENT_SUBCOMMANDS.get(sub)
    if entry is None:
        raise unknown_subcommand(argv[0], argv[1])
    handler, arity = entry
    if not arity_ok(arity, len(argv)):
        raise wrong_arity(f"client|{sub.decode()}")
    return handler(conn, argv)


def _text(b: bytes) -> str:
    return b.decode("utf-8", "surrogateescape")
