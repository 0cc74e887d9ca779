"""The coordinator loop: read etcd, decide with the resolver, act on the node. One per node.

    step():  read leader key and status keys -> publish our status -> decide() -> act
    run():   step(); then watch the leader key until the Wait deadline; repeat until stopped

The node is reached only through `NodeControl` (implemented by the node side); etcd only
through `Election`. Invariants:
- A failed etcd read never becomes "no leader": the last leader and peers read are reused,
  so a primary cut off from etcd steps down by its lease deadline, not on one failed read.
- A peer's `heard_at` is when this loop first saw its status key at its current
  mod_revision, i.e. about when the peer last published; `Timing.freshness` should exceed
  the publish interval (one publish per step, steps at most `Timing.poll` apart).
- Our status is published after the read, saying whether that read found no leader key and
  the revision of the last one seen (`leaderless_after`), so peers can tell a status that
  is final for the ranking from one published while the old primary could still ack.
- Actions run in the order the resolver gives (StepDown first); a won campaign is followed by
  an immediate second decision, so promotion does not wait for the next round.
Runs in one thread (the Election's calls block for at most its timeout each).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Protocol

from xstream.coord.etcd import Election, EtcdError, Leader, NodeRecord
from xstream.coord.resolver import (
    Action,
    AllowAcks,
    Campaign,
    Follow,
    NodeStatus,
    Observation,
    Promote,
    RenewLease,
    Resign,
    State,
    StepDown,
    Timing,
    Wait,
    decide,
)

__all__ = ["Coordinator", "NodeControl"]

log = logging.getLogger("xstream.coord")


class NodeControl(Protocol):
    """What the coordinator needs from a node. Calls come from the coordinator thread."""

    def status(self) -> NodeStatus:
        """Name, address, role, epoch, offset, replid now (heard_at unused)."""
        ...

    def step_down(self, reason: str) -> None:
        """Stop acknowledging writes at once; refuse them until told otherwise."""
        ...

    def promote(self, epoch: int) -> None:
        """Become primary at `epoch` (new replid, stamp epoch, reject lower epochs)."""
        ...

    def allow_acks(self, epoch: int, until: float) -> None:
        """As primary at `epoch`, acknowledge writes only while the coordinator clock < until."""
        ...

    def follow(self, address: str, epoch: int) -> None:
        """Replicate from `address`, the primary at `epoch`; report `epoch` from now on."""
        ...


class Coordinator:
    """Drives one node from an Election; `clock` must be the Election's and the node's."""

    def __init__(
        self,
        election: Election,
        node: NodeControl,
        timing: Timing,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.election = election
        self.node = node
        self.timing = timing
        self._clock = clock
        self.state = State()  # the resolver's memory
        self._leader: Leader | None = None  # last leader key read
        self._records: list[NodeRecord] = []  # last status keys read
        self._heard: dict[str, tuple[int, float]] = {}  # name -> (mod_revision, first seen)
        self._last_revision = 0  # create revision of the last leader key read; 0 = none yet

    def step(self) -> float:
        """One round: publish, read, decide, act. The clock time to step again by."""
        self._read()
        me = replace(self.node.status(), leaderless_after=self._leaderless_after())
        self._publish(me)
        return self._decide_and_act(me)

    def run(self, stop: threading.Event) -> None:
        """Step until `stop` is set, watching the leader key between steps."""
        while not stop.is_set():
            until = self.step()
            left = until - self._clock()
            if left > 0 and not stop.is_set():
                try:
                    self.election.observe(left)
                except EtcdError as exc:
                    log.warning("coord observe failed: %s", exc)
                    stop.wait(min(left, self.timing.retry))

    # --- the round's parts -------------------------------------------------------------------

    def _publish(self, me: NodeStatus) -> None:
        try:
            self.election.publish_status(
                me.address,
                me.role,
                me.epoch,
                me.offset,
                me.replid,
                me.leaderless_after,
                me.damaged,
                me.writable,
            )
        except EtcdError as exc:
            log.warning("coord publish failed: %s", exc)

    def _read(self) -> None:
        try:
            self._leader = self.election.leader()
            self._records = self.election.nodes()
        except EtcdError as exc:
            log.warning("coord read failed, deciding on the last read: %s", exc)
        if self._leader is not None:
            self._last_revision = self._leader.revision
        now = self._clock()
        for r in self._records:
            seen = self._heard.get(r.name)
            if seen is None or seen[0] != r.mod_revision:
                self._heard[r.name] = (r.mod_revision, now)

    def _leaderless_after(self) -> int:
        return -1 if self._leader is not None else self._last_revision

    def _observation(self, me: NodeStatus) -> Observation:
        peers = tuple(r.status(self._heard[r.name][1]) for r in self._records if r.name != me.name)
        leader = self._leader.key() if self._leader is not None else None
        return Observation(self._clock(), me, self.election.lease(), leader, peers)

    def _decide_and_act(self, me: NodeStatus) -> float:
        decision = decide(self.state, self._observation(me), self.timing)
        self.state = decision.state
        for action in decision.actions:
            if isinstance(action, Wait):
                return action.until
            if self._act(action, me):
                return self._decide_and_act(self.node.status())  # we won: promote now
        raise AssertionError("a decision always ends with Wait")

    def _act(self, action: Action, me: NodeStatus) -> bool:
        """Carry out one action; True if a campaign was won (decide again at once)."""
        try:
            match action:
                case StepDown(reason):
                    log.warning("coord step down: %s", reason)
                    self.node.step_down(reason)
                case Resign():
                    self._leader = None  # forgotten whether or not the delete arrives
                    self.election.resign()
                case Follow(address, epoch):
                    log.debug("coord follow %s at epoch %d", address, epoch)  # roles logs changes
                    self.node.follow(address, epoch)
                case Campaign():
                    won = self.election.campaign(me.address)
                    if won is not None:
                        self._leader = self.election.leader()
                        return True
                case Promote(epoch):
                    log.warning("coord promote at epoch %d", epoch)
                    self.node.promote(epoch)
                case AllowAcks(epoch, until):
                    self.node.allow_acks(epoch, until)
                case RenewLease():
                    self.election.keepalive()
        except EtcdError as exc:
            log.warning("coord %s failed: %s", type(action).__name__, exc)
        return False
