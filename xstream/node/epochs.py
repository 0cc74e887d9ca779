"""Epochs (terms) and the epoch history: which primary wrote which part of the stream.

An epoch only grows. A promotion takes an epoch above every epoch the promoted node has seen,
and that node writes under it. A node's *history* is Kafka's leader-epoch cache: entries
(epoch, start), epochs strictly increasing and starts never decreasing, where `start` is the
offset at which that epoch's primary began writing. Bytes [start_i, start_i+1) were written
by epoch i's primary; a range may be empty (a primary that wrote nothing). Offsets before the
first entry belong to epoch 0 (data written before epochs existed). Entries at or past a
node's log end describe bytes it does not hold (a replica adopts its primary's whole
history) and are ignored wherever a history is read against an end offset.

The one fact the rest rests on: an epoch has a single writer, so two logs that put the same
epoch at an offset hold the same byte there. Where two logs stop agreeing is therefore found
from their histories alone (Kafka's OffsetsForLeaderEpoch, iterated as in KIP-279).

    EpochState(epoch, leader_epoch, history)
      epoch         the highest epoch seen (Raft's currentTerm), persisted; 0 = none yet
      leader_epoch  the epoch this node was primary in (0 = never); a primary whose
                    leader_epoch < epoch has seen a newer primary: it is deposed

Pure functions and values only (no I/O): nodes call them, tests/unit/test_epochs.py checks them.
"""

from __future__ import annotations

import enum
from bisect import bisect_right
from collections.abc import Iterable
from dataclasses import dataclass, replace
from itertools import pairwise


@dataclass(frozen=True)
class Entry:
    epoch: int  # the epoch (> 0)
    start: int  # the offset where its primary began writing


History = tuple[Entry, ...]


def history_of(pairs: Iterable[tuple[int, int]]) -> History:
    """A validated history from (epoch, start) pairs (e.g. loaded from JSON or a message)."""
    out = tuple(Entry(int(e), int(s)) for e, s in pairs)
    for a, b in pairwise(out):
        if not (a.epoch < b.epoch and a.start <= b.start):
            raise ValueError(f"not an epoch history: {a} then {b}")
    return out


def clip(history: History, end: int) -> History:
    """The entries that describe bytes a log ending at `end` holds (or starts there)."""
    return tuple(e for e in history if e.start <= end)


def epoch_at(history: History, offset: int) -> int:
    """The epoch that wrote the byte at `offset` (0 before the first entry)."""
    i = bisect_right([e.start for e in history], offset)
    return history[i - 1].epoch if i else 0


def end_offset_for(history: History, end: int, epoch: int) -> tuple[int, int]:
    """Kafka's OffsetsForLeaderEpoch: (the largest epoch <= `epoch` in this log, the offset
    where that epoch ends in it: the next entry's start, or the log's `end`)."""
    found, stop = 0, end
    for i, e in enumerate(history):
        if e.epoch > epoch or e.start > end:
            break
        found = e.epoch
        stop = min(history[i + 1].start, end) if i + 1 < len(history) else end
    if found == 0:  # only epoch 0 (pre-epoch bytes) is <= `epoch`: it ends at the first entry
        stop = min(history[0].start, end) if history else end
    return found, stop


def truncation_point(leader: History, leader_end: int, follower: History, end: int) -> int:
    """Where a follower's log (history `follower`, ending at `end`) stops being a prefix of the
    leader's: the follower truncates to this offset, then continues from the leader.

    Each step asks the leader for the end of the follower's last epoch E (as the follower
    would, with OffsetsForLeaderEpoch) and cuts to the smaller of that and the follower's own
    end of the epoch the leader answered; it repeats until nothing changes (KIP-279)."""
    while end > 0:
        last = epoch_at(follower, end - 1)
        found, leader_stop = end_offset_for(leader, leader_end, last)
        _, own_stop = end_offset_for(follower, end, found)
        cut = min(end, leader_stop, own_stop)
        if cut == end:
            return end
        end = cut
    return 0


# ---------------------------------------------------------------- a node's epoch state


@dataclass(frozen=True)
class EpochState:
    epoch: int = 0  # the highest epoch seen; 0 = none yet
    leader_epoch: int = 0  # the epoch this node was (or is) primary in; 0 = never
    history: History = ()  # the epoch history of this node's log

    @property
    def deposed(self) -> bool:
        """As a primary: a newer epoch exists, so this node must take no writes."""
        return self.leader_epoch < self.epoch

    def promoted(self, end: int, requested: int = 0) -> EpochState:
        """This node becomes the primary of a new epoch, writing from `end`.

        `requested` 0 takes the next epoch; an explicit one must be above every epoch seen."""
        epoch = requested or self.epoch + 1
        if epoch <= self.epoch:
            raise ValueError(f"epoch {epoch} is not above the current epoch {self.epoch}")
        return EpochState(epoch, epoch, (*clip(self.history, end), Entry(epoch, end)))

    def started(self, end: int) -> EpochState:
        """A primary starting on its data: it keeps its epoch (a restart), or takes epoch 1 when
        it has none (a new cluster). A node that was not the primary of its current epoch
        starts deposed: it must be promoted to take writes."""
        if self.epoch == 0:
            return EpochState(1, 1, (Entry(1, end),))
        return self

    def seen(self, epoch: int) -> EpochState:
        """A higher epoch was seen (a Hello from a replica of a newer primary)."""
        return replace(self, epoch=epoch) if epoch > self.epoch else self

    def adopted(self, epoch: int, history: History) -> EpochState:
        """As a replica: follow a primary of `epoch`, whose history now describes our log."""
        return replace(self, epoch=max(self.epoch, epoch), history=history)


# ---------------------------------------------------------------- decisions


def accepts_primary(own_epoch: int, primary_epoch: int) -> bool:
    """A replica follows a primary (Continue, FullSync, Records, Ping) only from an epoch at
    least its own: anything else comes from a deposed primary."""
    return primary_epoch >= own_epoch


class HelloVerdict(enum.Enum):
    SERVE = "serve"  # sync this replica
    STEP_DOWN = "step_down"  # the replica has seen a newer epoch: this primary is deposed
    REFUSE = "refuse"  # this primary was already deposed: it serves no replica


def on_hello(state: EpochState, hello_epoch: int) -> HelloVerdict:
    if hello_epoch > state.epoch:
        return HelloVerdict.STEP_DOWN
    if state.deposed:
        return HelloVerdict.REFUSE
    return HelloVerdict.SERVE


def client_ahead(state: EpochState, client_epoch: int) -> bool:
    """The client has seen a newer epoch than this node (`xstream-epoch`; 0 = not sent): as a
    primary, this node is stale and refuses the client's writes. (A primary takes no writes
    either once deposed: EpochState.deposed.)"""
    return client_epoch > state.epoch
