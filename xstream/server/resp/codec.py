"""RESP, the Redis wire protocol, without I/O: bytes in, values out, values in, bytes out.

    encode(reply, proto)   Reply -> RESP2 or RESP3 bytes (chunks gathered, joined once)
    encode_bulk(data)      bytes -> a bulk string (the fast path of encode)
    encode_bulks(replies)  bulk strings -> their bulk strings back to back (a batch's IDs)
    encode_error(err)      StreamError -> `-PREFIX message\r\n`
    RespParser             client requests -> argv lists, read as Redis's networking.c reads
                           them (multibulk, or inline split like sdssplitargs; see split_args
                           for the one deviation)
    ReplyParser            server replies, RESP2 and RESP3 -> Reply / StreamError

Request framing (what a server must accept):

    *<n>\r\n  then n times  $<len>\r\n<len bytes>\r\n      multibulk; n <= 0 is an empty no-op
    <words separated by blanks, "quoted" or 'quoted'>\n     inline; `\r\n` also ends the line

Both parsers keep one buffer and a cursor; `feed` appends, `next_*` consumes whole items only, so
any split of the input into chunks yields the same items. A `ProtocolError` is final: Redis
replies with its text and closes the connection, and the parser re-raises it from then on.
Parsing uses no recursion (a stack of open aggregates), so nesting depth costs no Python frames.

This module and requests.py are compiled with mypyc (xstream/builds.py chooses the build; the pure
source stays complete and tested): the encoder is written for it (exact `type() is` tests,
native list appends), ~3.4x faster compiled (an XRANGE reply of 100 three-field entries: 26
us, 89 us pure). A whole request framed as clients frame them is taken by one compiled scan
(RespParser._scanned), everything else by the state machine that reads as Redis does.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final, TypeAlias, cast

from xstream.engine.errors import EngineError, StreamError
from xstream.engine.reply import (
    NULL_ARRAY,
    EncodedRun,
    PairMap,
    Reply,
    ReplyMap,
    ReplySet,
    Status,
)

# Redis's defaults (server.h, config.c). The multibulk limit is INT_MAX in Redis 7.0 (`ll >
# INT_MAX` in processMultibulkBuffer), not the 1024*1024 of older releases; checked on 7.0.15.
PROTO_MAX_BULK_LEN: Final = 512 * 1024 * 1024  # proto-max-bulk-len
PROTO_MAX_MULTIBULK_LEN: Final = 2**31 - 1  # INT_MAX
PROTO_INLINE_MAX_SIZE: Final = 64 * 1024  # longest inline request / length line without `\n`

_CRLF: Final = b"\r\n"
_SHARED_HDRS: Final = 1024  # headers prebuilt for lengths below this (Redis keeps 32)
# `$n` and `*n` headers without their CRLF (encode joins the parts with CRLFs)
_BULK_HDR: Final = [b"$%d" % n for n in range(_SHARED_HDRS)]
_ARRAY_HDR: Final = [b"*%d" % n for n in range(_SHARED_HDRS)]
_BULK_LINE: Final = [b"$%d\r\n" % n for n in range(_SHARED_HDRS)]  # with its CRLF
# A bulk string's `$n` header between the CRLF that ends the item before it and its own, for
# parts joined with no separator (requests.py)
_RUN_BULK_HDR: Final = [b"\r\n$%d\r\n" % n for n in range(_SHARED_HDRS)]


class ProtocolError(EngineError):
    """The peer broke the protocol; the connection cannot go on. `message` is Redis's text."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    @property
    def error(self) -> StreamError:
        """The error reply Redis sends before closing the connection."""
        return StreamError(self.message)


class NeedMore(enum.Enum):
    """`ReplyParser.next_reply` found no complete reply (None is a reply, so it cannot say so)."""

    NEED_MORE = "NEED_MORE"


NEED_MORE: Final = NeedMore.NEED_MORE


# --- Encoding ------------------------------------------------------------------------------------


def encode(reply: Reply, proto: int = 2) -> bytes:
    """The RESP encoding of `reply`; `proto` is 2 or 3 (as chosen by HELLO).

    Every RESP item ends in CRLF and a bulk string is two CRLF-ended parts (its `$len` line
    and its data), so the encoders gather the parts without their CRLFs and one join puts
    them in: half the pieces to gather, and no per-element concatenation."""
    if proto not in (2, 3):
        raise ValueError(f"unsupported protocol version {proto}")
    out: list[bytes] = []
    _encode_into(out, reply, proto == 3)
    out.append(b"")
    return b"\r\n".join(out)


def encode_bulk(data: bytes) -> bytes:
    """A bulk string (the same in RESP2 and RESP3): `encode(data)` without the dispatch."""
    n = len(data)
    return b"%b\r\n%b\r\n" % (_BULK_HDR[n] if n < _SHARED_HDRS else b"$%d" % n, data)


def encode_bulks(replies: list[object]) -> bytes | None:
    """`encode_bulk` of each of `replies` joined, when every one is bytes (a pipeline's run of
    XADDs answers its IDs), else None: one buffer for the transport instead of a part per
    reply (the parts of `$n\r\n`, the data and its CRLF: one copy each, by one join)."""
    out: list[bytes] = []
    for reply in replies:
        if type(reply) is not bytes:
            return None
        n = len(reply)
        out.append(_BULK_LINE[n] if n < _SHARED_HDRS else b"$%d\r\n" % n)
        out.append(reply)
        out.append(_CRLF)
    return b"".join(out)


def encode_error(err: StreamError) -> bytes:
    """`-PREFIX message\\r\\n`; CR and LF cannot be framed, so Redis trims and blanks them."""
    line = err.line.strip("\r\n").replace("\r", " ").replace("\n", " ")
    return b"-" + line.encode("utf-8", "surrogateescape") + _CRLF


def _encode_into(out: list[bytes], reply: Reply, resp3: bool) -> None:
    """Append `reply`'s parts to `out`, each without its CRLF (encode joins them)."""
    if type(reply) is bytes:
        n = len(reply)
        out.append(_BULK_HDR[n] if n < _SHARED_HDRS else b"$%d" % n)
        out.append(reply)
    elif type(reply) is list:
        items = cast("list[Reply]", reply)
        n = len(items)
        out.append(_ARRAY_HDR[n] if n < _SHARED_HDRS else b"*%d" % n)
        _encode_items(out, items, resp3)
    elif isinstance(reply, PairMap) and resp3:
        out.append(b"%%%d" % len(reply))
        for key, value in reply:
            _encode_into(out, key, resp3)
            _encode_into(out, value, resp3)
    elif isinstance(reply, ReplyMap):
        n = len(reply)
        if resp3:
            out.append(b"%%%d" % n)
        else:
            out.append(_ARRAY_HDR[2 * n] if 2 * n < _SHARED_HDRS else b"*%d" % (2 * n))
        for key, value in reply:
            _encode_into(out, key, resp3)
            _encode_into(out, value, resp3)
    elif isinstance(reply, list):  # PairMap and ReplySet in RESP2: a plain array
        n = len(reply)
        set3 = resp3 and isinstance(reply, ReplySet)
        out.append(b"~%d" % n if set3 else _ARRAY_HDR[n] if n < _SHARED_HDRS else b"*%d" % n)
        _encode_items(out, cast("list[Reply]", reply), resp3)
    elif isinstance(reply, Status):
        assert "\r" not in reply and "\n" not in reply, reply
        out.append(b"+" + reply.encode("utf-8", "surrogateescape"))
    elif isinstance(reply, int):
        out.append(b":%d" % reply)
    elif reply is None:
        out.append(b"_" if resp3 else b"$-1")
    elif reply is NULL_ARRAY:
        out.append(b"_" if resp3 else b"*-1")
    elif isinstance(reply, EncodedRun):  # RESP already: its items open with their CRLFs
        assert reply.form == "resp", reply
        out.append(b"*%d%b" % (reply.count, b"".join(reply.pieces)))
    elif isinstance(reply, bytes):  # a bytes subclass
        _encode_into(out, bytes(reply), resp3)
    else:
        raise TypeError(f"not a reply value: {reply!r}")


def _encode_items(out: list[bytes], items: list[Reply], resp3: bool) -> None:
    """An array's items: bulk strings and plain lists inline (the whole of an XRANGE reply:
    entries of [id, [field, value, ...]]), anything else through _encode_into. Written for
    mypyc (codec.py is compiled: xstream/builds.py): exact type tests, `out.append` called
    directly (a native list append; an alias of the bound method would be a Python call)."""
    for item in items:
        if type(item) is bytes:
            m = len(item)
            out.append(_BULK_HDR[m] if m < _SHARED_HDRS else b"$%d" % m)
            out.append(item)
        elif type(item) is list:
            sub = cast("list[Reply]", item)
            m = len(sub)
            out.append(_ARRAY_HDR[m] if m < _SHARED_HDRS else b"*%d" % m)
            _encode_items(out, sub, resp3)  # not a map: type() is list
        else:
            _encode_into(out, item, resp3)


# --- The shared input buffer --------------------------------------------------------------------


class _Buffer:
    """Bytes fed so far; `_pos` is the first unconsumed one."""

    def __init__(self) -> None:
        self._buf = bytearray()  # input; empty at start
        self._pos = 0  # cursor into _buf; 0 at start
        self._failed: ProtocolError | None = None  # the final error, once raised; None if none
        self._window = b""  # a copy of _buf from _window_at (RespParser's scan); b"": none
        self._window_at = 0

    def feed(self, data: bytes) -> None:
        """Append bytes received from the peer."""
        self._window = b""  # (the buffer changes)
        if self._pos == len(self._buf):
            self._buf.clear()
            self._pos = 0
        elif self._pos > 4096 and 2 * self._pos > len(self._buf):
            del self._buf[: self._pos]
            self._pos = 0
        self._buf += data

    @property
    def buffered(self) -> int:
        """How many fed bytes are not yet consumed."""
        return len(self._buf) - self._pos


_STRING2LL: Final = re.compile(rb"0|-?[1-9][0-9]{0,18}")
_INT64: Final = range(-(2**63), 2**63)


def _string2ll(s: bytes) -> int | None:
    """Redis's `string2ll`: no sign but `-`, no leading zero, no blank, within int64."""
    if _STRING2LL.fullmatch(s) is None:
        return None
    n = int(s)
    return n if n in _INT64 else None


_WINDOW: Final = 256 << 10  # RespParser._scanned reads through a copy of at most this much


def _scan_length(buf: bytes, i: int, end: int) -> tuple[int, int]:
    """The length at buf[i:] (digits, no sign, no leading zero, at most 18) and the index
    past its CRLF; -1 (and an index) if there is none such whole before `end`."""
    start, n = i, 0
    while i < end:
        c = buf[i]
        if c < 48 or c > 57:  # not a digit
            break
        n = n * 10 + (c - 48)
        i += 1
    k = i - start
    if k == 0 or k > 18 or (k > 1 and buf[start] == 48) or i + 1 >= end:
        return -1, i
    if buf[i] != 13 or buf[i + 1] != 10:
        return -1, i
    return n, i + 2


def _byte_text(b: int) -> str:
    return bytes([b]).decode("utf-8", "surrogateescape")


# --- Requests -----------------------------------------------------------------------------------


class RespParser(_Buffer):
    """Client requests to argv lists; `next_command()` is None until one is complete."""

    def __init__(self, max_bulk_len: int = PROTO_MAX_BULK_LEN, scan: bool = True) -> None:
        super().__init__()
        self.max_bulk_len = max_bulk_len  # proto-max-bulk-len; 512 MiB by default
        self.scan = scan  # try `_scanned` first (False: the state machine alone, for tests)
        self._multibulk = 0  # bulks still to read in the current multibulk; 0 between commands
        self._bulk = -1  # length of the bulk being read; -1 while its `$` line is unread
        self._argv: list[bytes] = []  # bulks read so far of the current multibulk

    def next_command(self) -> list[bytes] | None:
        """The next complete request's argv (never empty), or None; raises ProtocolError."""
        if self._failed is not None:
            raise self._failed
        try:
            return self._next_command()
        except ProtocolError as e:
            self._failed = e
            raise

    def next_alike(
        self, head: bytes, argc: int, into: list[list[bytes]], limit: int
    ) -> list[bytes] | None:
        """Append to `into`, while it holds fewer than `limit`, each next command spelt with
        `head` and of `argc` words (a pipeline's run of one command); then the next command,
        if it is another (not appended), else None: the input ran dry, `limit` was reached,
        or a ProtocolError was raised (raised again by the next call). A loop of
        `next_command` run compiled: ~1,500 instructions fewer per command than as Python."""
        try:
            while len(into) < limit:
                argv = self.next_command()
                if argv is None:
                    return None
                if len(argv) != argc or argv[0] != head:
                    return argv
                into.append(argv)
        except ProtocolError:
            pass
        return None

    def _next_command(self) -> list[bytes] | None:
        while True:
            if self._multibulk == 0:
                if self._pos == len(self._buf):
                    return None
                argv = self._scanned() if self.scan else None
                if argv is not None:
                    return argv
                if self._buf[self._pos] != ord("*"):
                    argv = self._inline()
                    if argv is None:
                        return None
                    if argv:
                        return argv
                    continue  # a blank line: Redis skips it
                if not self._multibulk_header():
                    return None
                if self._multibulk == 0:
                    continue  # `*0`, `*-1`: nothing to run
            if not self._bulks():
                return None
            argv, self._argv = self._argv, []
            return argv

    def _scanned(self) -> list[bytes] | None:
        """The request at the cursor if it is whole, well within the limits and framed as
        clients frame requests (below), consumed; else None, nothing consumed, and the
        state machine below reads it as Redis does (its errors, limits, partial input):

            *<n>\r\n ($<len>\r\n<len bytes>..){n}     1 <= n, no sign, no leading zero

        Whatever this takes the state machine would read alike (both skip the two bytes
        after a bulk unchecked, as Redis does). It reads from a copy of the buffer
        (`_window`, up to _WINDOW bytes, taken once per feed): one slice per argument."""
        pos, at = self._pos, self._window_at
        window = self._window
        if pos < at or pos >= at + len(window):
            window = bytes(self._buf[pos : pos + _WINDOW])
            self._window, self._window_at = window, pos
            at = pos
        i, end = pos - at, len(window)
        if window[i] != 42:  # `*`
            return None
        n, i = _scan_length(window, i + 1, end)
        if n <= 0 or n > PROTO_MAX_MULTIBULK_LEN:
            return None
        limit = self.max_bulk_len
        argv: list[bytes] = []
        while n:
            if i >= end or window[i] != 36:  # `$`
                return None
            m, i = _scan_length(window, i + 1, end)
            stop = i + m
            if m < 0 or m > limit or stop + 2 > end:
                return None
            argv.append(window[i:stop])
            i = stop + 2  # the CRLF is skipped unchecked, as Redis does
            n -= 1
        self._pos = at + i
        return argv

    def _length_line(self, too_big: str) -> bytes | None:
        """The line at the cursor, up to its `\\r`; Redis skips the next byte unchecked."""
        buf, pos = self._buf, self._pos
        end = buf.find(b"\r", pos)
        if end < 0:
            if len(buf) - pos > PROTO_INLINE_MAX_SIZE:
                raise ProtocolError(f"Protocol error: {too_big}")
            return None
        if end + 1 >= len(buf):
            return None
        self._pos = end + 2
        return bytes(buf[pos:end])

    def _multibulk_header(self) -> bool:
        line = self._length_line("too big mbulk count string")
        if line is None:
            return False
        n = _string2ll(line[1:])
        if n is None or n > PROTO_MAX_MULTIBULK_LEN:
            raise ProtocolError("Protocol error: invalid multibulk length")
        self._multibulk = max(n, 0)
        return True

    def _bulks(self) -> bool:
        """Read the current multibulk's remaining bulks; True once all are in `_argv`."""
        buf = self._buf
        while self._multibulk:
            if self._bulk < 0:
                first = buf[self._pos] if self._pos < len(buf) else 0
                line = self._length_line("too big bulk count string")
                if line is None:
                    return False
                if first != ord("$"):
                    raise ProtocolError(f"Protocol error: expected '$', got '{_byte_text(first)}'")
                n = _string2ll(line[1:])
                if n is None or n < 0 or n > self.max_bulk_len:
                    raise ProtocolError("Protocol error: invalid bulk length")
                self._bulk = n
            end = self._pos + self._bulk
            if end + 2 > len(buf):
                return False
            self._argv.append(bytes(buf[self._pos : end]))
            self._pos = end + 2  # the CRLF is skipped unchecked, as Redis does
            self._bulk = -1
            self._multibulk -= 1
        return True

    def _inline(self) -> list[bytes] | None:
        buf, pos = self._buf, self._pos
        newline = buf.find(b"\n", pos)
        if newline < 0:
            if len(buf) - pos > PROTO_INLINE_MAX_SIZE:
                raise ProtocolError("Protocol error: too big inline request")
            return None
        end = newline - 1 if newline > pos and buf[newline - 1] == ord("\r") else newline
        argv = split_args(bytes(buf[pos:end]))
        if argv is None:
            raise ProtocolError("Protocol error: unbalanced quotes in request")
        self._pos = newline + 1
        return argv


_ISSPACE: Final = frozenset(b" \t\n\v\f\r")  # C isspace(): skipped between words
_WORD_END: Final = frozenset(b" \n\r\t")  # what ends an unquoted word (not \v, \f)
_HEX: Final = frozenset(b"0123456789abcdefABCDEF")
_ESCAPES: Final = {ord("n"): 10, ord("r"): 13, ord("t"): 9, ord("b"): 8, ord("a"): 7}
_DQ, _SQ, _BACKSLASH = ord('"'), ord("'"), ord("\\")


def split_args(line: bytes) -> list[bytes] | None:
    """Redis's `sdssplitargs`: words, "double" (\\n, \\xHH, ... escapes) or 'single' quoted.

    None for unbalanced quotes or a closing quote not followed by a blank. The line is a C
    string, so it ends at the first NUL byte. (Redis itself never sees such an inline line end:
    its `strchr` for the newline stops at the NUL.)
    """
    s = line.split(b"\0", 1)[0]
    argv: list[bytes] = []
    i = 0
    while True:
        while i < len(s) and s[i] in _ISSPACE:
            i += 1
        if i == len(s):
            return argv
        word = bytearray()
        i = _split_word(s, i, word)
        if i < 0:
            return None
        argv.append(bytes(word))


def _split_word(s: bytes, i: int, word: bytearray) -> int:
    """Read one word from s[i]; returns the index past it (and its end byte), or -1."""
    quote = 0  # the open quote character; 0 outside quotes
    while i < len(s):
        c = s[i]
        if quote == _DQ and c == _BACKSLASH and s[i + 1 : i + 2] == b"x" and _is_hex2(s, i + 2):
            word.append(int(s[i + 2 : i + 4], 16))
            i += 3
        elif quote == _DQ and c == _BACKSLASH and i + 1 < len(s):
            i += 1
            word.append(_ESCAPES.get(s[i], s[i]))
        elif quote == _SQ and c == _BACKSLASH and s[i + 1 : i + 2] == b"'":
            i += 1
            word.append(_SQ)
        elif quote and c == quote:
            if i + 1 < len(s) and s[i + 1] not in _ISSPACE:
                return -1
            return i + 1
        elif quote:
            word.append(c)
        elif c in _WORD_END:
            return i + 1
        elif c in (_DQ, _SQ):
            quote = c
        else:
            word.append(c)
        i += 1
    return -1 if quote else i


def _is_hex2(s: bytes, i: int) -> bool:
    return i + 2 <= len(s) and s[i] in _HEX and s[i + 1] in _HEX


# --- Replies ------------------------------------------------------------------------------------

# What a reply parses to: errors are values, not exceptions.
Parsed: TypeAlias = "Reply | StreamError"

_SIGNED: Final = re.compile(rb"[+-]?[0-9]+")


def _error(text: bytes) -> StreamError:
    prefix, _, message = text.decode("utf-8", "surrogateescape").partition(" ")
    return StreamError(message, prefix)


def _integer(body: bytes) -> int:
    if _SIGNED.fullmatch(body) is None:
        raise ProtocolError(f"Protocol error: bad integer {body[:64]!r}")
    return int(body)


def _null(body: bytes) -> None:
    if body:
        raise ProtocolError(f"Protocol error: bad null {body[:64]!r}")


def _boolean(body: bytes) -> int:
    """RESP3 `#t`/`#f` as RESP2 has them: 1 and 0."""
    if body not in (b"t", b"f"):
        raise ProtocolError(f"Protocol error: bad boolean {body[:64]!r}")
    return 1 if body == b"t" else 0


def _double(body: bytes) -> bytes:
    """RESP3 `,` as RESP2 has it: the text, as a bulk string."""
    try:
        float(body)
    except ValueError:
        raise ProtocolError(f"Protocol error: bad double {body[:64]!r}") from None
    return body


def _big_number(body: bytes) -> bytes:
    """RESP3 `(` as RESP2 has it: the digits, as a bulk string."""
    _integer(body)
    return body


def _verbatim(payload: bytes) -> bytes:
    """RESP3 `=` as RESP2 has it: the text without its `txt:` format tag."""
    if payload[3:4] != b":":
        raise ProtocolError("Protocol error: verbatim string without a format")
    return payload[4:]


# type byte -> decoder of its line, of its bulk payload, or the aggregate's element multiplier.
_LINE_TYPES: Final[dict[int, Callable[[bytes], Parsed]]] = {
    ord("+"): lambda body: Status(body.decode("utf-8", "surrogateescape")),
    ord("-"): _error,
    ord(":"): _integer,
    ord("_"): _null,
    ord("#"): _boolean,
    ord(","): _double,
    ord("("): _big_number,
}
_BULK_TYPES: Final[dict[int, Callable[[bytes], Parsed]]] = {
    ord("$"): bytes,
    ord("="): _verbatim,
    ord("!"): _error,
}
_AGGREGATE_TYPES: Final = {ord("*"): 1, ord("~"): 1, ord(">"): 1, ord("%"): 2, ord("|"): 2}
_MAP, _ATTRIBUTE = ord("%"), ord("|")


@dataclass(slots=True)
class _Aggregate:
    """An array, set, push, map or attribute whose elements are still being read."""

    kind: int  # its type byte
    size: int  # how many elements it holds (2 per map pair)
    items: list[Parsed] = field(default_factory=list)  # elements read so far; empty at start


class _Skip(enum.Enum):
    SKIP = "SKIP"  # a finished attribute: metadata about the next reply, dropped


class ReplyParser(_Buffer):
    """Server replies, RESP2 or RESP3, to Reply values; errors become StreamError values.

    RESP3 types map to the RESP2 reply Redis would send: `_` None, `#` 1/0, `,` and `(` their
    text as bytes, `=` its text without the format, `~` and `>` a list, `%` a ReplyMap, `!` a
    StreamError; `|` attributes are dropped. An error inside an aggregate (EXEC) stays a
    StreamError element, a case the Reply type does not model.
    """

    def __init__(
        self,
        max_bulk_len: int = PROTO_MAX_BULK_LEN,
        max_multibulk_len: int = PROTO_MAX_MULTIBULK_LEN,
    ) -> None:
        super().__init__()
        self.max_bulk_len = max_bulk_len  # longest bulk accepted; 512 MiB by default
        self.max_multibulk_len = max_multibulk_len  # most elements per aggregate; INT_MAX
        self._open: list[_Aggregate] = []  # aggregates being read, outermost first; [] between

    def next_reply(self) -> Parsed | NeedMore:
        """The next complete reply, or NEED_MORE; raises ProtocolError."""
        if self._failed is not None:
            raise self._failed
        try:
            return self._next()
        except ProtocolError as e:
            self._failed = e
            raise

    def _next(self) -> Parsed | NeedMore:
        while True:
            value = self._element()
            if value is NEED_MORE:
                return NEED_MORE
            if value is _Skip.SKIP:
                continue  # an aggregate was opened, or an attribute read: read on
            # Hand the value to its aggregate, closing every aggregate it completes.
            while self._open:
                top = self._open[-1]
                top.items.append(value)
                if len(top.items) < top.size:
                    break
                self._open.pop()
                closed = _close(top)
                if closed is _Skip.SKIP:
                    break
                value = closed
            else:
                return value

    def _element(self) -> Parsed | NeedMore | _Skip:
        """One scalar, or an empty aggregate, or SKIP after opening a non-empty one."""
        buf, pos = self._buf, self._pos
        end = buf.find(_CRLF, pos)
        if end < 0:
            return NEED_MORE
        kind, body, after = buf[pos], bytes(buf[pos + 1 : end]), end + 2
        if kind in _BULK_TYPES:
            n = _integer(body)
            if n == -1 and kind == ord("$"):
                self._pos = after
                return None
            if not 0 <= n <= self.max_bulk_len:
                raise ProtocolError("Protocol error: invalid bulk length")
            if after + n + 2 > len(buf):
                return NEED_MORE  # the cursor stays on the header; it is re-read next time
            if buf[after + n : after + n + 2] != _CRLF:
                raise ProtocolError("Protocol error: bulk string not ended by CRLF")
            self._pos = after + n + 2
            return _BULK_TYPES[kind](bytes(buf[after : after + n]))
        self._pos = after
        if kind in _LINE_TYPES:
            return _LINE_TYPES[kind](body)
        if kind not in _AGGREGATE_TYPES:
            raise ProtocolError(f"Protocol error: unknown reply type {_byte_text(kind)!r}")
        n = _integer(body)
        if n == -1 and kind == ord("*"):
            return NULL_ARRAY
        if not 0 <= n <= self.max_multibulk_len:
            raise ProtocolError("Protocol error: invalid multibulk length")
        aggregate = _Aggregate(kind, n * _AGGREGATE_TYPES[kind])
        if n == 0:
            return _close(aggregate)
        self._open.append(aggregate)
        return _Skip.SKIP


def _close(aggregate: _Aggregate) -> Parsed | _Skip:
    items = aggregate.items
    if aggregate.kind == _ATTRIBUTE:
        return _Skip.SKIP
    if aggregate.kind == _MAP:
        return ReplyMap(
            (_map_key(k), cast(Reply, v)) for k, v in zip(items[::2], items[1::2], strict=True)
        )
    return cast(Reply, items)


def _map_key(key: Parsed) -> bytes:
    """ReplyMap keys are bytes; Redis's are bulk or simple strings, sometimes integers."""
    if isinstance(key, bytes):
        return key
    if isinstance(key, str):
        return key.encode("utf-8", "surrogateescape")
    if isinstance(key, int):
        return b"%d" % key
    raise ProtocolError(f"Protocol error: unsupported map key {key!r}")


def decode_reply(data: bytes) -> Parsed:
    """Exactly one reply from `data`; ProtocolError if it is incomplete or followed by more."""
    parser = ReplyParser()
    parser.feed(data)
    reply = parser.next_reply()
    if reply is NEED_MORE:
        raise ProtocolError("Protocol error: incomplete reply")
    if parser.buffered:
        raise ProtocolError("Protocol error: bytes after the reply")
    return reply
