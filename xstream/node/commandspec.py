"""What Redis says of each command xstream answers: COMMAND INFO's flags, key range and ACL
categories, and COMMAND DOCS's group, in one table that the RESP edge's COMMAND
(server/resp/commandinfo.py) and ACL's categories (aclcats.py) both read.

The rows under REDIS are Redis 8.8's facts, as its server builds them from each command's
definition (src/commands/*.json): the flags COMMAND INFO shows, in its order (write,
readonly, denyoom, admin, pubsub, noscript, blocking, loading, stale, ..., fast, no_auth,
..., movablekeys, allow_busy; `protected`, `may_replicate`, `sentinel` are never shown);
the legacy key range (first key, last key: negative counts from the end, step; 0 0 0 for
none) Redis derives from the key specs; the ACL categories: the definition's own plus those
its flags imply (write -> @write, readonly -> @read, admin -> @admin @dangerous, fast ->
@fast, blocking -> @blocking, not fast -> @slow), in ACL CAT's order. tests/compat checks
every row Redis 7.0 also has against a real redis-server (where 8.8 changed a row, the test
names the change), tests/unit that every command and subcommand xstream answers has a row
and the arity it is run with.

XSTREAM's rows are the commands only xstream has (the engine's replication effects and the
Spark source's reads): spelt alike, as the write or read they are.

    Spec(arity, flags, first, last, step, categories, group)
    arity: Redis's (negative: at least |n| words, the name included; a subcommand counts
    its container)
"""

from __future__ import annotations

from typing import Final, NamedTuple


class Spec(NamedTuple):
    arity: int
    flags: tuple[str, ...]  # COMMAND INFO's, Redis's order
    first: int  # the first key's position, 0 for none
    last: int  # the last key's; negative: from the end
    step: int
    categories: tuple[str, ...]  # ACL categories, ACL CAT's order, without the `@`
    group: str  # COMMAND DOCS's


def _s(arity: int, flags: str, first: int, last: int, step: int, cats: str, group: str) -> Spec:
    return Spec(arity, tuple(flags.split()), first, last, step, tuple(cats.split()), group)


# Redis 8.8's (src/commands/*.json as its server reads them): every command and subcommand
# xstream answers that Redis has.
REDIS: Final[dict[str, Spec]] = {
    "acl": _s(-2, "", 0, 0, 0, "slow", "server"),
    "acl|cat": _s(-2, "noscript loading stale", 0, 0, 0, "slow", "server"),
    "acl|deluser": _s(
        -3, "admin noscript loading stale", 0, 0, 0, "admin slow dangerous", "server"
    ),
    "acl|dryrun": _s(-4, "admin noscript loading stale", 0, 0, 0, "admin slow dangerous", "server"),
    "acl|genpass": _s(-2, "noscript loading stale", 0, 0, 0, "slow", "server"),
    "acl|getuser": _s(3, "admin noscript loading stale", 0, 0, 0, "admin slow dangerous", "server"),
    "acl|help": _s(2, "loading stale", 0, 0, 0, "slow", "server"),
    "acl|list": _s(2, "admin noscript loading stale", 0, 0, 0, "admin slow dangerous", "server"),
    "acl|load": _s(2, "admin noscript loading stale", 0, 0, 0, "admin slow dangerous", "server"),
    "acl|log": _s(-2, "admin noscript loading stale", 0, 0, 0, "admin slow dangerous", "server"),
    "acl|save": _s(2, "admin noscript loading stale", 0, 0, 0, "admin slow dangerous", "server"),
    "acl|setuser": _s(
        -3, "admin noscript loading stale", 0, 0, 0, "admin slow dangerous", "server"
    ),
    "acl|users": _s(2, "admin noscript loading stale", 0, 0, 0, "admin slow dangerous", "server"),
    "acl|whoami": _s(2, "noscript loading stale", 0, 0, 0, "slow", "server"),
    "auth": _s(
        -2,
        "noscript loading stale fast no_auth allow_busy",
        0,
        0,
        0,
        "fast connection",
        "connection",
    ),
    "bgrewriteaof": _s(
        1, "admin noscript no_async_loading", 0, 0, 0, "admin slow dangerous", "server"
    ),
    "bgsave": _s(-1, "admin noscript no_async_loading", 0, 0, 0, "admin slow dangerous", "server"),
    "blpop": _s(-3, "write blocking", 1, -2, 1, "write list slow blocking", "list"),
    "brpop": _s(-3, "write blocking", 1, -2, 1, "write list slow blocking", "list"),
    "client": _s(-2, "", 0, 0, 0, "slow", "connection"),
    "client|getname": _s(2, "noscript loading stale", 0, 0, 0, "slow connection", "connection"),
    "client|help": _s(2, "loading stale", 0, 0, 0, "slow connection", "connection"),
    "client|id": _s(2, "noscript loading stale", 0, 0, 0, "slow connection", "connection"),
    "client|info": _s(2, "noscript loading stale", 0, 0, 0, "slow connection", "connection"),
    "client|kill": _s(
        -3, "admin noscript loading stale", 0, 0, 0, "admin slow dangerous connection", "connection"
    ),
    "client|list": _s(
        -2, "admin noscript loading stale", 0, 0, 0, "admin slow dangerous connection", "connection"
    ),
    "client|no-evict": _s(
        3, "admin noscript loading stale", 0, 0, 0, "admin slow dangerous connection", "connection"
    ),
    "client|no-touch": _s(3, "noscript loading stale", 0, 0, 0, "slow connection", "connection"),
    "client|reply": _s(3, "noscript loading stale", 0, 0, 0, "slow connection", "connection"),
    "client|setinfo": _s(4, "noscript loading stale", 0, 0, 0, "slow connection", "connection"),
    "client|setname": _s(3, "noscript loading stale", 0, 0, 0, "slow connection", "connection"),
    "command": _s(-1, "loading stale", 0, 0, 0, "slow connection", "server"),
    "config": _s(-2, "", 0, 0, 0, "slow", "server"),
    "config|get": _s(-3, "admin noscript loading stale", 0, 0, 0, "admin slow dangerous", "server"),
    "config|help": _s(2, "loading stale", 0, 0, 0, "slow", "server"),
    "config|resetstat": _s(
        2, "admin noscript loading stale", 0, 0, 0, "admin slow dangerous", "server"
    ),
    "config|rewrite": _s(
        2, "admin noscript loading stale", 0, 0, 0, "admin slow dangerous", "server"
    ),
    "config|set": _s(-4, "admin noscript loading stale", 0, 0, 0, "admin slow dangerous", "server"),
    "copy": _s(-3, "write denyoom", 1, 2, 1, "keyspace write slow", "generic"),
    "dbsize": _s(1, "readonly fast", 0, 0, 0, "keyspace read fast", "server"),
    "debug": _s(-2, "admin noscript loading stale", 0, 0, 0, "admin slow dangerous", "server"),
    "del": _s(-2, "write", 1, -1, 1, "keyspace write slow", "generic"),
    "discard": _s(
        1, "noscript loading stale fast allow_busy", 0, 0, 0, "fast transaction", "transactions"
    ),
    "dump": _s(2, "readonly", 1, 1, 1, "keyspace read slow", "generic"),
    "echo": _s(2, "loading stale fast", 0, 0, 0, "fast connection", "connection"),
    "exec": _s(
        1, "noscript loading stale skip_slowlog", 0, 0, 0, "slow transaction", "transactions"
    ),
    "exists": _s(-2, "readonly fast", 1, -1, 1, "keyspace read fast", "generic"),
    "expire": _s(-3, "write fast", 1, 1, 1, "keyspace write fast", "generic"),
    "expireat": _s(-3, "write fast", 1, 1, 1, "keyspace write fast", "generic"),
    "expiretime": _s(2, "readonly fast", 1, 1, 1, "keyspace read fast", "generic"),
    "failover": _s(-1, "admin noscript stale", 0, 0, 0, "admin slow dangerous", "server"),
    "flushall": _s(-1, "write", 0, 0, 0, "keyspace write slow dangerous", "server"),
    "flushdb": _s(-1, "write", 0, 0, 0, "keyspace write slow dangerous", "server"),
    "function": _s(-2, "", 0, 0, 0, "slow", "scripting"),
    "get": _s(2, "readonly fast", 1, 1, 1, "read string fast", "string"),
    "hello": _s(
        -1,
        "noscript loading stale fast no_auth allow_busy",
        0,
        0,
        0,
        "fast connection",
        "connection",
    ),
    "info": _s(-1, "loading stale", 0, 0, 0, "slow dangerous", "server"),
    "keys": _s(2, "readonly", 0, 0, 0, "keyspace read slow dangerous", "generic"),
    "lastsave": _s(1, "loading stale fast", 0, 0, 0, "admin fast dangerous", "server"),
    "llen": _s(2, "readonly fast", 1, 1, 1, "read list fast", "list"),
    "lpop": _s(-2, "write fast", 1, 1, 1, "write list fast", "list"),
    "lpush": _s(-3, "write denyoom fast", 1, 1, 1, "write list fast", "list"),
    "lrange": _s(4, "readonly", 1, 1, 1, "read list slow", "list"),
    "memory": _s(-2, "", 0, 0, 0, "slow", "server"),
    "memory|usage": _s(-3, "readonly", 2, 2, 1, "read slow", "server"),
    "move": _s(3, "write fast", 1, 1, 1, "keyspace write fast", "generic"),
    "multi": _s(
        1, "noscript loading stale fast allow_busy", 0, 0, 0, "fast transaction", "transactions"
    ),
    "object": _s(-2, "", 0, 0, 0, "slow", "generic"),
    "object|encoding": _s(3, "readonly", 2, 2, 1, "keyspace read slow", "generic"),
    "object|freq": _s(3, "readonly", 2, 2, 1, "keyspace read slow", "generic"),
    "object|help": _s(2, "loading stale", 0, 0, 0, "keyspace slow", "generic"),
    "persist": _s(2, "write fast", 1, 1, 1, "keyspace write fast", "generic"),
    "pexpire": _s(-3, "write fast", 1, 1, 1, "keyspace write fast", "generic"),
    "pexpireat": _s(-3, "write fast", 1, 1, 1, "keyspace write fast", "generic"),
    "pexpiretime": _s(2, "readonly fast", 1, 1, 1, "keyspace read fast", "generic"),
    "ping": _s(-1, "fast", 0, 0, 0, "fast connection", "connection"),
    "pttl": _s(2, "readonly fast", 1, 1, 1, "keyspace read fast", "generic"),
    "quit": _s(
        -1,
        "noscript loading stale fast no_auth allow_busy",
        0,
        0,
        0,
        "fast connection",
        "connection",
    ),
    "randomkey": _s(1, "readonly", 0, 0, 0, "keyspace read slow", "generic"),
    "rename": _s(3, "write", 1, 2, 1, "keyspace write slow", "generic"),
    "renamenx": _s(3, "write fast", 1, 2, 1, "keyspace write fast", "generic"),
    "replicaof": _s(
        3, "admin noscript stale no_async_loading", 0, 0, 0, "admin slow dangerous", "server"
    ),
    "reset": _s(
        1,
        "noscript loading stale fast no_auth allow_busy",
        0,
        0,
        0,
        "fast connection",
        "connection",
    ),
    "restore": _s(-4, "write denyoom", 1, 1, 1, "keyspace write slow dangerous", "generic"),
    "role": _s(1, "noscript loading stale fast", 0, 0, 0, "admin fast dangerous", "server"),
    "rpop": _s(-2, "write fast", 1, 1, 1, "write list fast", "list"),
    "rpush": _s(-3, "write denyoom fast", 1, 1, 1, "write list fast", "list"),
    "sadd": _s(-3, "write denyoom fast", 1, 1, 1, "write set fast", "set"),
    "save": _s(
        1, "admin noscript no_async_loading no_multi", 0, 0, 0, "admin slow dangerous", "server"
    ),
    "scan": _s(-2, "readonly", 0, 0, 0, "keyspace read slow", "generic"),
    "scard": _s(2, "readonly fast", 1, 1, 1, "read set fast", "set"),
    "script": _s(-2, "", 0, 0, 0, "slow", "scripting"),
    "select": _s(2, "loading stale fast", 0, 0, 0, "fast connection", "connection"),
    "set": _s(-3, "write denyoom", 1, 1, 1, "write string slow", "string"),
    "shutdown": _s(
        -1,
        "admin noscript loading stale no_multi allow_busy",
        0,
        0,
        0,
        "admin slow dangerous",
        "server",
    ),
    "sismember": _s(3, "readonly fast", 1, 1, 1, "read set fast", "set"),
    "smembers": _s(2, "readonly", 1, 1, 1, "read set slow", "set"),
    "srem": _s(-3, "write fast", 1, 1, 1, "write set fast", "set"),
    "strlen": _s(2, "readonly fast", 1, 1, 1, "read string fast", "string"),
    "swapdb": _s(3, "write fast", 0, 0, 0, "keyspace write fast dangerous", "server"),
    "sync": _s(
        1, "admin noscript no_async_loading no_multi", 0, 0, 0, "admin slow dangerous", "server"
    ),
    "time": _s(1, "loading stale fast", 0, 0, 0, "fast", "server"),
    "ttl": _s(2, "readonly fast", 1, 1, 1, "keyspace read fast", "generic"),
    "type": _s(2, "readonly fast", 1, 1, 1, "keyspace read fast", "generic"),
    "unlink": _s(-2, "write fast", 1, -1, 1, "keyspace write fast", "generic"),
    "unwatch": _s(
        1, "noscript loading stale fast allow_busy", 0, 0, 0, "fast transaction", "transactions"
    ),
    "wait": _s(3, "blocking", 0, 0, 0, "slow blocking connection", "generic"),
    "waitaof": _s(4, "blocking", 0, 0, 0, "slow blocking connection", "generic"),
    "watch": _s(
        -2, "noscript loading stale fast allow_busy", 1, -1, 1, "fast transaction", "transactions"
    ),
    "xack": _s(-4, "write fast", 1, 1, 1, "write stream fast", "stream"),
    "xackdel": _s(-6, "write fast", 1, 1, 1, "write stream fast", "stream"),
    "xadd": _s(-5, "write denyoom fast", 1, 1, 1, "write stream fast", "stream"),
    "xautoclaim": _s(-6, "write fast", 1, 1, 1, "write stream fast", "stream"),
    "xcfgset": _s(-2, "write fast", 1, 1, 1, "write stream fast", "stream"),
    "xclaim": _s(-6, "write fast", 1, 1, 1, "write stream fast", "stream"),
    "xdel": _s(-3, "write fast", 1, 1, 1, "write stream fast", "stream"),
    "xdelex": _s(-5, "write fast", 1, 1, 1, "write stream fast", "stream"),
    "xgroup": _s(-2, "", 0, 0, 0, "slow", "stream"),
    "xgroup|create": _s(-5, "write denyoom", 2, 2, 1, "write stream slow", "stream"),
    "xgroup|createconsumer": _s(5, "write denyoom", 2, 2, 1, "write stream slow", "stream"),
    "xgroup|delconsumer": _s(5, "write", 2, 2, 1, "write stream slow", "stream"),
    "xgroup|destroy": _s(4, "write", 2, 2, 1, "write stream slow", "stream"),
    "xgroup|help": _s(2, "loading stale", 0, 0, 0, "stream slow", "stream"),
    "xgroup|setid": _s(-5, "write", 2, 2, 1, "write stream slow", "stream"),
    "xidmprecord": _s(5, "write denyoom fast", 1, 1, 1, "write stream fast", "stream"),
    "xinfo": _s(-2, "", 0, 0, 0, "slow", "stream"),
    "xinfo|consumers": _s(4, "readonly", 2, 2, 1, "read stream slow", "stream"),
    "xinfo|groups": _s(3, "readonly", 2, 2, 1, "read stream slow", "stream"),
    "xinfo|help": _s(2, "loading stale", 0, 0, 0, "stream slow", "stream"),
    "xinfo|stream": _s(-3, "readonly", 2, 2, 1, "read stream slow", "stream"),
    "xlen": _s(2, "readonly fast", 1, 1, 1, "read stream fast", "stream"),
    "xnack": _s(-7, "write fast", 1, 1, 1, "write stream fast", "stream"),
    "xpending": _s(-3, "readonly", 1, 1, 1, "read stream slow", "stream"),
    "xrange": _s(-4, "readonly", 1, 1, 1, "read stream slow", "stream"),
    "xread": _s(
        -4, "readonly blocking movablekeys", 0, 0, 0, "read stream slow blocking", "stream"
    ),
    "xreadgroup": _s(
        -7, "write blocking movablekeys", 0, 0, 0, "write stream slow blocking", "stream"
    ),
    "xrevrange": _s(-4, "readonly", 1, 1, 1, "read stream slow", "stream"),
    "xsetid": _s(-3, "write denyoom fast", 1, 1, 1, "write stream fast", "stream"),
    "xtrim": _s(-4, "write", 1, 1, 1, "write stream slow", "stream"),
}

# Only xstream's: effects a primary ships (XAPPEND: a run of XADDs; XCONFIGSET: CONFIG SET of
# a stream setting; XIDMPDUP, XIDMPEXPIRE, XSETCONSUMER) and the Spark source's reads.
XSTREAM: Final[dict[str, Spec]] = {
    "xappend": _s(-6, "write", 1, 1, 1, "write stream slow", "stream"),
    "xconfigset": _s(-3, "write", 0, 0, 0, "write stream admin slow dangerous", "stream"),
    "xidmpdup": _s(4, "write", 1, 1, 1, "write stream slow", "stream"),
    "xidmpexpire": _s(3, "write", 1, 1, 1, "write stream slow", "stream"),
    "xnodes": _s(6, "readonly", 1, 1, 1, "read stream slow", "stream"),
    "xsetconsumer": _s(8, "write", 1, 1, 1, "write stream slow", "stream"),
    "xsplits": _s(-5, "readonly", 1, 1, 1, "read stream slow", "stream"),
}

SPECS: Final[dict[str, Spec]] = {**REDIS, **XSTREAM}
