"""Strings, as far as a stream service needs them: SET (with Redis's options), GET and STRLEN
(what redis-cli --bigkeys asks of a string).

    SET key value [NX|XX] [GET] [EX s|PX ms|EXAT unix-s|PXAT unix-ms|KEEPTTL]

Options parse as parseExtendedStringArgumentsOrReply (the same option may repeat, the last
time wins; conflicting ones are a syntax error), then the time is checked (a non-integer, or
`<= 0`, or an overflow: `invalid expire time in 'set' command`), then GET's WRONGTYPE, then
NX/XX (nil, or GET's old value, when they refuse). The effect is canonical: `SET key value`,
plus `PXAT when` for any time or `KEEPTTL` (NX, XX and GET were decided here), as Redis
propagates SET with EX/PX/EXAT as PXAT. Without KEEPTTL a SET clears the key's expiry.
"""

from __future__ import annotations

from typing import Final

from ..context import Ctx
from ..errors import StreamError, not_integer, syntax_error, wrong_type
from ..ids import string2ll
from ..reply import OK, Reply
from ..stream import Stream
from .args import word

_LLONG_MAX: Final = (1 << 63) - 1
_TIMES: Final = {b"ex": (1000, True), b"px": (1, True), b"exat": (1000, False), b"pxat": (1, False)}


def set_(ctx: Ctx) -> Reply:
    argv = ctx.argv
    key, value = argv[1], argv[2]
    opts, time_opt, time_arg = _options(argv)
    when = None if time_opt is None else _when(ctx, time_opt, time_arg)
    ks = ctx.keyspace
    old = ks.get(key)
    if b"get" in opts and old is not None and not isinstance(old, bytes):
        raise wrong_type()
    got = old if isinstance(old, bytes) else None  # GET's reply
    if (b"nx" in opts and old is not None) or (b"xx" in opts and old is None):
        return got if b"get" in opts else None
    if b"keepttl" in opts and old is not None:
        when = ks.expire_at(key)
    ks.set(key, value, when)
    effect = [b"SET", key, value]
    if when is not None:
        effect += [b"PXAT", b"%d" % when]
    elif b"keepttl" in opts:
        effect.append(b"KEEPTTL")
    ctx.propagate(effect)
    ctx.touch(key)
    if isinstance(old, Stream):  # Redis signals an overwritten key as deleted: XREADGROUP wakes
        ctx.signal(key)
    return got if b"get" in opts else OK


def _options(argv: list[bytes]) -> tuple[set[bytes], bytes | None, bytes]:
    """(flags among nx, xx, get, keepttl; the time option or None; its argument)."""
    opts: set[bytes] = set()
    time_opt: bytes | None = None
    time_arg = b""
    j = 3
    while j < len(argv):
        w = word(argv[j])
        has_next = j + 1 < len(argv)
        if _flag_ok(w, opts, time_opt):
            opts.add(w)
        elif w in _TIMES and b"keepttl" not in opts and time_opt in (None, w) and has_next:
            time_opt, time_arg = w, argv[j + 1]
            j += 1
        else:
            raise syntax_error()
        j += 1
    return opts, time_opt, time_arg


def _flag_ok(w: bytes, opts: set[bytes], time_opt: bytes | None) -> bool:
    """Whether `w` is NX, XX, GET or KEEPTTL and no option taken conflicts with it."""
    conflicts = {b"nx": b"xx" in opts, b"xx": b"nx" in opts, b"get": False}
    if w == b"keepttl":
        return time_opt is None
    return w in conflicts and not conflicts[w]


def _when(ctx: Ctx, opt: bytes, arg: bytes) -> int:
    """getExpireMillisecondsOrReply: the absolute unix ms `opt arg` names."""
    n = string2ll(arg)
    if n is None:
        raise not_integer()
    unit, relative = _TIMES[opt]
    if n <= 0 or (unit == 1000 and n > _LLONG_MAX // 1000):
        raise _expire_time()
    n *= unit
    if relative:
        n += ctx.now_ms
    if n <= 0 or n > _LLONG_MAX:
        raise _expire_time()
    return n


def _expire_time() -> StreamError:
    return StreamError("invalid expire time in 'set' command")


def get(ctx: Ctx) -> Reply:
    v = ctx.keyspace.get(ctx.argv[1])
    if v is None or isinstance(v, bytes):
        return v
    raise wrong_type()


def strlen(ctx: Ctx) -> Reply:
    v = ctx.keyspace.get(ctx.argv[1])
    if v is None:
        return 0
    if isinstance(v, bytes):
        return len(v)
    raise wrong_type()
