"""The history of a drill: every operation a writer invoked, and how it ended (Jepsen's model).

    history = History()
    op = history.invoke("w1", "drill", "w1-7", acks="quorum")     # invoke_time stamped
    history.complete(op, Outcome.OK, node="n2", epoch=5, id="1700000000000-0")

    Outcome   the op was
    OK        applied and acknowledged at its acks level (an ID came back)
    FAILED    certainly not applied: READONLY, NOREPLICAS, MISCONF, or the call never left
              the host
    UNKNOWN   maybe applied: LEASELOST, ACKTIMEOUT, a deadline, a call broken mid-way

An op is invoked once and completes once, however many attempts it took (a writer retries
with the same IDMP pair, so a retry never appends twice): OK if an attempt was, else UNKNOWN
if any attempt may have applied, else FAILED (`Attempts.outcome`).

Invariants: times are `time.monotonic()` of this process (one clock for every writer); a
value ("<process>-<seq>") is unique over a history; an op's fields other than its outcome,
times, node, epoch, id and error are fixed at invoke; ops are kept in invoke order. The lock
guards the list and each completion, so `ops()` is a consistent snapshot.
"""

from __future__ import annotations

import enum
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field


class Outcome(enum.Enum):
    OK = "ok"
    FAILED = "failed"
    UNKNOWN = "unknown"


# Error prefixes after which the write was certainly not applied; any other error may have
# applied it (LEASELOST and ACKTIMEOUT say so outright). MISCONF is a node whose disk failed
# or is below its reserve: the write is refused before it is applied, or rolled back with the
# state before it is visible or shipped (README: "Disk full, I/O errors").
# WARNING: xstream/client/failover.py's REFUSED_CODES makes the same call for the client.
NOT_APPLIED = ("READONLY", "NOREPLICAS", "MISCONF")


def outcome_of_error(line: str) -> Outcome:
    """FAILED for a Redis error line that means "not applied", else UNKNOWN."""
    return Outcome.FAILED if line.startswith(NOT_APPLIED) else Outcome.UNKNOWN


@dataclass
class Op:
    process: str  # the writer ("w1", "pinned", ...); also its IDMP producer ID
    seq: int  # 1, 2, ... per process; the IDMP idempotent ID
    key: str  # the stream written
    value: str  # unique over the history: f"{process}-{seq}"
    kind: str = "xadd"  # only xadd ops are checked against streams
    acks: str = "quorum"  # the write concern: leader, quorum or all
    invoke_time: float = 0.0  # monotonic, when the first attempt was sent
    complete_time: float | None = None  # monotonic, when the outcome was known; None: pending
    outcome: Outcome | None = None  # None while pending
    node: str = ""  # the node that gave the final answer ("" if none did)
    epoch: int = 0  # that node's epoch, from the reply's trailer (0: unknown)
    id: str = ""  # the entry ID an OK xadd returned
    error: str = ""  # the last error text, if any attempt failed
    attempts: int = 0  # calls sent (retries with the same IDMP pair included)

    @property
    def ok(self) -> bool:
        return self.outcome is Outcome.OK

    @property
    def quorum(self) -> bool:
        """Acknowledged (if OK) by a majority: its loss is a failure, not a report."""
        return self.acks in ("quorum", "all")


@dataclass
class Attempts:
    """The attempts of one op so far, folded into its outcome."""

    applied: bool = False  # an attempt answered OK
    maybe: bool = False  # an attempt may have applied
    count: int = 0
    errors: list[str] = field(default_factory=list)

    def add(self, outcome: Outcome, error: str = "") -> None:
        self.count += 1
        self.applied |= outcome is Outcome.OK
        self.maybe |= outcome is Outcome.UNKNOWN
        if error:
            self.errors.append(error)

    @property
    def outcome(self) -> Outcome:
        if self.applied:
            return Outcome.OK
        return Outcome.UNKNOWN if self.maybe else Outcome.FAILED


class History:
    """Thread-safe: writers invoke and complete ops concurrently."""

    def __init__(self, ops: Iterable[Op] = ()) -> None:
        self._ops: list[Op] = list(ops)  # in invoke order
        self._lock = threading.Lock()

    def invoke(
        self, process: str, key: str, value: str, *, seq: int, acks: str, kind: str = "xadd"
    ) -> Op:
        op = Op(process, seq, key, value, kind, acks, invoke_time=time.monotonic())
        with self._lock:
            self._ops.append(op)
        return op

    def complete(
        self,
        op: Op,
        outcome: Outcome,
        *,
        node: str = "",
        epoch: int = 0,
        id: str = "",
        error: str = "",
        attempts: int = 1,
    ) -> None:
        assert op.outcome is None, f"op {op.value} completed twice"
        with self._lock:
            op.complete_time = time.monotonic()
            op.outcome, op.node, op.epoch, op.id = outcome, node, epoch, id
            op.error, op.attempts = error, attempts

    def ops(self, key: str | None = None, kind: str | None = None) -> list[Op]:
        """A snapshot of the ops (of one key and kind, if given), in invoke order."""
        with self._lock:
            ops = list(self._ops)
        return [o for o in ops if (key is None or o.key == key) and (kind in (None, o.kind))]

    def counts(self, key: str | None = None) -> dict[str, int]:
        """Ops per outcome ("pending" for those not completed)."""
        out = {o.value: 0 for o in Outcome} | {"pending": 0}
        for op in self.ops(key):
            out[op.outcome.value if op.outcome else "pending"] += 1
        return out

    def first_ok(self, after: float, *, quorum: bool = True, not_node: str = "") -> Op | None:
        """The OK op that completed first after monotonic `after` (quorum-acked if asked),
        answered by a known node other than `not_node`: a recovery's end."""
        done = [
            o
            for o in self.ops()
            if o.ok
            and o.complete_time is not None
            and o.complete_time > after
            and (o.quorum or not quorum)
            and o.node not in ("", not_node)
        ]
        return min(done, key=lambda o: o.complete_time or 0.0, default=None)
