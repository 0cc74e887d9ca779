"""AUTH, ACL, and the gate every RESP command passes: who the connection is, and what it may run.

    gate(conn, argv, context)  None, or the StreamError to answer instead of running argv:
                               NOAUTH while the connection is not authenticated (all but AUTH,
                               HELLO, QUIT, RESET), NOPERM when the user's rules refuse it
                               (logged in ACL LOG with the context: toplevel or multi)
    AUTH [user] pass           the connection becomes `user`; WRONGPASS (logged) otherwise
    ACL WHOAMI|LIST|USERS|GETUSER|SETUSER|DELUSER|CAT|LOAD|SAVE|LOG|GENPASS|DRYRUN|HELP

The rules are node/acl.py's; ACL LOAD and SAVE read and write the `--aclfile` (Redis's format,
written whole then renamed). Texts are Redis 8's (src/acl.c); those 7.0 shares are compared
with redis-server in tests/compat. Passwords never reach a log line.

Users are replicated (node/users.py): SETUSER, DELUSER and LOAD are writes of the node
(`Conn.change_users`, the node's change_users): refused first as any write is (a replica's
READONLY, MISCONF, ...), then a users record is logged, shipped and applied, and the
connection's loop settles it as a write (fsync policy) before the reply. A change that
changes nothing logs nothing. SAVE writes this node's own file on any role; LOG is each
node's own.
"""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Callable
from pathlib import Path

from xstream.engine.commands import arity_ok
from xstream.engine.errors import StreamError, unknown_subcommand, wrong_arity
from xstream.engine.ids import string2ll
from xstream.engine.reply import OK, Reply, ReplyMap, Status
from xstream.node import acl as aclmod
from xstream.node import aclcats, users
from xstream.node.acl import User
from xstream.node.aclrules import AclError, Selector

from .conncommands import Conn, EdgeReply, login, note_denial

NO_AUTH = frozenset({b"AUTH", b"HELLO", b"QUIT", b"RESET"})  # Redis's CMD_NO_AUTH
_UNCHANGED = (
    "WARNING: ACL errors detected, no change to the previously active ACL rules was performed"
)
_NO_FILE = (
    "This Redis instance is not configured to use an ACL file. You may want to specify users "
    "via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis "
    "configuration file set) in order to store users in the Redis configuration."
)


def user_of(conn: Conn) -> User | None:
    """The connection's user; None if it was deleted (the connection is then closed)."""
    return conn.acl.users.get(conn.session.user)


def allowed(conn: Conn, argv: list[bytes]) -> bool:
    """Whether `gate` would let argv run (checked, not logged: for batching)."""
    user = user_of(conn)
    return conn.session.authenticated and user is not None and conn.acl.check(user, argv) is None


def gate(conn: Conn, argv: list[bytes], context: str = "toplevel") -> StreamError | None:
    session = conn.session
    if not session.authenticated and argv[0].upper() not in NO_AUTH:
        return StreamError(aclmod.NOAUTH, "NOAUTH")
    user = user_of(conn)
    if user is None:
        session.closing = True
        return StreamError(aclmod.NOAUTH, "NOAUTH")
    denial = conn.acl.check(user, argv)
    if denial is None:
        return None
    note_denial(conn, denial, context)
    return StreamError(denial.message, "NOPERM")


def auth(conn: Conn, argv: list[bytes]) -> EdgeReply:
    """AUTH password | AUTH username password."""
    if len(argv) < 2:
        raise wrong_arity("auth")
    if len(argv) > 3:
        raise StreamError("syntax error")
    if len(argv) == 2:
        if conn.acl.default.nopass:
            raise StreamError(
                "AUTH <password> called without any password configured for the default "
                "user. Are you sure your configuration is correct?"
            )
        login(conn, b"default", argv[1])
    else:
        login(conn, argv[1], argv[2])
    return OK


# --- ACL ----------------------------------------------------------------------------------------


def _text(b: bytes) -> str:
    return b.decode("utf-8", "surrogateescape")


def _getuser(conn: Conn, argv: list[bytes]) -> Reply:
    user = conn.acl.users.get(_text(argv[2]))
    if user is None:
        return None
    return ReplyMap(
        [
            (b"flags", [f.encode() for f in user.flags()]),
            (b"passwords", [h.encode() for h in user.passwords]),
            *_perms(user),
            (b"selectors", [ReplyMap(_perms(s)) for s in user.selectors]),
        ]
    )


def _perms(sel: Selector) -> list[tuple[bytes, Reply]]:
    return [
        (b"commands", _b(sel.command_text())),
        (b"keys", _b(sel.key_text())),
        (b"channels", _b(" ".join("&" + c for c in sel.channels))),
    ]


def _b(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def _change(conn: Conn, effects: list[list[bytes]]) -> None:
    """A users record: logged and shipped by the node, then applied; no effects: only the
    node's refusal of writes, if any (a replica's READONLY), raised before anything runs."""
    if conn.change_users is not None:
        conn.change_users(effects)
    elif effects:
        users.install(conn.acl, users.applied(conn.acl.users, effects))


def _setuser(conn: Conn, argv: list[bytes]) -> Reply:
    _change(conn, [])
    try:
        user = conn.acl.prepare(_text(argv[2]), [_text(a) for a in argv[3:]])
    except (AclError, ValueError) as e:
        raise StreamError(str(e)) from None
    current = conn.acl.users.get(user.name)
    if current is None or current.tokens() != user.tokens():  # else: nothing to log
        _change(conn, [users.setuser_effect(user)])
    return OK


def _deluser(conn: Conn, argv: list[bytes]) -> Reply:
    _change(conn, [])
    try:
        victims = conn.acl.doomed([_text(a) for a in argv[2:]])
    except ValueError as e:
        raise StreamError(str(e)) from None
    if victims:
        _change(conn, [users.deluser_effect(victims)])
    return len(victims)


def _cat(conn: Conn, argv: list[bytes]) -> Reply:
    if len(argv) == 2:
        return [c.encode() for c in aclcats.CATEGORIES]
    cat = _text(argv[2]).lower()
    if cat not in aclcats.CATEGORIES:
        raise StreamError(f"Unknown category '{_text(argv[2])[:128]}'")
    return [n.encode() for n in aclcats.commands_in(cat)]


def _file(conn: Conn) -> Path:
    if not conn.acl.file:
        raise StreamError(_NO_FILE)
    return Path(conn.acl.file)


def _load(conn: Conn, argv: list[bytes]) -> Reply:
    _change(conn, [])
    path = _file(conn)
    try:
        loaded = conn.acl.load(aclmod.file_text(path.read_bytes()), str(path))
    except OSError as e:  # Redis's text ends with strerror's
        raise StreamError(f"Error loading ACLs, opening file '{path}': {e.strerror}") from None
    except ValueError as e:
        raise StreamError(f"{e}{_UNCHANGED}") from None
    if not users.same(loaded, conn.acl.users):
        _change(conn, users.load_effects(loaded))
    return OK


def _save(conn: Conn, argv: list[bytes]) -> Reply:
    save_file(conn.acl, _file(conn))
    return OK


def save_file(acl: aclmod.Acl, path: Path) -> None:
    """Write the users to `path` whole, then rename (as Redis's ACLSaveToFile); 0600."""
    tmp = path.with_name(path.name + ".tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(aclmod.file_bytes(acl.save()))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError:
        raise StreamError(
            "There was an error trying to save the ACLs. Please check the server logs for "
            "more information"
        ) from None


def _log(conn: Conn, argv: list[bytes]) -> Reply:
    """ACL LOG [count | RESET]: the newest `count` entries (10; a negative count: none)."""
    if len(argv) == 3 and argv[2].upper() == b"RESET":
        conn.acl.log.clear()
        return OK
    count = _integer(argv[2]) if len(argv) == 3 else 10
    now = time.time_ns() // 1_000_000
    return [_entry(e, now) for e in conn.acl.log[: max(count, 0)]]


def _integer(arg: bytes) -> int:
    n = string2ll(arg)
    if n is None:
        raise StreamError("value is not an integer or out of range")
    return n


def _entry(e: aclmod.LogEntry, now_ms: int) -> Reply:
    return ReplyMap(
        [
            (b"count", e.count),
            (b"reason", e.reason.encode()),
            (b"context", e.context.encode()),
            (b"object", _b(e.object)),
            (b"username", _b(e.username)),
            (b"age-seconds", repr((now_ms - e.created_ms) / 1000).encode()),
            (b"client-info", _b(e.client_info)),
            (b"entry-id", e.entry_id),
            (b"timestamp-created", e.created_ms),
            (b"timestamp-last-updated", e.updated_ms),
        ]
    )


def _genpass(conn: Conn, argv: list[bytes]) -> Reply:
    bits = _integer(argv[2]) if len(argv) == 3 else 256
    if not 0 < bits <= 4096:
        raise StreamError("ACL GENPASS argument must be the number of bits for the output "
                          "password, a positive number up to 4096")  # fmt: skip
    return secrets.token_hex((bits + 7) // 8)[: (bits + 3) // 4].encode()


def _dryrun(conn: Conn, argv: list[bytes]) -> Reply:
    """ACL DRYRUN user command [arg ...]: +OK if the user may run it, else why not (a bulk
    string, Redis's verbose text); nothing runs."""
    from .commandinfo import find  # noqa: PLC0415 (commandinfo imports this module)

    name = _text(argv[2])
    user = conn.acl.users.get(name)
    if user is None:
        raise StreamError(f"User '{name}' not found")
    command = argv[3:]
    found = find(command)
    if found is None:
        raise StreamError(f"Command '{_text(command[0])}' not found")
    fullname, arity = found
    if not arity_ok(arity, len(command)):
        raise wrong_arity(fullname)
    denial = conn.acl.check(user, command)
    return OK if denial is None else _b(aclmod.dryrun_text(denial, user.name))


def _help(conn: Conn, argv: list[bytes]) -> Reply:
    lines = [
        "ACL <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "CAT [<category>]", "    The categories, or the commands of one.",
        "DELUSER <username> [<username> ...]", "    Remove users (replicated).",
        "DRYRUN <username> <command> [<arg> ...]", "    Whether a user may run a command.",
        "GETUSER <username>", "    A user's flags, passwords (hashed) and rules.",
        "GENPASS [<bits>]", "    A random password (256 bits by default).",
        "LIST", "    Every user as an ACL file line.",
        "LOAD", "    Replace the users with the ACL file's (replicated).",
        "LOG [<count> | RESET]", "    The newest denials, or forget them.",
        "SAVE", "    Write the users to this node's ACL file.",
        "SETUSER <username> <rule> [<rule> ...]", "    Create or change a user (replicated).",
        "USERS", "    The users' names.",
        "WHOAMI", "    This connection's user.",
        "HELP", "    Print this help.",
    ]  # fmt: skip
    return [Status(line) for line in lines]


AclHandler = Callable[[Conn, list[bytes]], Reply]
SUBCOMMANDS: dict[
    bytes, tuple[AclHandler, int]
] = {  # name: (handler, arity as Redis's: negative = at least)
    b"WHOAMI": (lambda c, a: _b(c.session.user), 2),
    b"LIST": (lambda c, a: [_b(line) for line in c.acl.listing()], 2),
    b"USERS": (lambda c, a: [_b(n) for n in sorted(c.acl.users)], 2),
    b"GETUSER": (_getuser, 3),
    b"SETUSER": (_setuser, -3),
    b"DELUSER": (_deluser, -3),
    b"CAT": (_cat, -2),
    b"LOAD": (_load, 2),
    b"SAVE": (_save, 2),
    b"LOG": (_log, -2),
    b"GENPASS": (_genpass, -2),
    b"DRYRUN": (_dryrun, -4),
    b"HELP": (_help, 2),
}
_AT_MOST_ONE = (b"CAT", b"LOG", b"GENPASS")  # one optional argument, checked by the command


def acl(conn: Conn, argv: list[bytes]) -> EdgeReply:
    if len(argv) < 2:
        raise wrong_arity("acl")
    sub = argv[1].upper()
    entry = SUBCOMMANDS.get(sub)
    if entry is None:
        raise unknown_subcommand(argv[0], argv[1])
    handler, arity = entry
    if (len(argv) != arity) if arity > 0 else len(argv) < -arity:
        raise wrong_arity(f"acl|{sub.decode().lower()}")
    if sub in _AT_MOST_ONE and len(argv) > 3:
        raise StreamError(
            f"unknown subcommand or wrong number of arguments for '{_text(argv[1])[:128]}'. "
            "Try ACL HELP."
        )
    return handler(conn, argv)
