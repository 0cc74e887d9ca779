"""A node's role and its changes in place: the same engine, store, data directory and backlog
serve as a replica, then as a primary (or back), one after the other.

    HostState        the node is
    REPLICA     following a primary (Replica)
    PROMOTING   in between: the link is stopped, the new primary not serving yet
    PRIMARY     taking writes, serving replicas (Primary)
    DEPOSED     a Primary that has seen a newer epoch: no writes, no replicas

    from -> to                       by
    REPLICA -> PROMOTING -> PRIMARY  promote(epoch)
    DEPOSED -> PROMOTING -> PRIMARY  promote(epoch): someone chose this node after all
    PRIMARY -> DEPOSED               a Hello with a higher epoch (Primary.step_down)
    PRIMARY | DEPOSED -> REPLICA     replicaof(address): demotion
    REPLICA -> REPLICA               replicaof(address): re-pointed
    PRIMARY -> PROMOTING -> PRIMARY  promote(higher epoch): re-elected under a new leader key

`Host` is the entry point for whoever decides (the Admin RPCs, an election loop later):
`promote(epoch)` and `replicaof(address)` each run to completion under one lock and return the
node now served; `node` is what the servicers use for every call. Promotion: stop the link,
cut a partial record, take the new epoch (persisted first), a new replid with the followed one
kept as replid2 up to the offset (persisted), then a Primary over the same state; blocked
reads carry over. Demotion: the Primary closes (senders stop, blocked clients get UNBLOCKED,
writes waiting for acks fail), then a Replica over the same state links to the new primary,
which tells it where to cut its log back.
"""

from __future__ import annotations

import asyncio
import enum
from typing import TypeVar

from xstream.engine import Engine, StreamError
from xstream.node import replids, users
from xstream.node.acl import Acl
from xstream.node.backlog import Backlog
from xstream.node.base import Node
from xstream.node.logs import slog
from xstream.node.metrics import METRICS
from xstream.node.pacing import Window
from xstream.node.slices import Limits
from xstream.node.store import Recovery, Store
from xstream.node.tls import Tls
from xstream.primary.primary import Options, Primary
from xstream.protocol import PASSWORD_KEY, USER_KEY
from xstream.replica import link
from xstream.replica.replica import Replica

from .config import NodeConfig

_N = TypeVar("_N", bound=Node)


class HostState(enum.Enum):
    REPLICA = "replica"
    PROMOTING = "promoting"
    PRIMARY = "primary"
    DEPOSED = "deposed"


TRANSITIONS: dict[HostState, frozenset[HostState]] = {
    HostState.REPLICA: frozenset({HostState.PROMOTING, HostState.REPLICA}),
    HostState.PROMOTING: frozenset({HostState.PRIMARY}),
    HostState.PRIMARY: frozenset({HostState.DEPOSED, HostState.REPLICA, HostState.PROMOTING}),
    HostState.DEPOSED: frozenset({HostState.PROMOTING, HostState.REPLICA}),
}


def check_transition(now: HostState, to: HostState) -> None:
    if to not in TRANSITIONS[now]:
        raise ValueError(f"a node in role {now.value} cannot become {to.value}")


def options_of(cfg: NodeConfig) -> Options:
    return Options(
        acks_timeout_ms=cfg.acks_timeout_ms,
        expect_replicas=cfg.expect_replicas,
        min_replicas_to_write=cfg.min_replicas_to_write,
        min_replicas_max_lag=cfg.min_replicas_max_lag,
        snapshot_bytes=cfg.snapshot_bytes,
        replica_forget_after=cfg.replica_forget_after,
        flow=Window(cfg.repl_flow_lag_ms, cfg.repl_flow_timeout_ms),
    )


def limits_of(cfg: NodeConfig) -> Limits:
    return Limits(max_reply_bytes=cfg.max_reply_bytes, proto_max_bulk_len=cfg.proto_max_bulk_len)


def primary_from(cfg: NodeConfig, engine: Engine, store: Store, rec: Recovery) -> Primary:
    """A primary starting on recovered data: a new replid (the previous one kept as replid2 up
    to the recovered offset, PSYNC2) and its epoch (a new cluster takes epoch 1; a node that
    was not the primary of its current epoch starts deposed)."""
    old = replids.load(store.dir)
    ident = {
        "replid": replids.new_replid(),
        "replid2": old.get("replid", ""),
        "replid2_end": rec.offset,
    }
    state = replids.load_epochs(store.dir)
    started = state.started(rec.offset)
    if started != state:
        replids.save_epochs(store.dir, started)
    replids.save(store.dir, ident)
    backlog = Backlog.holding(cfg.backlog_bytes, rec.offset, rec.tail)
    name = cfg.name or f"{cfg.host}:{cfg.port}"
    primary = Primary(engine, store, backlog, ident, name, options_of(cfg), started)
    if started.deposed:
        slog("primary_starts_deposed", level="warning", epoch=started.epoch,
             leader_epoch=started.leader_epoch)  # fmt: skip
    return primary


def replica_from(cfg: NodeConfig, engine: Engine, store: Store, rec: Recovery) -> Replica:
    backlog = Backlog.holding(cfg.backlog_bytes, rec.offset, rec.tail)
    name = cfg.name or f"{cfg.host}:{cfg.port}"
    replica = Replica(
        engine, store, rec.offset, name, "", cfg.primary, cfg.snapshot_bytes, backlog=backlog
    )
    replica.damage = rec.damage
    return replica


class Host:
    def __init__(self, cfg: NodeConfig, node: Primary | Replica, acl: Acl | None = None) -> None:
        self.cfg = cfg
        # The node's users (every edge checks them): one object kept across roles, which
        # users records, snapshots and full syncs change in place (node/users.py).
        self.acl = acl or Acl()
        self.address = ""  # host:port served, once bound
        # Elected by a coordinator: a new primary acknowledges nothing until the coordinator
        # grants it a lease deadline (Primary.lease_until); in manual mode it never lapses.
        self.coordinated = bool(cfg.etcd)
        self._node: Primary | Replica = self._serve(node)
        self._promoting = False
        self._link: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()
        self.tls: Tls | None = None  # the node's TLS material: the link dials with it
        METRICS.offset.set_function(lambda: self.node.offset)  # read at scrape time

    def _link_auth(self) -> tuple[tuple[str, str], ...]:
        """The link's ACL user (--primary-user/--primary-password), as call metadata."""
        cfg = self.cfg
        if not (cfg.primary_user or cfg.primary_password):
            return ()
        return ((USER_KEY, cfg.primary_user or "default"), (PASSWORD_KEY, cfg.primary_password))

    @property
    def node(self) -> Node:
        return self._node

    def _serve(self, node: _N) -> _N:
        """`node`, bound by this host's request limits (every role serves the same)."""
        node.limits = limits_of(self.cfg)
        node.debug_command = self.cfg.enable_debug_command == "yes"
        node.acl = self.acl
        return node

    @property
    def state(self) -> HostState:
        node = self._node
        if self._promoting:
            return HostState.PROMOTING
        if isinstance(node, Replica):
            return HostState.REPLICA
        return HostState.DEPOSED if node.epochs.deposed or node.closed else HostState.PRIMARY

    def start_link(self) -> None:
        assert isinstance(self._node, Replica)
        self._link = asyncio.get_running_loop().create_task(
            link.follow(self._node, self.tls, self._link_auth())
        )

    async def stop(self) -> None:
        """Stop the replica link, if any (shutdown, or a role change): once this returns, the
        replica applies nothing more."""
        if isinstance(self._node, Replica):
            self._node.stop_link()
        link, self._link = self._link, None
        if link is not None:
            link.cancel()
            await asyncio.wait({link}, timeout=5.0)
            if not link.done():  # it can apply nothing more (stop_link): let it wind down
                slog("link_slow_to_stop", level="warning")
            elif not link.cancelled() and link.exception() is not None:
                slog("link_failed", level="error", error=repr(link.exception()))

    # ------------------------------------------------------------ promotion

    async def promote(self, epoch: int = 0) -> Node:
        """Become the primary of `epoch` (0: the highest seen + 1). ValueError if not possible.
        The primary of the current epoch answers unchanged (promote is idempotent)."""
        async with self._lock:
            node = self._node
            if self.state is HostState.PRIMARY and epoch in (0, node.epochs.epoch):
                return node
            check_transition(self.state, HostState.PROMOTING)
            node.epochs.promoted(node.offset, epoch)  # raises ValueError before anything stops
            self._promoting = True
            try:
                await self.stop()
                primary = self._promoted(node, epoch)
            finally:
                self._promoting = False
            self._node = self._serve(primary)
            return primary

    def _promoted(self, node: Primary | Replica, epoch: int) -> Primary:
        node.to_record_boundary()
        offset = node.offset
        state = node.epochs.promoted(offset, epoch)
        replids.save_epochs(node.store.dir, state)
        ident = {"replid": replids.new_replid(), "replid2": node.replid, "replid2_end": offset}
        replids.save(node.store.dir, ident)
        primary = Primary(
            node.engine, node.store, node.backlog, ident, node.name, options_of(self.cfg), state
        )
        primary.health = node.health
        if self.coordinated:
            primary.lease_until = float("-inf")  # until the coordinator allows acks
        node.hand_over(primary)
        slog("promoted", epoch=state.epoch, offset=offset, replid=primary.replid,
             replid2=primary.replid2, backlog_start=primary.backlog.start)  # fmt: skip
        self._own_users_to_data(primary)
        return primary

    def _own_users_to_data(self, primary: Primary) -> None:
        """A node promoted while serving its own config's users (it never synced) logs them:
        a primary's users are data (node/users.py: the base of a history). On a failing
        disk they still serve, from memory, and full syncs carry them."""
        if self.acl.from_data or users.same(self.acl.users, users.builtin()):
            return
        try:
            primary.log_users(users.load_effects(self.acl.users))
        except StreamError as e:
            slog("users_not_logged", level="error", error=e.message)
            return
        slog("users_logged", reason="promoted", users=len(self.acl.users))

    # ------------------------------------------------------------ replica of

    async def replicaof(self, address: str, epoch: int = 0) -> Node:
        """Follow the primary at `address` (demoting this node if it is a primary). `epoch`, if
        given, is that primary's: it is adopted and persisted before anything else happens (on
        a full disk it is adopted anyway, and the link persists the primary's history once it
        syncs: a node that cannot write must still stop acting as a primary)."""
        if not address or address == self.address:
            raise ValueError(f"cannot replicate from {address!r}")
        async with self._lock:
            check_transition(self.state, HostState.REPLICA)
            node = self._node
            if epoch > node.epochs.epoch:
                node.epochs = node.epochs.seen(epoch)  # at once: a deposed primary must stop
                try:
                    replids.save_epochs(node.store.dir, node.epochs)
                except OSError as e:  # a full disk: the link persists it once it syncs
                    slog("epoch_not_persisted", level="warning", epoch=epoch,
                         error=e.strerror or str(e))  # fmt: skip
            await self.stop()
            if isinstance(node, Replica):
                node.primary_address = address
                slog("replica_of", primary=address, offset=node.offset, epoch=node.epochs.epoch)
            else:
                node = self._demoted(node, address)
            self._node = self._serve(node)
            self.start_link()
            return node

    def _demoted(self, primary: Primary, address: str) -> Replica:
        replica = Replica(
            primary.engine,
            primary.store,
            primary.offset,
            primary.name,
            self.address,
            address,
            self.cfg.snapshot_bytes,
            backlog=primary.backlog,
        )
        replica.replid = primary.replid  # the history its data follows
        replica.epochs = primary.epochs
        replica.health = primary.health
        primary.hand_over(replica)
        slog("demoted", primary=address, offset=primary.offset, epoch=primary.epochs.epoch,
             deposed=primary.epochs.deposed)  # fmt: skip
        return replica
