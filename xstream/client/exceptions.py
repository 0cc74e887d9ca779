"""The client's exceptions, shaped like redis-py's so `except` clauses carry over.

    XstreamError               (alias RedisError, redis-py's name)
    ├── ConnectionError        the node could not be reached / the link broke
    ├── TimeoutError           no answer in time
    ├── DataError              an argument refused client side, before anything is sent
    └── ResponseError          the server answered with an error line
        ├── ReadOnlyError      READONLY: a write reached a replica
        ├── OutOfMemoryError   OOM
        ├── BusyLoadingError   LOADING (also a ConnectionError, as in redis-py)
        ├── NoPermissionError  NOPERM
        ├── TryAgainError      TRYAGAIN
        ├── AckTimeoutError    ACKTIMEOUT: the primary applied the write, but not enough
        │                      replicas acknowledged it in time
        └── LeaseLostError     LEASELOST: the primary applied the write, but its lease lapsed
                               before it was acknowledged; the outcome is unknown

Invariant: `str(error)` of a ResponseError is exactly what redis-py's `str()` gives for the
same error line (redis-py's `parse_error`): for the prefixes redis-py maps (ERR, READONLY,
OOM, ...) the prefix and its space are dropped ("ERR no such key" -> "no such key"); for any
other prefix (WRONGTYPE, NOGROUP, BUSYGROUP, ACKTIMEOUT, LEASELOST, ...) the whole line is
kept. The full line is always available as `.line`, the stripped prefix as `.status_code`
(None if kept).
"""

from __future__ import annotations

__all__ = [
    "AckTimeoutError",
    "BusyLoadingError",
    "ConnectionError",
    "DataError",
    "LeaseLostError",
    "NoPermissionError",
    "OutOfMemoryError",
    "ReadOnlyError",
    "RedisError",
    "ResponseError",
    "TimeoutError",
    "TryAgainError",
    "XstreamError",
    "error_from_line",
]


class XstreamError(Exception):
    """Base of every exception the client raises on purpose (redis-py's RedisError)."""

    def __init__(self, *args: object, status_code: str | None = None) -> None:
        super().__init__(*args)
        self.status_code = status_code


RedisError = XstreamError  # redis-py's name, so `except RedisError` carries over


class ConnectionError(XstreamError):
    """The node could not be reached, or the connection broke mid-call."""


class TimeoutError(XstreamError):
    """The node did not answer in time."""


class DataError(XstreamError):
    """An argument was refused client side (redis-py's DataError, same messages)."""


class ResponseError(XstreamError):
    """The server answered with an error; `.line` is its full error line."""

    def __init__(
        self, *args: object, status_code: str | None = None, line: str | None = None
    ) -> None:
        super().__init__(*args, status_code=status_code)
        if line is None:
            line = str(args[0]) if args else ""
            if status_code is not None:
                line = f"{status_code} {line}"
        self.line = line


class ReadOnlyError(ResponseError):
    """READONLY: a write was sent to a replica."""


class OutOfMemoryError(ResponseError):
    """OOM: the server refused a write for lack of memory."""


class BusyLoadingError(ResponseError, ConnectionError):
    """LOADING: the server is still loading its data set."""


class NoPermissionError(ResponseError):
    """NOPERM: the user may not run this command or touch this key."""


class TryAgainError(ResponseError):
    """TRYAGAIN: the command may succeed if retried."""


class AckTimeoutError(ResponseError):
    """ACKTIMEOUT: the write was applied on the primary but too few replicas acknowledged it
    before the deadline. The write is not rolled back; retrying may apply it twice."""


class LeaseLostError(ResponseError):
    """LEASELOST: the write was applied on a primary whose lease lapsed before it was
    acknowledged: a new primary may or may not have it (the outcome is unknown). Retrying is
    safe only for an idempotent write (XADD with IDMP)."""


# Prefixes redis-py strips from the message (its BaseParser.EXCEPTION_CLASSES keys, the ones a
# stream server can send), with the class each maps to. ERR maps to plain ResponseError.
_STRIPPED: dict[str, type[ResponseError]] = {
    "ERR": ResponseError,
    "OOM": OutOfMemoryError,
    "LOADING": BusyLoadingError,
    "READONLY": ReadOnlyError,
    "NOPERM": NoPermissionError,
    "TRYAGAIN": TryAgainError,
}
# Prefixes redis-py does not know: it keeps the whole line as the message; so do we.
_KEPT: dict[str, type[ResponseError]] = {
    "ACKTIMEOUT": AckTimeoutError,
    "LEASELOST": LeaseLostError,
}


def error_from_line(line: str) -> ResponseError:
    """The exception for a server error line such as "ERR no such key" (no leading `-`)."""
    code = line.split(" ", maxsplit=1)[0]
    cls = _STRIPPED.get(code)
    if cls is not None:
        return cls(line[len(code) + 1 :], status_code=code, line=line)
    return _KEPT.get(code, ResponseError)(line, line=line)
