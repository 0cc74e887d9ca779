"""What ACL rules name: every command and subcommand with its ACL categories, and each
command's keys.

The categories are Redis's (commandspec.py: Redis 8.8's for the commands it has, xstream's
own effects and reads spelt alike). Pseudo-commands stand for the gRPC calls that have no
command of their own: `sync` is a replica's Replication stream (Redis's replica user needs
+psync, +sync, +replconf), `failover` the Admin Promote call (Redis's FAILOVER), `replicaof`
Admin ReplicaOf, `save` Admin Snapshot, `debug` Admin Digest: each has Redis's categories for
that command.

    WARNING: a command added to the engine, node/base.SERVER_COMMANDS, the RESP edge
    (commandinfo.py) or the gRPC services needs its row in commandspec.py, or no user but one
    with +@all can run it (tests/unit/test_acl_rules.py and test_commandspec.py check).

Keys: `keys_of(argv)` gives each key a command touches (Redis's key range, commandspec.py)
and what it needs: R (reads it), W (changes it) or RW; `%R~`, `%W~` and `~` patterns are
checked against them (Redis's key specs, coarsened: a write needs W, a read R, a write that
returns entries RW).
"""

from __future__ import annotations

from typing import Final

from xstream.engine.commands import COMMANDS, SUBCOMMANDS

from .commandspec import SPECS

# Redis's categories, in ACL CAT's order (acl.c's ACLCommandCategories).
CATEGORIES = (
    "keyspace", "read", "write", "set", "sortedset", "list", "hash", "string", "bitmap",
    "hyperloglog", "geo", "stream", "pubsub", "admin", "fast", "slow", "blocking",
    "dangerous", "connection", "transaction", "scripting",
)  # fmt: skip

# The commands the engine does not run: the node's server commands, the RESP edge's own,
# and the pseudo-commands of gRPC calls (see above); then the edge's containers' subcommands.
OTHERS = ("auth", "hello", "ping", "echo", "quit", "reset", "select", "client", "command",
          "wait", "waitaof", "role", "info", "config", "config|get", "config|set",
          "config|resetstat", "config|rewrite", "config|help", "time", "lastsave", "save",
          "bgsave", "bgrewriteaof", "debug", "shutdown", "function", "script", "multi", "exec",
          "discard", "watch", "unwatch", "acl", "sync", "failover", "replicaof",
          "function|flush", "script|flush", "command|count", "command|docs", "command|getkeys",
          "command|help", "command|info", "command|list")  # fmt: skip
ACL_SUBCOMMANDS = ("cat", "deluser", "dryrun", "genpass", "getuser", "help", "list", "load",
                   "log", "save", "setuser", "users", "whoami")  # fmt: skip
CLIENT_SUBCOMMANDS = ("id", "getname", "setname", "setinfo", "info", "list", "kill", "help",
                      "no-evict", "no-touch", "reply")  # fmt: skip

_RETURNS_ENTRIES = {"xreadgroup", "xclaim", "xautoclaim", "rename", "renamenx", "move"}
_TWO_KEYS = {"copy", "rename", "renamenx"}
# Where Redis's key spec starts looking for STREAMS: past XREADGROUP's GROUP <group>
# <consumer>, so a group or consumer named "streams" is not taken for the keyword.
_STREAMS_FROM = {"xread": 1, "xreadgroup": 4}


def _table() -> dict[str, tuple[str, ...]]:
    names = [cmd.fullname for cmd in COMMANDS.values()]
    for container, subs in SUBCOMMANDS.items():
        names += [container.decode(), *(cmd.fullname for cmd in subs.values())]
    names += OTHERS
    names += [f"acl|{word}" for word in ACL_SUBCOMMANDS]
    names += [f"client|{word}" for word in CLIENT_SUBCOMMANDS]
    return {name: SPECS[name].categories for name in names}


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
    """(key, "R" | "W" | "RW") for each key of the command `name` (its fullname) in argv: the
    keys Redis's key range names (commandspec; XREAD's and XREADGROUP's after STREAMS)."""
    spec = SPECS.get(name)
    if spec is None or name not in TABLE:
        return []
    base = name.partition("|")[0]
    if base in _TWO_KEYS:  # the source, then the destination (written)
        return [(k, "R" if base == "copy" else "RW") for k in argv[1:2]] + [
            (k, "W") for k in argv[2:3]
        ]
    need = "RW" if base in _RETURNS_ENTRIES else "W" if "write" in spec.flags else "R"
    if "movablekeys" in spec.flags:
        return [(k, need) for k in _streams_keys(argv, _STREAMS_FROM.get(base, 1))]
    if not spec.first:
        return []
    stop = spec.last + 1 if spec.last >= 0 else len(argv) + spec.last + 1
    return [(k, need) for k in argv[spec.first : stop : spec.step]]


def _streams_keys(argv: list[bytes], start: int) -> list[bytes]:
    """The keys after the first STREAMS word at or past argv[start] (Redis's key spec:
    keyword search from `startfrom`), the first half of what follows it."""
    for i in range(start, len(argv)):
        if argv[i].upper() == b"STREAMS":
            rest = argv[i + 1 :]
            return rest[: len(rest) // 2]
    return []
