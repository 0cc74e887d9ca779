"""XNACK (Redis 8.8): release pending entries back to the group without acknowledging them.

    XNACK key group SILENT|FAIL|FATAL IDS numids id ... [RETRYCOUNT n] [FORCE]

Released entries lose their owner, get delivery time 0 and join the back of the group's NACK
zone, which XREADGROUP CLAIM serves first. Delivery count: SILENT -1 (not below 0), FAIL
unchanged, FATAL INT64_MAX; RETRYCOUNT overrides. FORCE creates released PEL entries for
stream entries not pending yet. Deterministic, so it ships itself when it released anything.
"""

from __future__ import annotations

from typing import Final

from ..context import Ctx
from ..errors import StreamError
from ..ids import StreamID, parse_strict
from ..reply import Reply
from .args import parse_ll, word
from .groupbase import ctext, stream_and_group

_INT64_MAX: Final = (1 << 63) - 1
_MODES: Final = (b"silent", b"fail", b"fatal")


def xnack(ctx: Ctx) -> Reply:
    argv = ctx.argv
    s, g = stream_and_group(ctx, argv[1], argv[2])
    mode = word(argv[3])
    if mode not in _MODES:
        raise StreamError("mode must be SILENT, FAIL, or FATAL")
    raw: list[bytes] | None = None
    retrycount: int | None = None
    force = False
    i = 4
    while i < len(argv):
        w = word(argv[i])
        if w == b"ids" and raw is None and i + 1 < len(argv):
            n = parse_ll(argv[i + 1], "numids must be a positive integer")
            if n <= 0:
                raise StreamError("numids must be a positive integer")
            if n > len(argv) - i - 2:
                raise StreamError("number of IDs doesn't match numids")
            raw = argv[i + 2 : i + 2 + n]
            i += 2 + n
            continue
        if w == b"retrycount" and i + 1 < len(argv):
            retrycount = parse_ll(argv[i + 1])
            if retrycount < 0:
                raise StreamError("Invalid RETRYCOUNT value, must be >= 0")
            i += 2
            continue
        if w == b"force":
            force = True
            i += 1
            continue
        raise StreamError(f"Unrecognized XNACK option '{ctext(argv[i])}'")
    if raw is None:
        raise StreamError("syntax error, expected IDS keyword")
    ids: list[StreamID] = [parse_strict(a) for a in raw]
    released = 0
    for entry_id in ids:
        nack = g.pel.get(entry_id)
        if nack is None:
            if not force or s.get(entry_id) is None:
                continue
            start = _INT64_MAX if mode == b"fatal" else 0
            nack = g.add_pending(entry_id, None, 0, retrycount if retrycount is not None else start)
            released += 1
            continue
        g.release(entry_id, nack)
        if retrycount is not None:
            nack.delivery_count = retrycount
        elif mode == b"silent":
            nack.delivery_count = _decremented(nack.delivery_count)
        elif mode == b"fatal":
            nack.delivery_count = _INT64_MAX
        released += 1
    if released:
        ctx.propagate(list(argv))
        ctx.signal(argv[1])
    return released


def _decremented(count: int) -> int:
    """SILENT's count - 1, never below 0, on Redis's unsigned 64-bit counter (stored signed:
    one below INT64_MIN, i.e. 2**63 unsigned, is INT64_MAX)."""
    if count == 0:
        return 0
    return count - 1 if count != -_INT64_MAX - 1 else _INT64_MAX
