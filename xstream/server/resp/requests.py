"""Request parsing for the RESP server: codec.RespParser, sped up by hiredis when installed.

codec.RespParser reads requests exactly as Redis's networking.c does (multibulk and inline,
Redis's protocol error texts and limits), at ~8 us per 9-argument XADD compiled with mypyc
(~12 us pure). hiredis's Reader is a C *reply* parser: with the check below, 1.3 us per such
XADD compiled (2 us pure), so it stays. A well-formed multibulk request is also a valid
RESP array of bulk strings, so it can frame those, but it knows neither inline requests nor
Redis's request rules (it accepts `:1` or `+x` elements, waits forever on a bulk longer than
proto-max-bulk-len, has its own error texts). So it is trusted only where it cannot differ:

    hiredis returns an argv  ->  kept if the bytes at the cursor are exactly that argv's
                                 canonical multibulk (`*n` then `$len` bulks, nothing else)
    anything else            ->  the pure parser reads from the same cursor: inline
    (an error, a non-bulk        requests, odd encodings, protocol errors (Redis's texts),
     element, a partial one)     commands split across reads, limits

Both keep the input (ours, and hiredis's copy while it is in use); after the pure parser
has read a whole command, hiredis is given the rest (at most FAST_RESUME bytes, so going back
and forth costs little) if the next command is a multibulk one.
"""

from __future__ import annotations

from typing import Any

from .codec import _ARRAY_HDR, _RUN_BULK_HDR, _SHARED_HDRS, RespParser

hiredis: Any
try:
    import hiredis
except ImportError:  # the pure parser alone
    hiredis = None

FAST_RESUME = 64 << 10  # hiredis takes over again only with this little input left


def new_parser(max_bulk_len: int) -> RespParser:
    """A request parser bounded by proto-max-bulk-len (hiredis's fast path if installed)."""
    if hiredis is None:
        return RespParser(max_bulk_len)
    return FastRespParser(max_bulk_len)


def _canonical(argv: Any, max_bulk_len: int) -> bytes | None:
    """argv's canonical multibulk encoding; None unless argv is a list of bytes (not an int,
    a list or None: what hiredis gives for other elements), each within `max_bulk_len`
    (a longer one is the pure parser's to refuse, as Redis does: every argument the parser
    gives is within proto-max-bulk-len, so the node need not look again)."""
    # Typed parts, the CRLFs inside the prebuilt `\r\n$len\r\n` heads, no bound `append`:
    # ~2,500 instructions fewer per 9-argument XADD than a `\r\n`.join of untyped parts
    # (callgrind, compiled).
    if type(argv) is not list:
        return None
    n = len(argv)
    out: list[bytes] = [_ARRAY_HDR[n] if n < _SHARED_HDRS else b"*%d" % n]
    for arg in argv:
        if type(arg) is not bytes:
            return None
        m = len(arg)
        if m > max_bulk_len:
            return None
        out.append(_RUN_BULK_HDR[m] if m < _SHARED_HDRS else b"\r\n$%d\r\n" % m)
        out.append(arg)
    out.append(b"\r\n")
    return b"".join(out)


class FastRespParser(RespParser):
    """RespParser's results, hiredis's speed for canonical multibulk requests."""

    def __init__(self, max_bulk_len: int) -> None:
        super().__init__(max_bulk_len)
        self._reader: Any = hiredis.Reader()  # the fast path; None while the pure one reads

    def feed(self, data: bytes) -> None:
        super().feed(data)
        if self._reader is not None:
            self._reader.feed(data)

    def next_command(self) -> list[bytes] | None:
        while self._reader is not None and self._failed is None:
            try:
                argv = self._reader.gets()
            except hiredis.ProtocolError:
                break
            if argv is False:
                if self._pos == len(self._buf):
                    return None
                break  # a partial command: the pure parser bounds and reads it
            framed = _canonical(argv, self.max_bulk_len)
            if framed is None or not self._buf.startswith(framed, self._pos):
                break
            self._pos += len(framed)
            if argv:
                return argv  # type: ignore[no-any-return]
        self._reader = None
        argv = super().next_command()
        if argv is not None:
            self._resume()
        return argv

    def _resume(self) -> None:
        """Back to hiredis, between two commands, if the next one is a multibulk one."""
        left = len(self._buf) - self._pos
        if left > FAST_RESUME or (left and self._buf[self._pos] != ord("*")):
            return
        self._reader = hiredis.Reader()
        if left:
            self._reader.feed(bytes(self._buf[self._pos :]))
