"""What ACL rules name: the command table with Redis's ACL categories, and each command's keys.

Derived, not written out, for the engine's commands (engine.commands: name, write flag,
subcommands): `@write` or `@read`, `@stream` for X* and `@keyspace` for the rest, plus the
few extra categories Redis gives them (`@fast`, `@blocking`, `@dangerous`, ...). Commands the
engine does not run (the node's server commands, the RESP edge's own, the gRPC Admin calls
and replication) are the small table `OTHERS` below, with Redis's categories.

    WARNING: a command added to node/base.SERVER_COMMANDS, the RESP edge (commandinfo.py) or
    the gRPC services must be added to OTHERS too, or no user but one with +@all can run it
    (tests/unit/test_acl_rules.py checks the first two).

Pseudo-commands for what has no Redis command: `sync` is a replica's Replication stream
(Redis's replica user needs +psync, +sync, +replconf), `failover` the Admin Promote call
(Redis's FAILOVER), `replicaof` Admin ReplicaOf, `save` Admin Snapshot, `debug` Admin Digest.

Keys: `keys_of(argv)` gives each key a command touches and what it needs: R (reads it), W
(changes it) or RW; `%R~`, `%W~` and `~` patterns are checked against them (Redis's key specs,
coarsened: a write needs W, a read R, a write that returns entries RW).
"""

from __future__ import annotations

from typing import Final

from xstream.engine.commands import COMMANDS, SUBCOMMANDS

# Redis's categories, in ACL CAT's order (acl.c's ACLCommandCategories).
CATEGORIES = (
    "keyspace", "read", "write", "set", "sortedset", "list", "hash", "string", "bitmap",
    "hyperloglog", "geo", "stream", "pubsub", "admin", "fast", "slow", "blocking",
    "dangerous", "connection", "transaction", "scripting",
)  # fmt: skip

_ADMIN = ("admin", "slow", "dangerous")
_CONN_FAST = ("fast", "connection")
_TX = ("fast", "transaction")
# Commands outside the engine's table: their categories (Redis 8's for those Redis has).
OTHERS: dict[str, tuple[str, ...]] = {
    "auth": ("fast", "connection"),
    "hello": ("fast", "connection"),
    "ping": _CONN_FAST,
    "echo": _CONN_FAST,
    "quit": _CONN_FAST,
    "reset": _CONN_FAST,
    "select": _CONN_FAST,
    "client": ("slow", "connection"),
    "client|list": ("admin", "slow", "dangerous", "connection"),
    "client|kill": ("admin", "slow", "dangerous", "connection"),
    "command": ("slow", "connection"),
    "wait": ("slow", "connection"),
    "waitaof": ("slow", "connection"),
    "role": ("admin", "fast", "dangerous"),
    "info": ("slow", "dangerous"),
    "config": ("slow",),
    "config|get": _ADMIN,
    "config|set": _ADMIN,
    "config|resetstat": _ADMIN,
    "config|rewrite": _ADMIN,
    "config|help": ("slow",),
    "time": ("fast",),
    "lastsave": ("fast", "dangerous"),
    "save": _ADMIN,
    "bgsave": _ADMIN,
    "bgrewriteaof": _ADMIN,
    "debug": _ADMIN,
    "shutdown": _ADMIN,
    "function": ("write", "slow", "scripting"),
    "script": ("slow", "scripting"),
    "multi": _TX,
    "exec": ("slow", "transaction"),
    "discard": _TX,
    "watch": _TX,
    "unwatch": _TX,
    "acl": ("slow",),
    "acl|cat": ("slow",),
    "acl|whoami": ("slow",),
    "acl|genpass": ("slow",),
    "acl|help": ("slow",),
    # gRPC-only (Admin, Replication): pseudo-commands, see the module's comment
    "sync": _ADMIN,
    "failover": _ADMIN,
    "replicaof": _ADMIN,
}
# The ACL subcommands not listed above are @admin @slow @dangerous.
ACL_SUBCOMMANDS = ("cat", "deluser", "dryrun", "genpass", "getuser", "help", "list", "load",
                   "log", "save", "setuser", "users", "whoami")  # fmt: skip
CLIENT_SUBCOMMANDS = ("id", "getname", "setname", "setinfo", "info", "list", "kill", "help",
                      "no-evict", "no-touch", "reply")  # fmt: skip

_FAST = {"xadd", "xlen", "xack", "xdel", "xclaim", "xautoclaim", "xsetid", "exists", "type",
         "dbsize", "get", "set", "del", "unlink", "move", "copy", "rename", "renamenx",
         "randomkey", "xackdel", "xdelex", "xnack", "sadd", "srem", "sismember",
         "scard"}  # fmt: skip
_DANGEROUS = {"keys", "flushall", "flushdb", "swapdb", "restore", "xconfigset", "xcfgset"}
_ADMIN_ENGINE = {"xconfigset"}  # the replicated CONFIG SET of stream settings
_RETURNS_ENTRIES = {"xreadgroup", "xclaim", "xautoclaim", "rename", "renamenx", "move"}
# The non-stream data types' commands: their type's category instead of @keyspace, as Redis.
_TYPE_CATEGORY = {"sadd": "set", "srem": "set", "smembers": "set", "sismember": "set",
                  "scard": "set"}  # fmt: skip
_NO_KEYS = {"keys", "scan", "flushall", "flushdb", "dbsize", "randomkey", "swapdb",
            "xconfigset", "xcfgset", "xinfo|help", "xgroup|help"}  # fmt: skip
_ALL_KEYS = {"del", "unlink", "exists"}
_TWO_KEYS = {"copy", "rename", "renamenx"}


def _engine_categories(fullname: str, write: bool) -> tuple[str, ...]:
    base = fullname.partition("|")[0]
    group = "stream" if base.startswith("x") else _TYPE_CATEGORY.get(base, "keyspace")
    cats = ["write" if write else "read", group]
    if base in ("set", "get"):
        cats.append("string")
    cats.append("fast" if base in _FAST else "slow")
    if base in ("xread", "xreadgroup", "blpop", "brpop"):
        cats.append("blocking")
    if base in _ADMIN_ENGINE:
        cats.append("admin")
    if base in _DANGEROUS:
        cats.append("dangerous")
    return tuple(cats)


def _table() -> dict[str, tuple[str, ...]]:
    table: dict[str, tuple[str, ...]] = {}
    for cmd in COMMANDS.values():
        table[cmd.fullname] = _engine_categories(cmd.fullname, cmd.write)
    for container, subs in SUBCOMMANDS.items():
        name = container.decode()
        for cmd in subs.values():
            table[cmd.fullname] = _engine_categories(cmd.fullname, cmd.write)
        table[name] = ("slow",)
    table.update(OTHERS)
    for word in ACL_SUBCOMMANDS:
        table.setdefault(f"acl|{word}", _ADMIN)
    for word in CLIENT_SUBCOMMANDS:
        table.setdefault(f"client|{word}", ("slow", "connection"))
    return table


# Every command and subcommand ACL rules can name: fullname -> categories.
TABLE = _table()
CONTAINERS = {n.partition("|")[0] for n in TABLE if "|" in n}


# The commands that are no container, by their name as clients send it (lower or upper
# case): their fullname without decoding (other spellings are decoded).
_PLAIN_NAMES: Final = {
    spelling: name
    for name in TABLE
    if "|" not in name and name not in CONTAINERS
    for spelling in (name.encode(), name.upper().encode())
}


def fullname(argv: list[bytes]) -> str:
    """Redis's `cmd->fullname` of argv: `container|sub` when argv names a known subcommand,
    else the (lower case) command name; an unknown command is itself."""
    plain = _PLAIN_NAMES.get(argv[0])
    if plain is not None:
        return plain
    name = argv[0].decode("utf-8", "replace").lower()
    if name in CONTAINERS and len(argv) > 1:
        sub = f"{name}|{argv[1].decode('utf-8', 'replace').lower()}"
        if sub in TABLE:
            return sub
    return name


def commands_in(category: str) -> list[str]:
    """The commands (subcommands by their fullname) of a category, table order."""
    return [n for n, cats in TABLE.items() if category in cats]


def keys_of(name: str, argv: list[bytes]) -> list[tuple[bytes, str]]:
    """(key, "R" | "W" | "RW") for each key of the command `name` (its fullname) in argv."""
    base = name.partition("|")[0]
    write = "write" in TABLE.get(name, ())
    need = "RW" if base in _RETURNS_ENTRIES else "W" if write else "R"
    if name in _NO_KEYS or name not in TABLE:
        return []
    if base == "watch":
        return [(k, "R") for k in argv[1:]]
    if base in ("xread", "xreadgroup"):
        return [(k, need) for k in _streams_keys(argv)]
    if base in _ALL_KEYS:
        return [(k, need) for k in argv[1:]]
    if base in ("blpop", "brpop"):
        return [(k, need) for k in argv[1:-1]]
    if base in _TWO_KEYS:
        return [(k, "R" if base == "copy" else "RW") for k in argv[1:2]] + [
            (k, "W") for k in argv[2:3]
        ]
    if "|" in name:
        return [(k, need) for k in argv[2:3]] if base in ("xinfo", "xgroup", "memory") else []
    if base in OTHERS:
        return []
    return [(k, need) for k in argv[1:2]]


def _streams_keys(argv: list[bytes]) -> list[bytes]:
    for i, word in enumerate(argv):
        if word.upper() == b"STREAMS":
            rest = argv[i + 1 :]
            return rest[: len(rest) // 2]
    return []
