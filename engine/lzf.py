"""LZF, as Redis's lzf_c.c / lzf_d.c (liblzf 3.6, VERY_FAST, HLOG 16): RDB's string compression.

    compressed stream, one command after another
    000LLLLL <L+1 bytes>              literal run of L+1 (1..32) bytes
    LLLooooo oooooooo                 back reference: copy L+2 (3..8) bytes from o+1 back
    111ooooo LLLLLLLL oooooooo        back reference: copy L+9 (9..264) bytes from o+1 back

`compress` reproduces Redis's output byte for byte, given that Redis's hash table starts
zeroed: lzf_c.c leaves it uninitialised (INIT_HTAB 0), so a slot left over from an earlier call
can, rarely, make Redis find a match this function does not; both outputs decompress to the
same bytes. `compress` returns None when the result would not fit in `out_len` bytes, as
lzf_compress returns 0. Pure Python: a few MB/s.
"""

from __future__ import annotations

from typing import Final

from .errors import EngineError

_HSIZE_MASK: Final = (1 << 16) - 1  # HLOG 16
_MAX_LIT: Final = 1 << 5
_MAX_OFF: Final = 1 << 13
_MAX_REF: Final = (1 << 8) + (1 << 3)
_U32: Final = 0xFFFFFFFF


class LzfError(EngineError):
    """A compressed string that does not decompress to its announced length."""


def compress(data: bytes, out_len: int) -> bytes | None:
    """lzf_compress(data, len, out, out_len): the compressed bytes, or None if too long."""
    d = data
    in_len = len(d)
    if not in_len or not out_len:
        return None
    htab = [0] * (_HSIZE_MASK + 1)  # positions; 0 is "empty" (a match at 0 is never taken)
    out = bytearray(out_len + 4)
    lit = 0
    op = 1  # start run
    ip = 0
    hval = (d[0] << 8 | d[1]) if in_len > 1 else 0
    while ip < in_len - 2:
        hval = (hval << 8 | d[ip + 2]) & _U32
        slot = ((hval >> 8) - hval * 5) & _HSIZE_MASK
        ref = htab[slot]
        htab[slot] = ip
        off = ip - ref - 1
        if (
            ref > 0
            and 0 <= off < _MAX_OFF
            and d[ref + 2] == d[ip + 2]
            and d[ref] == d[ip]
            and d[ref + 1] == d[ip + 1]
        ):
            length = 2
            maxlen = min(in_len - ip - length, _MAX_REF)
            if op + 4 >= out_len and op - (not lit) + 4 >= out_len:
                return None
            out[op - lit - 1] = (lit - 1) & 0xFF  # stop run
            op -= not lit  # undo run if length is zero
            length = _match_length(d, ref, ip, maxlen)
            length -= 2  # now the number of bytes - 1
            ip += 1
            if length < 7:
                out[op] = (off >> 8) + (length << 5)
                op += 1
            else:
                out[op] = (off >> 8) + (7 << 5)
                out[op + 1] = length - 7
                op += 2
            out[op] = off & 0xFF
            op += 2  # the offset's low byte, then start a run
            lit = 0
            ip += length + 1
            if ip >= in_len - 2:
                break
            ip -= 2  # VERY_FAST: hash the last two positions of the match
            hval = d[ip] << 8 | d[ip + 1]
            for _ in range(2):
                hval = (hval << 8 | d[ip + 2]) & _U32
                htab[((hval >> 8) - hval * 5) & _HSIZE_MASK] = ip
                ip += 1
        else:
            if op >= out_len:
                return None
            out[op] = d[ip]
            op += 1
            ip += 1
            lit += 1
            if lit == _MAX_LIT:
                out[op - lit - 1] = lit - 1
                lit = 0
                op += 1
    if op + 3 > out_len:
        return None
    while ip < in_len:
        out[op] = d[ip]
        op += 1
        ip += 1
        lit += 1
        if lit == _MAX_LIT:
            out[op - lit - 1] = lit - 1
            lit = 0
            op += 1
    out[op - lit - 1] = (lit - 1) & 0xFF  # end run
    op -= not lit
    return bytes(out[:op])


def _match_length(d: bytes, ref: int, ip: int, maxlen: int) -> int:
    """How far lzf_c.c's match loop gets: 16 unchecked steps when maxlen > 16, then one by one
    up to maxlen (so the result can pass maxlen by up to 2, as in C)."""
    length = 2
    if maxlen > 16:
        for _ in range(16):
            length += 1
            if d[ref + length] != d[ip + length]:
                return length
    length += 1
    while length < maxlen and d[ref + length] == d[ip + length]:
        length += 1
    return length


def decompress(data: bytes | memoryview, out_len: int) -> bytes:
    """lzf_decompress with CHECK_INPUT; LzfError unless the result is exactly out_len bytes."""
    d = bytes(data)
    in_len = len(d)
    out = bytearray()
    ip = 0
    while ip < in_len:
        ctrl = d[ip]
        ip += 1
        if ctrl < _MAX_LIT:
            ctrl += 1
            if len(out) + ctrl > out_len or ip + ctrl > in_len:
                raise LzfError("literal run overruns")
            out += d[ip : ip + ctrl]
            ip += ctrl
            continue
        length = ctrl >> 5
        if ip >= in_len:
            raise LzfError("back reference truncated")
        if length == 7:
            length += d[ip]
            ip += 1
            if ip >= in_len:
                raise LzfError("back reference truncated")
        ref = len(out) - ((ctrl & 0x1F) << 8) - 1 - d[ip]
        ip += 1
        length += 2
        if len(out) + length > out_len:
            raise LzfError("back reference overruns")
        if ref < 0:
            raise LzfError("back reference before the start")
        if ref + length <= len(out):
            out += out[ref : ref + length]
        else:  # overlapping: byte by byte
            for k in range(length):
                out.append(out[ref + k])
    if len(out) != out_len:
        raise LzfError(f"decompressed to {len(out)} bytes, {out_len} announced")
    return bytes(out)
