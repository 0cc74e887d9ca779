"""The command table: the one argv dispatch shared by gRPC, replication, the AOF and RESP.

Each entry gives the handler, Redis's arity (negative = at least |n| words, name included;
for subcommands the container counts) and whether the command writes. Arity is checked here,
before the handler runs, with Redis's error text; unknown commands and subcommands get
Redis's texts too.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from ..context import Ctx
from ..errors import unknown_command, unknown_subcommand, wrong_arity
from ..reply import Reply
from . import (
    add_trim,
    append,
    claim,
    configset,
    databases,
    delete,
    delex,
    dumprestore,
    expire,
    idmpcmds,
    info,
    keys,
    lists,
    nack,
    objects,
    read,
    readgroup,
    sets,
    splits,
    strings,
    xgroup,
    xnodes,
)

Handler = Callable[[Ctx], Reply]


@dataclass(frozen=True, slots=True)
class Command:
    fullname: str  # lower case, `container|sub` for subcommands
    handler: Handler
    arity: int
    write: bool

    def arity_ok(self, argc: int) -> bool:
        return arity_ok(self.arity, argc)


def arity_ok(arity: int, argc: int) -> bool:
    """Redis's arity rule: exactly `arity` words (name included), or at least -arity."""
    return argc == arity if arity >= 0 else argc >= -arity


def _cmd(name: str, handler: Handler, arity: int, write: bool) -> tuple[bytes, Command]:
    """A table entry keyed by the (sub)command word, e.g. b"stream" for `xinfo|stream`."""
    return name.rpartition("|")[2].encode(), Command(name, handler, arity, write)


COMMANDS: Final[dict[bytes, Command]] = dict(
    [
        _cmd("xadd", add_trim.xadd, -5, True),
        _cmd("xappend", append.xappend, -6, True),
        _cmd("xtrim", add_trim.xtrim, -4, True),
        _cmd("xdel", delete.xdel, -3, True),
        _cmd("xsetid", delete.xsetid, -3, True),
        _cmd("xdelex", delex.xdelex, -5, True),
        _cmd("xackdel", delex.xackdel, -6, True),
        _cmd("xnack", nack.xnack, -7, True),
        _cmd("xcfgset", idmpcmds.xcfgset, -2, True),
        _cmd("xidmprecord", idmpcmds.xidmprecord, 5, True),
        _cmd("xidmpexpire", idmpcmds.xidmpexpire, 3, True),
        _cmd("xidmpdup", idmpcmds.xidmpdup, 4, True),
        _cmd("xconfigset", configset.xconfigset, -3, True),
        _cmd("xlen", read.xlen, 2, False),
        _cmd("xrange", read.xrange, -4, False),
        _cmd("xrevrange", read.xrevrange, -4, False),
        _cmd("xsplits", splits.xsplits, -5, False),
        _cmd("xnodes", xnodes.xnodes, 6, False),
        _cmd("xread", read.xread, -4, False),
        _cmd("xreadgroup", readgroup.xreadgroup, -7, True),
        _cmd("xack", xgroup.xack, -4, True),
        _cmd("xpending", claim.xpending, -3, False),
        _cmd("xclaim", claim.xclaim, -6, True),
        _cmd("xautoclaim", claim.xautoclaim, -6, True),
        _cmd("xsetconsumer", xgroup.xsetconsumer, 8, True),
        _cmd("del", keys.delete, -2, True),
        _cmd("unlink", keys.delete, -2, True),
        _cmd("exists", keys.exists, -2, False),
        _cmd("type", keys.type_, 2, False),
        _cmd("keys", keys.keys, 2, False),
        _cmd("scan", keys.scan, -2, False),
        _cmd("flushall", databases.flushall, -1, True),
        _cmd("flushdb", databases.flushdb, -1, True),
        _cmd("move", databases.move, 3, True),
        _cmd("swapdb", databases.swapdb, 3, True),
        _cmd("copy", databases.copy, -3, True),
        _cmd("rename", databases.rename, 3, True),
        _cmd("renamenx", databases.renamenx, 3, True),
        _cmd("randomkey", databases.randomkey, 1, False),
        _cmd("dbsize", keys.dbsize, 1, False),
        _cmd("set", strings.set_, -3, True),
        _cmd("get", strings.get, 2, False),
        _cmd("strlen", strings.strlen, 2, False),
        _cmd("lpush", lists.lpush, -3, True),
        _cmd("rpush", lists.rpush, -3, True),
        _cmd("lpop", lists.lpop, -2, True),
        _cmd("blpop", lists.blpop, -3, True),
        _cmd("brpop", lists.brpop, -3, True),
        _cmd("rpop", lists.rpop, -2, True),
        _cmd("llen", lists.llen, 2, False),
        _cmd("lrange", lists.lrange, 4, False),
        _cmd("sadd", sets.sadd, -3, True),
        _cmd("srem", sets.srem, -3, True),
        _cmd("smembers", sets.smembers, 2, False),
        _cmd("sismember", sets.sismember, 3, False),
        _cmd("scard", sets.scard, 2, False),
        _cmd("expire", expire.expire, -3, True),
        _cmd("pexpire", expire.pexpire, -3, True),
        _cmd("expireat", expire.expireat, -3, True),
        _cmd("pexpireat", expire.pexpireat, -3, True),
        _cmd("persist", expire.persist, 2, True),
        _cmd("ttl", expire.ttl, 2, False),
        _cmd("pttl", expire.pttl, 2, False),
        _cmd("expiretime", expire.expiretime, 2, False),
        _cmd("pexpiretime", expire.pexpiretime, 2, False),
        _cmd("dump", dumprestore.dump, 2, False),
        _cmd("restore", dumprestore.restore, -4, True),
    ]
)

SUBCOMMANDS: Final[dict[bytes, dict[bytes, Command]]] = {
    b"xinfo": dict(
        [
            _cmd("xinfo|stream", info.xinfo_stream, -3, False),
            _cmd("xinfo|groups", xgroup.xinfo_groups, 3, False),
            _cmd("xinfo|consumers", xgroup.xinfo_consumers, 4, False),
            _cmd("xinfo|help", info.xinfo_help, 2, False),
        ]
    ),
    b"xgroup": dict(
        [
            _cmd("xgroup|create", xgroup.xgroup_create, -5, True),
            _cmd("xgroup|setid", xgroup.xgroup_setid, -5, True),
            _cmd("xgroup|destroy", xgroup.xgroup_destroy, 4, True),
            _cmd("xgroup|createconsumer", xgroup.xgroup_createconsumer, 5, True),
            _cmd("xgroup|delconsumer", xgroup.xgroup_delconsumer, 5, True),
            _cmd("xgroup|help", xgroup.xgroup_help, 2, False),
        ]
    ),
    b"memory": dict([_cmd("memory|usage", keys.memory, -3, False)]),
    b"object": dict(
        [
            _cmd("object|encoding", objects.object_encoding, 3, False),
            _cmd("object|freq", objects.object_freq, 3, False),
            _cmd("object|help", objects.object_help, 2, False),
        ]
    ),
}


# COMMANDS by their names in lower and in upper case, as clients spell them: found without
# lower() (compiled, a third of a lookup's cost).
_SPELLED: Final[dict[bytes, Command]] = {
    **COMMANDS,
    **{name.upper(): cmd for name, cmd in COMMANDS.items()},
}


def lookup(argv: list[bytes]) -> Command:
    """The command for argv, arity checked; raises Redis's unknown/arity errors."""
    if not argv:
        raise unknown_command([b""])
    cmd = _SPELLED.get(argv[0])
    if cmd is None:
        cmd = _lookup_folded(argv)
    if not cmd.arity_ok(len(argv)):
        raise wrong_arity(cmd.fullname)
    return cmd


def _lookup_folded(argv: list[bytes]) -> Command:
    """The command or subcommand argv names in any case; raises Redis's unknown errors."""
    name = argv[0].lower()
    cmd = COMMANDS.get(name)
    if cmd is None:
        subs = SUBCOMMANDS.get(name)
        if subs is None:
            raise unknown_command(argv)
        if len(argv) < 2:
            raise wrong_arity(name.decode())
        cmd = subs.get(argv[1].lower())
        if cmd is None:
            raise unknown_subcommand(argv[0], argv[1])
    return cmd
