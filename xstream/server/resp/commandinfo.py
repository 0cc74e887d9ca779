"""COMMAND (COUNT, INFO, DOCS, LIST, GETKEYS, HELP), and the table of what the RESP edge
answers itself.

The command list is derived, not written out: the engine's table (engine.commands: name,
arity, subcommands), the node's server commands (node.base.SERVER_COMMANDS) and the edge's
own (EDGE_COMMANDS below); what Redis says of each (flags, key range, ACL categories, DOCS
group) is node/commandspec.py's. Each entry is Redis 7's ten-field COMMAND INFO reply:

    name  arity  flags  first-key  last-key  step  acl-categories  tips  key-specs  subcommands

Key specs and tips are empty; the flags and the legacy key range are what clients use to
route (XREAD and XREADGROUP: movablekeys, 0 0 0). A container lists the subcommands xstream
answers (FUNCTION's and SCRIPT's: FLUSH only); `COMMAND INFO container|sub` answers a
subcommand, as Redis 7 does. COMMAND GETKEYS finds a command's keys as ACL does
(node/aclcats.keys_of); GETKEYSANDFLAGS, which needs Redis's per-key flags (key specs), is
not answered.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Final

from xstream.engine import glob
from xstream.engine.commands import COMMANDS, SUBCOMMANDS, arity_ok
from xstream.engine.commands.info import help_reply
from xstream.engine.errors import StreamError, unknown_command, unknown_subcommand, wrong_arity
from xstream.engine.reply import Reply, ReplyMap, ReplySet, Status
from xstream.node import aclcats
from xstream.node.base import SERVER_COMMANDS
from xstream.node.commandspec import SPECS

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

# Commands outside the engine's table: the node's server commands and the edge's own.
_OTHERS = ("hello", "ping", "echo", "quit", "reset", "select", "client", "auth", "acl",
           "command", "wait", "role", "info", "multi", "exec", "discard", "watch", "unwatch",
           "config", "time", "lastsave", "save", "bgsave", "bgrewriteaof", "debug", "shutdown",
           "waitaof", "function", "script")  # fmt: skip


@dataclass(frozen=True)
class Info:
    name: str  # lower case, `container|sub` for subcommands
    arity: int
    flags: tuple[str, ...]
    first: int  # first key's position; 0: none (or movable)
    last: int  # last key's; -1: the last argument
    step: int
    group: str  # COMMAND DOCS group
    subcommands: tuple[Info, ...] = ()  # the engine's containers': what find() looks up
    listed: tuple[Info, ...] = ()  # the edge's containers': only shown

    def reply(self) -> Reply:
        cats = [f"@{c}" for c in SPECS[self.name].categories]
        return [  # sets where Redis writes sets (RESP3 ~): flags, categories, tips, subcommands
            self.name.encode(),
            self.arity,
            ReplySet(Status(f) for f in self.flags),
            self.first,
            self.last,
            self.step,
            ReplySet(Status(c) for c in cats),
            ReplySet(),
            [],
            ReplySet(s.reply() for s in self.subcommands or self.listed),
        ]

    def docs(self) -> Reply:
        """COMMAND DOCS's map: the version that added it and its group (Redis's, from
        commandspec); the summary and the arguments are empty (Redis's are its prose, not
        kept here; redis-cli's help prints "(null)" where they are missing)."""
        since = SPECS[self.name].since
        fields: list[tuple[bytes, Reply]] = [(b"summary", b"")]
        if since:
            fields.append((b"since", since.encode()))
        fields += [(b"group", self.group.encode()), (b"arguments", [])]
        listed = self.subcommands or self.listed
        if listed:
            subs = ReplyMap((s.name.encode(), s.docs()) for s in listed)
            fields.append((b"subcommands", subs))
        return ReplyMap(fields)


def _info_of(name: str, arity: int, subs: tuple[Info, ...] = ()) -> Info:
    """`name`'s Info: Redis's flags, keys and group (commandspec), run with `arity`."""
    spec = SPECS[name]
    return Info(name, arity, spec.flags, spec.first, spec.last, spec.step, spec.group, subs)


def _table() -> dict[str, Info]:
    table: dict[str, Info] = {}
    for cmd in COMMANDS.values():
        table[cmd.fullname] = _info_of(cmd.fullname, cmd.arity)
    for container, subs in SUBCOMMANDS.items():
        name = container.decode()
        infos = tuple(_info_of(c.fullname, c.arity) for c in subs.values())
        table[name] = _info_of(name, SPECS[name].arity, infos)
    for name in _OTHERS:
        table[name] = _info_of(name, SPECS[name].arity)
    for name in ("acl", "client", "command", "config", "function", "script"):  # ACL names them
        named = sorted(n for n in aclcats.TABLE if n.startswith(name + "|"))
        table[name] = replace(table[name], listed=tuple(_info_of(n, SPECS[n].arity) for n in named))
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
    if not arity_ok(arity, len(argv)):
        raise wrong_arity(fullname)


_NONE = Info("", 0, (), 0, 0, 0, "")


def _info(argv: list[bytes]) -> Reply:
    if len(argv) == 2:
        return [i.reply() for i in TABLE.values()]
    found = (_named(a.lower().decode(errors="replace")) for a in argv[2:])
    return [None if i is None else i.reply() for i in found]


def _named(name: str) -> Info | None:
    """The Info of `name`, a command or a `container|sub` it answers; None if neither."""
    info = TABLE.get(name)
    if info is not None:
        return info
    container = name.partition("|")[0]
    info = TABLE.get(container)
    for sub in (*info.subcommands, *info.listed) if info is not None else ():
        if sub.name == name:
            return sub
    return None


def _docs(argv: list[bytes]) -> Reply:
    if len(argv) == 2:
        return ReplyMap((n.encode(), i.docs()) for n, i in TABLE.items())
    found = (_named(a.lower().decode(errors="replace")) for a in argv[2:])
    return ReplyMap((i.name.encode(), i.docs()) for i in found if i is not None)


def _list(argv: list[bytes]) -> Reply:
    """Every command, each container followed by its subcommands, as Redis lists them."""
    infos = [x for i in TABLE.values() for x in (i, *(i.subcommands or i.listed))]
    names = [i.name for i in infos]
    if len(argv) == 2:
        return [n.encode() for n in names]
    if len(argv) != 5 or argv[2].upper() != b"FILTERBY":
        raise StreamError("syntax error")
    kind, value = argv[3].upper(), argv[4]
    if kind == b"PATTERN":
        return [n.encode() for n in names if glob.match(value.lower(), n.encode())]
    if kind == b"ACLCAT":
        cat = value.lower().decode(errors="replace")
        return [i.name.encode() for i in infos if cat in SPECS[i.name].categories]
    if kind == b"MODULE":
        return []
    raise StreamError("syntax error")


def _getkeys(argv: list[bytes]) -> Reply:
    """COMMAND GETKEYS <command> <arg> ...: the keys of a whole command, found as ACL finds
    them (aclcats.keys_of: Redis's key range; past STREAMS for XREAD and XREADGROUP), with
    getKeysSubcommandImpl's refusals in its order: unknown, no keys, arity, no key found."""
    words = argv[2:]
    name = aclcats.fullname(words)
    info = _named(name)
    if info is None or ("|" not in name and (info.subcommands or info.listed)):
        raise StreamError("Invalid command specified")  # a container's unknown subcommand too
    spec = SPECS[name]
    if not spec.first and "movablekeys" not in spec.flags:
        raise StreamError("The command has no key arguments")
    if not arity_ok(info.arity, len(words)):
        raise StreamError("Invalid number of arguments specified for command")
    keys: list[Reply] = [key for key, _ in aclcats.keys_of(name, words)]
    if not keys:
        raise StreamError("Invalid arguments specified for command")
    return keys


_HELP_LINES = (
    "(no subcommand)",
    "    Every command's details, as INFO gives them.",
    "COUNT",
    "    How many commands this server answers.",
    "LIST [FILTERBY (MODULE <name>|ACLCAT <category>|PATTERN <pattern>)]",
    "    The names of the commands and subcommands, or those the filter selects.",
    "INFO [<command-name> ...]",
    "    Each named command's details (all of them with no name).",
    "DOCS [<command-name> ...]",
    "    Each named command's documentation (all of them with no name).",
    "GETKEYS <full-command>",
    "    The keys a whole command names.",
)

# name -> (handler, Redis's arity with the container counted)
_SUBCOMMANDS: Final[dict[bytes, tuple[Callable[[list[bytes]], Reply], int]]] = {
    b"count": (lambda argv: len(TABLE), 2),
    b"info": (_info, -2),
    b"docs": (_docs, -2),
    b"list": (_list, -2),
    b"getkeys": (_getkeys, -4),
    b"help": (lambda argv: help_reply(argv[0], _HELP_LINES), 2),
}


def command(conn: cc.Conn, argv: list[bytes]) -> cc.EdgeReply:
    """COMMAND [COUNT | INFO [name ...] | DOCS [name ...] | LIST [FILTERBY ...] |
    GETKEYS <command> <arg> ... | HELP]."""
    if len(argv) == 1:
        return _info([b"COMMAND", b"INFO"])
    sub = argv[1].lower()
    found = _SUBCOMMANDS.get(sub)
    if found is None:
        raise unknown_subcommand(argv[0], argv[1])
    handler, arity = found
    if not arity_ok(arity, len(argv)):
        raise wrong_arity(f"command|{sub.decode()}")
    return handler(argv)


EDGE_COMMANDS[b"COMMAND"] = command
