"""What Redis says of each command xstream answers: COMMAND INFO's flags, key range and ACL
categories, and COMMAND DOCS's group and since, in one table that the RESP edge's COMMAND
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

    Spec(arity, flags, first, last, step, categories, group, since)
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
    since: str  # ... the Redis version that added it ("" for xstream's own)


def _s(
    arity: int, flags: str, first: int, last: int, step: int, cats: str, group: str, since: str = ""
) -> Spec:
    return Spec(arity, tuple(flags.split()), first, last, step, tuple(cats.split()), group, since)


# Redis 8.8's (src/commands/*.json as its server reads them): every command and subcommand
# xstream answers that Redis has.
REDIS: Final[dict[str, Spec]] = {
    "acl": _s(-2, "", 0, 0, 0, "slow", "server", "6.0.0"),
    "acl|cat": _s(-2, "noscript loading stale", 0, 0, 0, "slow", "server", "6.0.0"),
    "acl|deluser": _s(
        -3, "admin noscript loading stale", 0, 0, 0, "admin slow dangerous", "server", "6.0.0"
    ),
    "acl|dryrun": _s(
        -4, "admin noscript loading stale", 0, 0, 0, "admin slow dangerous", "server", "7.0.0"
    ),
    "acl|genpass": _s(-2, "noscript loading stale", 0, 0, 0, "slow", "server", "6.0.0"),
    "acl|getuser": _s(
        3, "admin noscript loading stale", 0, 0, 0, "admin slow dangerous", "server", "6.0.0"
    ),
    "acl|help": _s(2, "loading stale", 0, 0, 0, "slow", "server", "6.0.0"),
    "acl|list": _s(
        2, "admin noscript loading stale", 0, 0, 0, "admin slow dangerous", "server", "6.0.0"
    ),
    "acl|load": _s(
        2, "admin noscript loading stale", 0, 0, 0, "admin slow dangerous", "server", "6.0.0"
    ),
    "acl|log": _s(
        -2, "admin noscript loading stale", 0, 0, 0, "admin slow dangerous", "server", "6.0.0"
    ),
    "acl|save": _s(
        2, "admin noscript loading stale", 0, 0, 0, "admin slow dangerous", "server", "6.0.0"
    ),
    "acl|setuser": _s(
        -3, "admin noscript loading stale", 0, 0, 0, "admin slow dangerous", "server", "6.0.0"
    ),
    "acl|users": _s(
        2, "admin noscript loading stale", 0, 0, 0, "admin slow dangerous", "server", "6.0.0"
    ),
    "acl|whoami": _s(2, "noscript loading stale", 0, 0, 0, "slow", "server", "6.0.0"),
    "auth": _s(
        -2,
        "noscript loading stale fast no_auth allow_busy",
        0,
        0,
        0,
        "fast connection",
        "connection",
        "1.0.0",
    ),
    "bgrewriteaof": _s(
        1, "admin noscript no_async_loading", 0, 0, 0, "admin slow dangerous", "server", "1.0.0"
    ),
    "bgsave": _s(
        -1, "admin noscript no_async_loading", 0, 0, 0, "admin slow dangerous", "server", "1.0.0"
    ),
    "blpop": _s(-3, "write blocking", 1, -2, 1, "write list slow blocking", "list", "2.0.0"),
    "brpop": _s(-3, "write blocking", 1, -2, 1, "write list slow blocking", "list", "2.0.0"),
    "client": _s(-2, "", 0, 0, 0, "slow", "connection", "2.4.0"),
    "client|getname": _s(
        2, "noscript loading stale", 0, 0, 0, "slow connection", "connection", "2.6.9"
    ),
    "client|help": _s(2, "loading stale", 0, 0, 0, "slow connection", "connection", "5.0.0"),
    "client|id": _s(2, "noscript loading stale", 0, 0, 0, "slow connection", "connection", "5.0.0"),
    "client|info": _s(
        2, "noscript loading stale", 0, 0, 0, "slow connection", "connection", "6.2.0"
    ),
    "client|kill": _s(
        -3,
        "admin noscript loading stale",
        0,
        0,
        0,
        "admin slow dangerous connection",
        "connection",
        "2.4.0",
    ),
    "client|list": _s(
        -2,
        "admin noscript loading stale",
        0,
        0,
        0,
        "admin slow dangerous connection",
        "connection",
        "2.4.0",
    ),
    "client|no-evict": _s(
        3,
        "admin noscript loading stale",
        0,
        0,
        0,
        "admin slow dangerous connection",
        "connection",
        "7.0.0",
    ),
    "client|no-touch": _s(
        3, "noscript loading stale", 0, 0, 0, "slow connection", "connection", "7.2.0"
    ),
    "client|reply": _s(
        3, "noscript loading stale", 0, 0, 0, "slow connection", "connection", "3.2.0"
    ),
    "client|setinfo": _s(
        4, "noscript loading stale", 0, 0, 0, "slow connection", "connection", "7.2.0"
    ),
    "client|setname": _s(
        3, "noscript loading stale", 0, 0, 0, "slow connection", "connection", "2.6.9"
    ),
    "command": _s(-1, "loading stale", 0, 0, 0, "slow connection", "server", "2.8.13"),
    "command|count": _s(2, "loading stale", 0, 0, 0, "slow connection", "server", "2.8.13"),
    "command|docs": _s(-2, "loading stale", 0, 0, 0, "slow connection", "server", "7.0.0"),
    "command|getkeys": _s(-4, "loading stale", 0, 0, 0, "slow connection", "server", "2.8.13"),
    "command|help": _s(2, "loading stale", 0, 0, 0, "slow connection", "server", "5.0.0"),
    "command|info": _s(-2, "loading stale", 0, 0, 0, "slow connection", "server", "2.8.13"),
    "command|list": _s(-2, "loading stale", 0, 0, 0, "slow connection", "server", "7.0.0"),
    "config": _s(-2, "", 0, 0, 0, "slow", "server", "2.0.0"),
    "config|get": _s(
        -3, "admin noscript loading stale", 0, 0, 0, "admin slow dangerous", "server", "2.0.0"
    ),
    "config|help": _s(2, "loading stale", 0, 0, 0, "slow", "server", "5.0.0"),
    "config|resetstat": _s(
        2, "admin noscript loading stale", 0, 0, 0, "admin slow dangerous", "server", "2.0.0"
    ),
    "config|rewrite": _s(
        2, "admin noscript loading stale", 0, 0, 0, "admin slow dangerous", "server", "2.8.0"
    ),
    "config|set": _s(
        -4, "admin noscript loading stale", 0, 0, 0, "admin slow dangerous", "server", "2.0.0"
    ),
    "copy": _s(-3, "write denyoom", 1, 2, 1, "keyspace write slow", "generic", "6.2.0"),
    "dbsize": _s(1, "readonly fast", 0, 0, 0, "keyspace read fast", "server", "1.0.0"),
    "debug": _s(
        -2, "admin noscript loading stale", 0, 0, 0, "admin slow dangerous", "server", "1.0.0"
    ),
    "del": _s(-2, "write", 1, -1, 1, "keyspace write slow", "generic", "1.0.0"),
    "discard": _s(
        1,
        "noscript loading stale fast allow_busy",
        0,
        0,
        0,
        "fast transaction",
        "transactions",
        "2.0.0",
    ),
    "dump": _s(2, "readonly", 1, 1, 1, "keyspace read slow", "generic", "2.6.0"),
    "echo": _s(2, "loading stale fast", 0, 0, 0, "fast connection", "connection", "1.0.0"),
    "exec": _s(
        1,
        "noscript loading stale skip_slowlog",
        0,
        0,
        0,
        "slow transaction",
        "transactions",
        "1.2.0",
    ),
    "exists": _s(-2, "readonly fast", 1, -1, 1, "keyspace read fast", "generic", "1.0.0"),
    "expire": _s(-3, "write fast", 1, 1, 1, "keyspace write fast", "generic", "1.0.0"),
    "expireat": _s(-3, "write fast", 1, 1, 1, "keyspace write fast", "generic", "1.2.0"),
    "expiretime": _s(2, "readonly fast", 1, 1, 1, "keyspace read fast", "generic", "7.0.0"),
    "failover": _s(-1, "admin noscript stale", 0, 0, 0, "admin slow dangerous", "server", "6.2.0"),
    "flushall": _s(-1, "write", 0, 0, 0, "keyspace write slow dangerous", "server", "1.0.0"),
    "flushdb": _s(-1, "write", 0, 0, 0, "keyspace write slow dangerous", "server", "1.0.0"),
    "function": _s(-2, "", 0, 0, 0, "slow", "scripting", "7.0.0"),
    "function|flush": _s(
        -2, "write noscript", 0, 0, 0, "write slow scripting", "scripting", "7.0.0"
    ),
    "get": _s(2, "readonly fast", 1, 1, 1, "read string fast", "string", "1.0.0"),
    "hello": _s(
        -1,
        "noscript loading stale fast no_auth allow_busy",
        0,
        0,
        0,
        "fast connection",
        "connection",
        "6.0.0",
    ),
    "info": _s(-1, "loading stale", 0, 0, 0, "slow dangerous", "server", "1.0.0"),
    "keys": _s(2, "readonly", 0, 0, 0, "keyspace read slow dangerous", "generic", "1.0.0"),
    "lastsave": _s(1, "loading stale fast", 0, 0, 0, "admin fast dangerous", "server", "1.0.0"),
    "llen": _s(2, "readonly fast", 1, 1, 1, "read list fast", "list", "1.0.0"),
    "lpop": _s(-2, "write fast", 1, 1, 1, "write list fast", "list", "1.0.0"),
    "lpush": _s(-3, "write denyoom fast", 1, 1, 1, "write list fast", "list", "1.0.0"),
    "lrange": _s(4, "readonly", 1, 1, 1, "read list slow", "list", "1.0.0"),
    "memory": _s(-2, "", 0, 0, 0, "slow", "server", "4.0.0"),
    "memory|usage": _s(-3, "readonly", 2, 2, 1, "read slow", "server", "4.0.0"),
    "move": _s(3, "write fast", 1, 1, 1, "keyspace write fast", "generic", "1.0.0"),
    "multi": _s(
        1,
        "noscript loading stale fast allow_busy",
        0,
        0,
        0,
        "fast transaction",
        "transactions",
        "1.2.0",
    ),
    "object": _s(-2, "", 0, 0, 0, "slow", "generic", "2.2.3"),
    "object|encoding": _s(3, "readonly", 2, 2, 1, "keyspace read slow", "generic", "2.2.3"),
    "object|freq": _s(3, "readonly", 2, 2, 1, "keyspace read slow", "generic", "4.0.0"),
    "object|help": _s(2, "loading stale", 0, 0, 0, "keyspace slow", "generic", "6.2.0"),
    "persist": _s(2, "write fast", 1, 1, 1, "keyspace write fast", "generic", "2.2.0"),
    "pexpire": _s(-3, "write fast", 1, 1, 1, "keyspace write fast", "generic", "2.6.0"),
    "pexpireat": _s(-3, "write fast", 1, 1, 1, "keyspace write fast", "generic", "2.6.0"),
    "pexpiretime": _s(2, "readonly fast", 1, 1, 1, "keyspace read fast", "generic", "7.0.0"),
    "ping": _s(-1, "fast", 0, 0, 0, "fast connection", "connection", "1.0.0"),
    "pttl": _s(2, "readonly fast", 1, 1, 1, "keyspace read fast", "generic", "2.6.0"),
    "quit": _s(
        -1,
        "noscript loading stale fast no_auth allow_busy",
        0,
        0,
        0,
        "fast connection",
        "connection",
        "1.0.0",
    ),
    "randomkey": _s(1, "readonly", 0, 0, 0, "keyspace read slow", "generic", "1.0.0"),
    "rename": _s(3, "write", 1, 2, 1, "keyspace write slow", "generic", "1.0.0"),
    "renamenx": _s(3, "write fast", 1, 2, 1, "keyspace write fast", "generic", "1.0.0"),
    "replicaof": _s(
        3,
        "admin noscript stale no_async_loading",
        0,
        0,
        0,
        "admin slow dangerous",
        "server",
        "5.0.0",
    ),
    "reset": _s(
        1,
        "noscript loading stale fast no_auth allow_busy",
        0,
        0,
        0,
        "fast connection",
        "connection",
        "6.2.0",
    ),
    "restore": _s(
        -4, "write denyoom", 1, 1, 1, "keyspace write slow dangerous", "generic", "2.6.0"
    ),
    "role": _s(
        1, "noscript loading stale fast", 0, 0, 0, "admin fast dangerous", "server", "2.8.12"
    ),
    "rpop": _s(-2, "write fast", 1, 1, 1, "write list fast", "list", "1.0.0"),
    "rpush": _s(-3, "write denyoom fast", 1, 1, 1, "write list fast", "list", "1.0.0"),
    "sadd": _s(-3, "write denyoom fast", 1, 1, 1, "write set fast", "set", "1.0.0"),
    "save": _s(
        1,
        "admin noscript no_async_loading no_multi",
        0,
        0,
        0,
        "admin slow dangerous",
        "server",
        "1.0.0",
    ),
    "scan": _s(-2, "readonly", 0, 0, 0, "keyspace read slow", "generic", "2.8.0"),
    "scard": _s(2, "readonly fast", 1, 1, 1, "read set fast", "set", "1.0.0"),
    "script": _s(-2, "", 0, 0, 0, "slow", "scripting", "2.6.0"),
    "script|flush": _s(-2, "noscript", 0, 0, 0, "slow scripting", "scripting", "2.6.0"),
    "select": _s(2, "loading stale fast", 0, 0, 0, "fast connection", "connection", "1.0.0"),
    "set": _s(-3, "write denyoom", 1, 1, 1, "write string slow", "string", "1.0.0"),
    "shutdown": _s(
        -1,
        "admin noscript loading stale no_multi allow_busy",
        0,
        0,
        0,
        "admin slow dangerous",
        "server",
        "1.0.0",
    ),
    "sismember": _s(3, "readonly fast", 1, 1, 1, "read set fast", "set", "1.0.0"),
    "smembers": _s(2, "readonly", 1, 1, 1, "read set slow", "set", "1.0.0"),
    "srem": _s(-3, "write fast", 1, 1, 1, "write set fast", "set", "1.0.0"),
    "strlen": _s(2, "readonly fast", 1, 1, 1, "read string fast", "string", "2.2.0"),
    "swapdb": _s(3, "write fast", 0, 0, 0, "keyspace write fast dangerous", "server", "4.0.0"),
    "sync": _s(
        1,
        "admin noscript no_async_loading no_multi",
        0,
        0,
        0,
        "admin slow dangerous",
        "server",
        "1.0.0",
    ),
    "time": _s(1, "loading stale fast", 0, 0, 0, "fast", "server", "2.6.0"),
    "ttl": _s(2, "readonly fast", 1, 1, 1, "keyspace read fast", "generic", "1.0.0"),
    "type": _s(2, "readonly fast", 1, 1, 1, "keyspace read fast", "generic", "1.0.0"),
    "unlink": _s(-2, "write fast", 1, -1, 1, "keyspace write fast", "generic", "4.0.0"),
    "unwatch": _s(
        1,
        "noscript loading stale fast allow_busy",
        0,
        0,
        0,
        "fast transaction",
        "transactions",
        "2.2.0",
    ),
    "wait": _s(3, "blocking", 0, 0, 0, "slow blocking connection", "generic", "3.0.0"),
    "waitaof": _s(4, "blocking", 0, 0, 0, "slow blocking connection", "generic", "7.2.0"),
    "watch": _s(
        -2,
        "noscript loading stale fast allow_busy",
        1,
        -1,
        1,
        "fast transaction",
        "transactions",
        "2.2.0",
    ),
    "xack": _s(-4, "write fast", 1, 1, 1, "write stream fast", "stream", "5.0.0"),
    "xackdel": _s(-6, "write fast", 1, 1, 1, "write stream fast", "stream", "8.2.0"),
    "xadd": _s(-5, "write denyoom fast", 1, 1, 1, "write stream fast", "stream", "5.0.0"),
    "xautoclaim": _s(-6, "write fast", 1, 1, 1, "write stream fast", "stream", "6.2.0"),
    "xcfgset": _s(-2, "write fast", 1, 1, 1, "write stream fast", "stream", "8.6.0"),
    "xclaim": _s(-6, "write fast", 1, 1, 1, "write stream fast", "stream", "5.0.0"),
    "xdel": _s(-3, "write fast", 1, 1, 1, "write stream fast", "stream", "5.0.0"),
    "xdelex": _s(-5, "write fast", 1, 1, 1, "write stream fast", "stream", "8.2.0"),
    "xgroup": _s(-2, "", 0, 0, 0, "slow", "stream", "5.0.0"),
    "xgroup|create": _s(-5, "write denyoom", 2, 2, 1, "write stream slow", "stream", "5.0.0"),
    "xgroup|createconsumer": _s(
        5, "write denyoom", 2, 2, 1, "write stream slow", "stream", "6.2.0"
    ),
    "xgroup|delconsumer": _s(5, "write", 2, 2, 1, "write stream slow", "stream", "5.0.0"),
    "xgroup|destroy": _s(4, "write", 2, 2, 1, "write stream slow", "stream", "5.0.0"),
    "xgroup|help": _s(2, "loading stale", 0, 0, 0, "stream slow", "stream", "5.0.0"),
    "xgroup|setid": _s(-5, "write", 2, 2, 1, "write stream slow", "stream", "5.0.0"),
    "xidmprecord": _s(5, "write denyoom fast", 1, 1, 1, "write stream fast", "stream", "8.6.2"),
    "xinfo": _s(-2, "", 0, 0, 0, "slow", "stream", "5.0.0"),
    "xinfo|consumers": _s(4, "readonly", 2, 2, 1, "read stream slow", "stream", "5.0.0"),
    "xinfo|groups": _s(3, "readonly", 2, 2, 1, "read stream slow", "stream", "5.0.0"),
    "xinfo|help": _s(2, "loading stale", 0, 0, 0, "stream slow", "stream", "5.0.0"),
    "xinfo|stream": _s(-3, "readonly", 2, 2, 1, "read stream slow", "stream", "5.0.0"),
    "xlen": _s(2, "readonly fast", 1, 1, 1, "read stream fast", "stream", "5.0.0"),
    "xnack": _s(-7, "write fast", 1, 1, 1, "write stream fast", "stream", "8.8.0"),
    "xpending": _s(-3, "readonly", 1, 1, 1, "read stream slow", "stream", "5.0.0"),
    "xrange": _s(-4, "readonly", 1, 1, 1, "read stream slow", "stream", "5.0.0"),
    "xread": _s(
        -4, "readonly blocking movablekeys", 0, 0, 0, "read stream slow blocking", "stream", "5.0.0"
    ),
    "xreadgroup": _s(
        -7, "write blocking movablekeys", 0, 0, 0, "write stream slow blocking", "stream", "5.0.0"
    ),
    "xrevrange": _s(-4, "readonly", 1, 1, 1, "read stream slow", "stream", "5.0.0"),
    "xsetid": _s(-3, "write denyoom fast", 1, 1, 1, "write stream fast", "stream", "5.0.0"),
    "xtrim": _s(-4, "write", 1, 1, 1, "write stream slow", "stream", "5.0.0"),
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
