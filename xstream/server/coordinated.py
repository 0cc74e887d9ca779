"""A node under automatic failover: the etcd coordinator (xstream/coord) driving a `Host`.

    coordinator thread                          event loop (the node's single writer)
    ------------------                          ---------------------------------------
    Coordinator.run(stop)
      status()      -- reads plain attributes ----> Host.node (offset, epochs, role)
      step_down()   -- lease_until = -inf --------> Primary refuses and stops acking at once
      allow_acks()  -- lease_until = until -------> Primary acks while monotonic() < until
      promote()     -- run_coroutine_threadsafe --> Host.promote(epoch)
      follow()      -- run_coroutine_threadsafe --> Host.replicaof(address, epoch)

Invariants:
- The ack gate is a single float on the Primary (`lease_until`), written by the coordinator
  thread and read by the write path on the loop; a float store is atomic under the GIL, so a
  step-down takes effect for the very next check, without a loop round trip.
- A newly promoted primary starts with `lease_until = -inf` (Host.coordinated): it
  acknowledges nothing until the coordinator has granted a deadline for its epoch.
- `allow_acks(epoch, until)` applies only to a primary whose epoch is `epoch`; a late call for
  an older epoch is ignored.
- Reported epoch, for ranking candidates (`outranks`): the epoch of the last entry of the
  node's epoch history that its log reaches, i.e. whose primary's history its data is a
  prefix of (Raft's last log term). A deposed primary that has not yet cut back its diverged
  tail reports its own old epoch, never the newer one it has merely heard of, so it cannot
  outrank a node holding the newer epoch's data.
- Clocks: the coordinator, its Election and the Primary all use time.monotonic.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any

from xstream.coord.coordinator import Coordinator
from xstream.coord.etcd import Election
from xstream.coord.resolver import NodeStatus, Role, Timing
from xstream.node import epochs
from xstream.node.logs import slog
from xstream.primary.primary import Primary
from xstream.replica.replica import Replica

from .host import Host, HostState

ROLE_CHANGE_TIMEOUT = 30.0  # seconds a promotion or a re-pointing may take on the loop


def log_epoch(history: epochs.History, offset: int) -> int:
    """The epoch of the newest history entry that a log ending at `offset` reaches."""
    reached = epochs.clip(history, offset)
    return reached[-1].epoch if reached else 0


class HostControl:
    """`NodeControl` for a Host: called from the coordinator thread."""

    def __init__(self, host: Host, loop: asyncio.AbstractEventLoop, name: str) -> None:
        self.host = host
        self.loop = loop
        self.name = name
        self.stepped_down = False  # a StepDown since the last AllowAcks

    def status(self) -> NodeStatus:
        host = self.host
        node = host.node
        state = host.state
        if state is HostState.PRIMARY and not self.stepped_down:
            reported = Role.PRIMARY
        elif state is HostState.REPLICA and isinstance(node, Replica) and node.primary_address:
            reported = Role.REPLICA
        else:
            reported = Role.UNKNOWN
        assert isinstance(node, Primary | Replica)
        epoch = log_epoch(node.epochs.history, node.offset)
        damaged = isinstance(node, Replica) and node.damage is not None
        store = node.store
        writable = not store.fault and store.free_bytes >= store.reserve_bytes
        return NodeStatus(
            self.name,
            host.address,
            reported,
            epoch,
            node.offset,
            node.replid,
            damaged=damaged,
            writable=writable,
        )

    def step_down(self, reason: str) -> None:
        node = self.host.node
        self.stepped_down = True
        if isinstance(node, Primary):
            node.lease_until = float("-inf")
            slog("lease_step_down", level="warning", reason=reason, epoch=node.epochs.epoch)

    def allow_acks(self, epoch: int, until: float) -> None:
        node = self.host.node
        if isinstance(node, Primary) and node.epochs.epoch == epoch and not node.closed:
            node.lease_until = until
            self.stepped_down = False

    def promote(self, epoch: int) -> None:
        node = self.host.node
        if isinstance(node, Primary) and node.epochs.epoch == epoch and not node.closed:
            return
        self._on_loop(self.host.promote(epoch))

    def follow(self, address: str, epoch: int) -> None:
        node = self.host.node
        if (
            isinstance(node, Replica)
            and node.primary_address == address
            and node.linked
            and node.epochs.epoch >= epoch
        ):
            return  # already following it: the link adopts its history once it connects
        self.stepped_down = False
        self._on_loop(self.host.replicaof(address, epoch))

    def _on_loop(self, coro: Coroutine[Any, Any, Any]) -> None:
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        future.result(ROLE_CHANGE_TIMEOUT)


class Coordinated:
    """The coordinator thread of one node: started with the node, stopped before it."""

    def __init__(self, host: Host, loop: asyncio.AbstractEventLoop) -> None:
        cfg = host.cfg
        name = cfg.name or host.address
        tls = host.tls.client_context if host.tls is not None else None
        self.election = Election(list(cfg.etcd), cfg.etcd_prefix, name, cfg.lease_ttl, tls=tls)
        self.control = HostControl(host, loop, name)
        self.coordinator = Coordinator(self.election, self.control, Timing())
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="xstream-coord", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        cfg = self.control.host.cfg
        slog("coordinator_started", name=self.control.name, etcd=",".join(cfg.etcd),
             prefix=cfg.etcd_prefix, lease_ttl=cfg.lease_ttl)  # fmt: skip
        while not self._stop.is_set():
            try:
                self.coordinator.run(self._stop)
            except Exception as e:  # never let the thread die: the node would be unled
                slog("coordinator_error", level="error", error=repr(e))
                self._stop.wait(0.5)

    def stop(self) -> None:
        """Stop deciding; a primary stops acknowledging and frees the leader key at once, so
        a successor need not wait for the lease to expire (a graceful shutdown). The key is
        freed before the thread is joined: a fresh campaign by this thread would first wait
        `Timing.settle`, by which time it has seen the stop."""
        self._stop.set()
        self.control.step_down("shutting down")
        try:
            self.election.resign()
            self._thread.join(timeout=5.0)
            self.election.close()  # revokes the lease: our status key goes too
        except Exception as e:  # etcd unreachable: the lease expires on its own
            slog("coordinator_resign_failed", level="warning", error=repr(e))
