"""DUMP and RESTORE, in Redis's own serialization (rdb.py), as cluster.c's dumpCommand and
restoreCommand answer them.

    DUMP key                        the payload, nil for a missing key (a read: no effects)
    RESTORE key ttl payload [REPLACE] [ABSTTL] [IDLETIME seconds] [FREQ frequency]

RESTORE checks in Redis's order: options (syntax, IDLETIME >= 0, FREQ 0..255, IDLETIME and
FREQ exclusive), BUSYKEY without REPLACE, the TTL, the payload's footer, then the value.

A TTL > 0 is relative ms, or with ABSTTL a unix time in ms; a time already reached restores
nothing (and deletes the key REPLACE names, shipping a DEL), as Redis's checkAlreadyExpired.
IDLETIME and FREQ only feed the eviction clock, which the engine does not have: checked, then
ignored. DUMP leaves the TTL out, as Redis's: a round trip passes it as RESTORE's ttl.

Effect: `RESTORE key 0 payload REPLACE`, or `RESTORE key <unix ms> payload REPLACE ABSTTL`
for a key that expires (Redis propagates the TTL as an absolute time too). The payload is the one
received, unless loading left out expired IDMP records (the only clock-dependent part of a
load): then it is the loaded value dumped again, so the replica, which loads everything it is
shipped, ends with the same records.
"""

from __future__ import annotations

from .. import rdb
from ..context import Ctx
from ..errors import StreamError, syntax_error
from ..reply import OK, Reply
from .args import parse_ll, word


def dump(ctx: Ctx) -> Reply:
    value = ctx.keyspace.get(ctx.argv[1])
    return None if value is None else rdb.dump(value, ctx.now_ms)


def restore(ctx: Ctx) -> Reply:
    argv = ctx.argv
    key = argv[1]
    replace, absttl = _options(argv)
    existed = key in ctx.keyspace
    if existed and not replace:
        raise StreamError("Target key name already exists.", "BUSYKEY")
    ttl = parse_ll(argv[2])
    if ttl < 0:
        raise StreamError("Invalid TTL value, must be >= 0")
    payload = argv[3]
    if not rdb.verify(payload):
        raise StreamError("DUMP payload version or checksum are wrong")
    try:
        value, dropped = rdb.load(payload, None if ctx.replicated else ctx.now_ms)
    except rdb.RdbError:
        raise StreamError("Bad data format") from None
    when = (ttl if absttl else ttl + ctx.now_ms) if ttl else None
    if when is not None and when <= ctx.now_ms and not ctx.replicated:
        if existed:  # already expired: the key REPLACE names is deleted, nothing is created
            ctx.keyspace.delete(key)
            ctx.propagate([b"DEL", key])
            ctx.signal(key)
            ctx.touch(key)
        return OK
    ctx.keyspace.set(key, value, when)
    shipped = rdb.dump(value, ctx.now_ms) if dropped else payload
    effect = [b"RESTORE", key, b"%d" % (when or 0), shipped, b"REPLACE"]
    ctx.propagate([*effect, b"ABSTTL"] if when is not None else effect)
    ctx.signal(key)
    return OK


def _options(argv: list[bytes]) -> tuple[bool, bool]:
    """(REPLACE, ABSTTL); IDLETIME and FREQ are validated and dropped."""
    replace = absttl = False
    idle = freq = -1
    j = 4
    while j < len(argv):
        w = word(argv[j])
        more = len(argv) - j - 1
        if w == b"replace":
            replace = True
        elif w == b"absttl":
            absttl = True
        elif w == b"idletime" and more >= 1 and freq == -1:
            idle = parse_ll(argv[j + 1])
            if idle < 0:
                raise StreamError("Invalid IDLETIME value, must be >= 0")
            j += 1
        elif w == b"freq" and more >= 1 and idle == -1:
            freq = parse_ll(argv[j + 1])
            if not 0 <= freq <= 255:
                raise StreamError("Invalid FREQ value, must be >= 0 and <= 255")
            j += 1
        else:
            raise syntax_error()
        j += 1
    return replace, absttl
