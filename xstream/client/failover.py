"""Failover decisions for the client, sans I/O: what a failed call means, whether to send it
again, which node is the primary, and how long to wait before the next try.

What a failed call means (`classify`):

    Outcome      failure                                   the command
    FAILED       a command error (ERR, WRONGTYPE, NOREPLICAS, ...)   ran, or was refused for good
    REFUSED      READONLY (a replica, a deposed or stale primary,    was not applied; a primary
                 a primary without a valid lease), MISCONF (its      elsewhere, or this one once
                 log cannot take writes: rolled back)                its disk works, may take it
    NOT_SENT     UNAVAILABLE before the call reached a server        was not applied
    UNKNOWN      LEASELOST, ACKTIMEOUT (applied, not confirmed);     may or may not have been
                 UNAVAILABLE after sending, DEADLINE_EXCEEDED,       applied
                 CANCELLED, INTERNAL, UNKNOWN, ABORTED
    BROKEN       any other gRPC status (a client-side problem)       was not run usefully

A write is sent again (`retry_write`) when it was NOT_SENT; when it was REFUSED and the client
fails over (it has a seed list); when its outcome is UNKNOWN and it is repeatable
(idempotence.py: an XADD with IDMP, a read). Never on FAILED or BROKEN. A read moves on to its
next node on NOT_SENT, UNKNOWN transport failures and TRYAGAIN (a replica behind the client's
session offset); failing over, also on a deadline (a paused node).

Finding the primary (`resolve`): every seed's Admin.Info is a `NodeView`. The primary is the
seed reporting role "primary", not deposed, with the highest epoch (then the highest offset).
Only when no seed is one does the address a replica follows count (`follow`): nodes may
advertise names the client cannot reach, so the client adds it to its seeds and asks it too.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass, field

REFUSED_CODES = frozenset({"READONLY", "MISCONF"})  # not applied here: a primary may take it
UNKNOWN_CODES = frozenset({"LEASELOST", "ACKTIMEOUT"})  # applied here, not confirmed
UNKNOWN_STATUSES = frozenset(
    {"UNAVAILABLE", "DEADLINE_EXCEEDED", "CANCELLED", "INTERNAL", "UNKNOWN", "ABORTED"}
)
_NOT_SENT_TEXT = ("failed to connect", "connection refused", "no route", "dns resolution failed")


class Outcome(enum.Enum):
    FAILED = "failed"
    REFUSED = "refused"
    NOT_SENT = "not sent"
    UNKNOWN = "unknown"
    BROKEN = "broken"


@dataclass(frozen=True, slots=True)
class Failure:
    """One failed call, as the client saw it."""

    address: str  # the node called
    status: str  # the gRPC status code's name, e.g. "UNAVAILABLE"
    details: str  # the status details: Redis's error line for a command error
    command_error: bool  # the node answered with a command error (xstream-error: 1)
    offset: int = 0  # the node's offset in the error's trailing metadata (0: none)

    @property
    def line(self) -> str | None:
        """Redis's error line, None for a transport failure."""
        return self.details if self.command_error else None

    @property
    def prefix(self) -> str:
        return self.details.split(" ", 1)[0] if self.command_error else ""


def not_sent(status: str, details: str) -> bool:
    """True when the call certainly never reached a server."""
    text = details.lower()
    return status == "UNAVAILABLE" and any(s in text for s in _NOT_SENT_TEXT)


def classify(f: Failure) -> Outcome:
    if f.command_error:
        if f.prefix in REFUSED_CODES:
            return Outcome.REFUSED
        if f.prefix in UNKNOWN_CODES:
            return Outcome.UNKNOWN
        return Outcome.FAILED
    if not_sent(f.status, f.details):
        return Outcome.NOT_SENT
    if f.status in UNKNOWN_STATUSES:
        return Outcome.UNKNOWN
    return Outcome.BROKEN


def retry_write(outcome: Outcome, *, repeatable: bool, failover: bool) -> bool:
    """Send the write again (after a pause, to the primary of the moment)?"""
    if outcome is Outcome.NOT_SENT:
        return True
    if outcome is Outcome.REFUSED:
        return failover
    if outcome is Outcome.UNKNOWN:
        return repeatable
    return False


def next_node_for_read(f: Failure, *, failover: bool) -> bool:
    """Try the read's next node (a replica behind, or a node out of reach)? A deadline counts
    as out of reach only when failing over (else the read raises TimeoutError)."""
    if f.command_error:
        return f.prefix == "TRYAGAIN"
    if f.status == "DEADLINE_EXCEEDED" and not failover:
        return False
    return classify(f) in (Outcome.NOT_SENT, Outcome.UNKNOWN)


def refused_pipeline(writes: Sequence[bool], errors: Sequence[str | None]) -> bool:
    """A pipeline's in-band replies say nothing was applied: each write command answered
    READONLY (`writes[i]`: command i writes; `errors[i]`: its error line or None)."""
    write_errors = [e for w, e in zip(writes, errors, strict=True) if w]
    return bool(write_errors) and all(
        e is not None and e.split(" ", 1)[0] in REFUSED_CODES for e in write_errors
    )


# ---------------------------------------------------------------- finding the primary


@dataclass(frozen=True, slots=True)
class NodeView:
    """What one seed's Admin.Info said."""

    address: str  # the seed as the client reaches it
    role: str  # "primary" or "replica"
    epoch: int  # the highest epoch the node has seen
    deposed: bool = False  # a primary that knows of a newer epoch
    follows: str = ""  # replica: the primary address it follows ("" when none)
    offset: int = 0


@dataclass(frozen=True, slots=True)
class Discovery:
    primary: str | None  # the seed to write to, None if no seed is a primary
    epoch: int  # the primary's epoch (0 without one)
    offset: int = 0  # the primary's offset (0 without one)
    replicas: list[str] = field(default_factory=list)  # seeds serving as replicas, seed order
    follow: str | None = None  # no primary among the seeds: the address replicas follow


def resolve(views: Sequence[NodeView]) -> Discovery:
    replicas = [v.address for v in views if v.role == "replica"]
    primaries = [v for v in views if v.role == "primary" and not v.deposed]
    if primaries:
        best = max(primaries, key=lambda v: (v.epoch, v.offset))
        return Discovery(best.address, best.epoch, best.offset, replicas)
    followed = [v for v in views if v.role == "replica" and v.follows]
    follow = max(followed, key=lambda v: v.epoch).follows if followed else None
    return Discovery(None, 0, 0, replicas, follow)


# ---------------------------------------------------------------- pacing


class Backoff:
    """Pauses between tries: `first` s doubling up to `cap` s, while tries remain (`tries`:
    at most that many pauses) or until `deadline` (a monotonic time), whichever is given."""

    def __init__(
        self, first: float, cap: float, *, tries: int | None = None, deadline: float | None = None
    ) -> None:
        self.delay = first
        self.cap = cap
        self.tries = tries
        self.deadline = deadline

    def pause(self, now: float) -> float | None:
        """How long to wait before the next try; None: give up."""
        if self.tries is not None:
            if self.tries <= 0:
                return None
            self.tries -= 1
        delay = min(self.delay, self.cap)
        if self.deadline is not None:
            if now >= self.deadline:
                return None
            delay = min(delay, self.deadline - now)
        self.delay = min(self.delay * 2, self.cap)
        return delay
