"""COMMAND (COUNT, INFO, DOCS, LIST), and the table of what the RESP edge answers itself.

The command list is derived, not written out: the engine's table (engine.commands: name,
arity, write flag, subcommands), the node's server commands (node.base.SERVER_COMMANDS) and
the edge's own (EDGE_COMMANDS below). Each entry is Redis 7's ten-field COMMAND INFO reply:

    name  arity  flags  first-key  last-key  step  acl-categories  tips  key-specs  subcommands

Key specs and tips are empty; the key positions and flags are what clients use to route
(first key 1 for most stream commands; XREAD and XREADGROUP: movablekeys, 0 0 0).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, cast

from xstream.engine import glob
from xstream.engine.commands import COMMANDS, SUBCOMMANDS
from xstream.engine.errors import StreamError, unknown_command, unknown_subcommand, wrong_arity
from xstream.engine.reply import Reply, ReplyMap, Status
from xstream.node.base import SERVER_COMMANDS

from . import aclcommands
from . import conncommands as cc

EDGE_COMMANDS: dict[bytes, cc.EdgeCommand] = {
    b"HELLO": cc.hello,
    b"PING": cc.ping,
    b"ECHO": cc.echo,
    b"QUIT": cc.quit_,
    b"RESET": cc.reset,
    b"SELECT": cc.select,
    b"CLIENT": cc.client,
    b"AUTH": aclcommands.auth,
    b"ACL": aclcommands.acl,
}

_TX_FLAGS = ("noscript", "loading", "stale", "fast", "allow_busy")
# Commands outside the engine's table: (arity, flags, first key, last key, step, group).
_OTHERS: dict[str, tuple[int, tuple[str, ...], int, int, int, str]] = {
    "hello": (-1, ("noscript", "loading", "stale", "fast", "no_auth"), 0, 0, 0, "connection"),
    "ping": (-1, ("fast", "stale"), 0, 0, 0, "connection"),
    "echo": (2, ("fast",), 0, 0, 0, "connection"),
    "quit": (-1, ("noscript", "loading", "stale", "fast", "no_auth"), 0, 0, 0, "connection"),
    "reset": (1, ("noscript", "loading", "stale", "fast", "no_auth"), 0, 0, 0, "connection"),
    "select": (2, ("loading", "stale", "fast"), 0, 0, 0, "connection"),
    "client": (-2, (), 0, 0, 0, "connection"),
    "auth": (
        -2,
        ("noscript", "loading", "stale", "fast", "no_auth", "allow_busy"),
        0,
        0,
        0,
        "connection",
    ),
    "acl": (-2, (), 0, 0, 0, "server"),
    "command": (-1, ("loading", "stale"), 0, 0, 0, "server"),
    "wait": (3, ("noscript", "blocking"), 0, 0, 0, "generic"),
    "role": (1, ("noscript", "loading", "stale", "fast"), 0, 0, 0, "server"),
    "info": (-1, ("loading", "stale"), 0, 0, 0, "server"),
    # transactions (multi.py), Redis 7's flags
    "multi": (1, _TX_FLAGS, 0, 0, 0, "transactions"),
    "exec": (1, ("noscript", "loading", "stale", "skip_slowlog"), 0, 0, 0, "transactions"),
    "discard": (1, _TX_FLAGS, 0, 0, 0, "transactions"),
    "watch": (-2, _TX_FLAGS, 1, -1, 1, "transactions"),
    "unwatch": (1, _TX_FLAGS, 0, 0, 0, "transactions"),
    # node/servercmds.py
    "config": (-2, (), 0, 0, 0, "server"),
    "time": (1, ("loading", "stale", "fast"), 0, 0, 0, "server"),
    "lastsave": (1, ("loading", "stale", "fast"), 0, 0, 0, "server"),
    "save": (1, ("admin", "noscript", "no_async_loading", "no_multi"), 0, 0, 0, "server"),
    "bgsave": (-1, ("admin", "noscript", "no_async_loading"), 0, 0, 0, "server"),
    "bgrewriteaof": (1, ("admin", "noscript", "no_async_loading"), 0, 0, 0, "server"),
    "debug": (-2, ("admin", "noscript", "loading", "stale", "protected"), 0, 0, 0, "server"),
    "shutdown": (-1, ("admin", "noscript", "loading", "stale", "no_multi"), 0, 0, 0, "server"),
    "waitaof": (4, ("noscript", "blocking"), 0, 0, 0, "generic"),
    "function": (-2, (), 0, 0, 0, "scripting"),
    "script": (-2, (), 0, 0, 0, "scripting"),
}
_NO_KEYS = {"keys", "scan", "flushall", "dbsize", "xconfigset"}
_ALL_KEYS = {"del", "exists"}
_MOVABLE = {"xread", "xreadgroup"}


@dataclass(frozen=True)
class Info:
    name: str  # lower case, `container|sub` for subcommands
    arity: int
    flags: tuple[str, ...]
    first: int  # first key's position; 0: none (or movable)
    last: int  # last key's; -1: the last argument
    step: int
    group: str  # COMMAND DOCS group
    subcommands: tuple[Info, ...] = ()

    def reply(self) -> Reply:
        cats = [f"@{'write' if 'write' in self.flags else 'read'}", f"@{self.group}"]
        if "blocking" in self.flags:
            cats.append("@blocking")
        return [
            self.name.encode(),
            self.arity,
            [Status(f) for f in self.flags],
            self.first,
            self.last,
            self.step,
            [Status(c) for c in cats],
            [],
            [],
            [s.reply() for s in self.subcommands],
        ]

    def docs(self) -> Reply:
        fields: list[tuple[bytes, Reply]] = [
            (b"summary", b""),
            (b"since", b"1.0.0"),
            (b"group", self.group.encode()),
        ]
        if self.subcommands:
            subs = ReplyMap((s.name.encode(), s.docs()) for s in self.subcommands)
            fields.append((b"subcommands", subs))
        return ReplyMap(fields)


_SET_COMMANDS = {"sadd", "srem", "smembers", "sismember", "scard"}  # COMMAND DOCS's group


def _engine_info(name: str, arity: int, write: bool, subs: tuple[Info, ...] = ()) -> Info:
    flags: tuple[str, ...] = ("write",) if write else ("readonly",)
    base = name.partition("|")[0]
    if base in _MOVABLE:
        flags += ("blocking", "movablekeys")
    keys = (0, 0, 0) if base in _NO_KEYS | _MOVABLE else (1, -1, 1) if base in _ALL_KEYS else (
        1, 1, 1
    )  # fmt: skip
    if "|" in name:
        keys = (2, 2, 1) if base in ("xinfo", "xgroup", "memory") else keys
    group = "stream" if base.startswith("x") else "set" if base in _SET_COMMANDS else "keyspace"
    return Info(name, arity, flags, *keys, group, subs)


def _table() -> dict[str, Info]:
    table: dict[str, Info] = {}
    for cmd in COMMANDS.values():
        table[cmd.fullname] = _engine_info(cmd.fullname, cmd.arity, cmd.write)
    for container, subs in SUBCOMMANDS.items():
        name = container.decode()
        infos = tuple(_engine_info(c.fullname, c.arity, c.write) for c in subs.values())
        table[name] = Info(name, -2, (), 0, 0, 0, infos[0].group, infos)
    for name, (arity, flags, first, last, step, group) in _OTHERS.items():
        table[name] = Info(name, arity, flags, first, last, step, group)
    assert {n.decode().lower() for n in SERVER_COMMANDS} <= table.keys()
    assert {n.decode().lower() for n in EDGE_COMMANDS} <= table.keys()
    return dict(sorted(table.items()))


TABLE = _table()


def _subcommand_arities() -> dict[str, dict[str, int]]:
    """The edge's own containers' subcommands: container -> sub -> arity (Redis's)."""
    acl = {n.decode().lower(): arity for n, (_, arity) in aclcommands.SUBCOMMANDS.items()}
    client = {n.decode(): arity for n, (_, arity) in cc.CLIENT_SUBCOMMANDS.items()}
    return {"acl": acl, "client": client}


_EDGE_SUBS = _subcommand_arities()


def find(argv: list[bytes]) -> tuple[str, int] | None:
    """Redis's lookupCommand: the fullname and arity of the command argv names (a
    container's subcommand when one follows it), or None if there is no such command."""
    name = argv[0].decode("utf-8", "replace").lower()
    info = TABLE.get(name)
    if info is None:
        return None
    subs = _EDGE_SUBS.get(name)
    if len(argv) < 2 or not (info.subcommands or subs):
        return name, info.arity
    sub = argv[1].decode("utf-8", "replace").lower()
    if subs is not None:
        arity = subs.get(sub)
        return None if arity is None else (f"{name}|{sub}", arity)
    for s in info.subcommands:
        if s.name == f"{name}|{sub}":
            return s.name, s.arity
    return None


# Commands without subcommands by their name as clients send it, lower or upper case:
# (fullname, arity), what find() answers for them, without decoding (other spellings: find).
_PLAIN: Final = {
    spelling: (name, info.arity)
    for name, info in TABLE.items()
    if not info.subcommands and name not in _EDGE_SUBS
    for spelling in (name.encode(), name.upper().encode())
}


def check(argv: list[bytes]) -> None:
    """What Redis checks before NOAUTH and NOPERM (processCommand): an unknown command or
    subcommand, a wrong number of arguments; StreamError with Redis's line."""
    found = _PLAIN.get(argv[0]) or find(argv)
    if found is None:
        name = argv[0].decode("utf-8", "replace").lower()
        if len(argv) > 1 and (name in _EDGE_SUBS or TABLE.get(name, _NONE).subcommands):
            raise unknown_subcommand(argv[0], argv[1])
        raise unknown_command(argv)
    fullname, arity = found
    if not (len(argv) == arity if arity >= 0 else len(argv) >= -arity):
        raise wrong_arity(fullname)


_NONE = Info("", 0, (), 0, 0, 0, "")


def _info(argv: list[bytes]) -> Reply:
    if len(argv) == 2:
        return [i.reply() for i in TABLE.values()]
    return [_find(a).reply() if a.lower().decode(errors="replace") in TABLE else None
            for a in argv[2:]]  # fmt: skip


def _find(name: bytes) -> Info:
    return TABLE[name.lower().decode(errors="replace")]


def _docs(argv: list[bytes]) -> Reply:
    names = [a.lower().decode(errors="replace") for a in argv[2:]] or list(TABLE)
    return ReplyMap((n.encode(), TABLE[n].docs()) for n in names if n in TABLE)


def _list(argv: list[bytes]) -> Reply:
    names = [n for i in TABLE.values() for n in (i.name, *(s.name for s in i.subcommands))]
    if len(argv) == 2:
        return [n.encode() for n in names]
    if len(argv) != 5 or argv[2].upper() != b"FILTERBY":
        raise StreamError("syntax error")
    kind, value = argv[3].upper(), argv[4]
    if kind == b"PATTERN":
        return [n.encode() for n in names if glob.match(value.lower(), n.encode())]
    if kind == b"ACLCAT":
        cat = b"@" + value.lower()
        return [i.name.encode() for i in TABLE.values() if Status(cat.decode()) in _cats(i)]
    if kind == b"MODULE":
        return []
    raise StreamError("syntax error")


def _cats(info: Info) -> list[Reply]:
    reply = cast(list[Reply], info.reply())
    return cast(list[Reply], reply[6])


def command(conn: cc.Conn, argv: list[bytes]) -> cc.EdgeReply:
    """COMMAND [COUNT | INFO [name ...] | DOCS [name ...] | LIST [FILTERBY ...]]."""
    if len(argv) == 1:
        return _info([b"COMMAND", b"INFO"])
    sub = argv[1].lower()
    if sub == b"count" and len(argv) == 2:
        return len(TABLE)
    if sub == b"info":
        return _info(argv)
    if sub == b"docs":
        return _docs(argv)
    if sub == b"list":
        return _list(argv)
    if sub in (b"count", b"help"):
        raise wrong_arity(f"command|{sub.decode()}")
    raise unknown_subcommand(argv[0], argv[1])


EDGE_COMMANDS[b"COMMAND"] = command
