"""XCONFIGSET, the internal effect of CONFIG SET on the stream settings (settings.py).

XCONFIGSET name value [name value ...]   set stream-node-max-bytes, stream-node-max-entries,
    stream-idmp-duration, stream-idmp-maxsize: all pairs or none (the first bad pair's
    error, with CONFIG SET's text); ships itself when a value changed. The primary's
    CONFIG SET runs it as a write, so the log, the replicas and snapshots carry the values.
    Values are as CONFIG SET takes them (`4kb` for stream-node-max-bytes).
"""

from __future__ import annotations

from .. import settings
from ..context import Ctx
from ..errors import StreamError, wrong_arity
from ..reply import OK, Reply


def xconfigset(ctx: Ctx) -> Reply:
    argv = ctx.argv
    if len(argv) % 2 == 0:
        raise wrong_arity("xconfigset")
    pairs: dict[bytes, int] = {}
    for raw, value in zip(argv[1::2], argv[2::2], strict=True):
        name = raw.lower()
        if name not in settings.SETTINGS:
            raise StreamError(
                f"Unknown option or number of arguments for CONFIG SET - "
                f"'{raw.decode('utf-8', 'replace')}'"
            )
        if name in pairs:
            raise failed(raw, "duplicate parameter")
        try:
            pairs[name] = settings.parse(name, value)
        except StreamError as e:
            raise failed(raw, e.message) from None
    changed = [ctx.settings.set(name, value) for name, value in pairs.items()]
    if any(changed):
        ctx.propagate(list(argv))
    return OK


def failed(name: bytes, reason: str) -> StreamError:
    """CONFIG SET's error for a parameter it knows but cannot set."""
    return StreamError(
        f"CONFIG SET failed (possibly related to argument '{name.decode('utf-8', 'replace')}')"
        f" - {reason}"
    )
