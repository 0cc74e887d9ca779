"""The node's own refusals: Redis-style error lines for what the server, not the engine, says.

Each is a StreamError (engine/errors.py) with a fixed prefix, so every edge maps it like any
command error (gRPC status + the line, a RESP `-` line), and code can catch a kind by class:

    class               prefix      when
    ReadOnlyError       READONLY    a replica, a deposed or stale primary, one without a lease,
                                    one behind its replica: the write was not applied
    MisconfError        MISCONF     the log cannot be written: the write was not applied
    NoReplicasError     NOREPLICAS  min-replicas-to-write not met: not applied
    TryAgainError       TRYAGAIN    a replica behind the client's session offset
    UnblockedError      UNBLOCKED   a blocked read ended by a role change
    AckTimeoutError     ACKTIMEOUT  applied on the primary, too few replica acks in time
    LeaseLostError      LEASELOST   applied, but the primary's lease lapsed before the acks
"""

from __future__ import annotations

from typing import ClassVar

from xstream.engine.errors import StreamError


class RefusalError(StreamError):
    """A StreamError whose prefix is its class's."""

    PREFIX: ClassVar[str] = "ERR"

    def __init__(self, message: str) -> None:
        super().__init__(message, self.PREFIX)


class ReadOnlyError(RefusalError):
    PREFIX = "READONLY"


class MisconfError(RefusalError):
    PREFIX = "MISCONF"


class NoReplicasError(RefusalError):
    PREFIX = "NOREPLICAS"


class TryAgainError(RefusalError):
    PREFIX = "TRYAGAIN"


class UnblockedError(RefusalError):
    PREFIX = "UNBLOCKED"


class AckTimeoutError(RefusalError):
    PREFIX = "ACKTIMEOUT"


class LeaseLostError(RefusalError):
    PREFIX = "LEASELOST"
