"""Failover decisions: a pure resolver from one observation to the transitions it calls for.

The coordinator loop on each node (see `xstream/coord/etcd.py` for the I/O) reads the leader
key, the peers' status keys and its own lease, then calls `decide(state, observation, timing)`
and carries out the actions it returns, in order. Nothing here reads a clock, a socket or a
random source: time enters as `Observation.now`, seconds on the node's monotonic clock.
`State` is the little the resolver remembers between calls; the caller threads it through.

    Observation --decide()--> Decision(state, actions)
    actions, in this order when present:
      StepDown   stop acknowledging writes now (a primary that lost its right to be one)
      Resign     delete our own leader key (we hold it but may not use it)
      Follow     replicate from the leader key's holder at its epoch
      Campaign   try to create the leader key under our lease
      Promote    become primary at epoch = the leader key's create revision
      AllowAcks  a primary may acknowledge writes while its clock reads < `until`
      RenewLease refresh (or obtain) this node's lease
      Wait       call decide() again no later than `until` (or sooner, on a watch event)

Invariants (property-tested in tests/unit/test_resolver.py):
- Ack safety. `AllowAcks.until` is `lease.sent_at + lease.ttl - timing.drift_margin`, where
  `sent_at` is when the *request* of the last successful grant/keepalive was sent. etcd
  expires the lease no earlier than that request's arrival + ttl, so the node stops acking
  before any other node can win the key, provided clocks drift less than `drift_margin`
  over one ttl. A primary past that deadline steps down; renewals that fail never move it.
- One leader per epoch. `Promote(epoch)` is emitted only when the leader key (whose create
  revision is the epoch) is bound to this node's own lease and that lease is still safe; etcd
  creates a key at one revision once, so two nodes never promote at the same epoch.
- Higher epoch wins. A primary that sees the leader key held by another node, or a live
  peer reporting itself primary at a higher epoch, steps down and (if there is a key) follows.
- Most up-to-date wins. With no leader key, a node ranks itself against live peers by
  (epoch, offset), ties broken by the smaller name. A node with k better live peers campaigns
  `settle + k * grace` after it first saw no leader: `settle` lets every live node republish
  its final offset, then the best campaigns, and the next only if the best did not win in
  time.
- Settled early. When every live peer's status was published while it, too, saw no leader
  key after the same last leader revision as this node (`leaderless_after`), those offsets
  are final for the ranking (a write acked by a replica before the old primary's lease
  deadline is in that replica's offset at any later publish), so `settle` is skipped:
  `k * grace` only. Until then the node decides again every `retry` to see them republish.
  With no live peer at all, or before any leader key was seen (a cluster starting), nothing
  is settled early: peers may not have published yet.
- Damaged and unwritable nodes stand aside. A node started on damaged data never campaigns
  until it has synced (its log may lack acknowledged records). A primary whose log cannot take
  writes (a full or failing disk) steps down and resigns once a live, writable, undamaged
  replica holds all of its log (same epoch, offset at least its own), so the handover loses
  nothing; an unwritable node campaigns only when no writable peer could.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace

__all__ = [
    "Action",
    "AllowAcks",
    "Campaign",
    "Decision",
    "Follow",
    "LeaderKey",
    "Lease",
    "NodeStatus",
    "Observation",
    "Promote",
    "RenewLease",
    "Resign",
    "Role",
    "State",
    "StepDown",
    "Timing",
    "Wait",
    "ack_deadline",
    "decide",
    "outranks",
]


class Role(enum.Enum):
    """What a node says it is, as published in its status key."""

    PRIMARY = "primary"
    REPLICA = "replica"
    UNKNOWN = "unknown"  # starting, stepped down, or not yet told whom to follow


@dataclass(frozen=True, slots=True)
class NodeStatus:
    """One node as seen by the observer (its own state, or a peer's status key)."""

    name: str  # unique, stable node name; never ""
    address: str  # host:port that clients and replicas dial
    role: Role
    epoch: int  # leader revision of the history its data belongs to; 0 = none yet
    offset: int  # replication offset reached in that history; 0 = empty
    replid: str  # replication id of that history; "" = unknown
    heard_at: float = 0.0  # observer's clock when this status was last read; unused for self
    # Published while its publisher saw no leader key, the last one it had seen having had this
    # create revision (0: none ever); -1: it saw a leader key. See "Settled" above.
    leaderless_after: int = -1
    # Started on damaged data and not yet synced from a primary since: its log may lack
    # acknowledged records that lay past the damage, so it never campaigns (store damage.py).
    damaged: bool = False
    # Its log takes writes: no disk fault, free space above the reserve (store.py). A primary
    # that cannot write hands over to a replica that has all of its log and can.
    writable: bool = True


@dataclass(frozen=True, slots=True)
class LeaderKey:
    """The leader key as read from etcd."""

    holder: str  # node name stored in the key
    address: str  # the holder's address stored in the key
    revision: int  # create revision of the key: the fencing epoch, > 0
    lease: int  # id of the etcd lease the key is bound to


@dataclass(frozen=True, slots=True)
class Lease:
    """This node's etcd lease, as of its last successful grant or keepalive."""

    id: int  # etcd lease id
    ttl: float  # seconds granted by etcd
    sent_at: float  # node clock when the request of that grant/keepalive was SENT


@dataclass(frozen=True, slots=True)
class Timing:
    """Knobs, in seconds (offsets in bytes). Defaults suit ttl = 2 s on one LAN."""

    drift_margin: float = 0.25  # subtracted from the lease: clock drift + pause slack
    renew_fraction: float = 1 / 3  # renew once this fraction of the ttl has passed
    retry: float = 0.1  # while a renewal is overdue, retry this often
    freshness: float = 5.0  # a peer status read longer ago than this is not live
    settle: float = 0.5  # leaderless this long before anyone campaigns: peers republish
    grace: float = 1.0  # per better-ranked live peer, wait this long more before campaigning
    poll: float = 1.0  # longest wait between two decisions
    max_lag: int | None = None  # campaign only within this many bytes of the last primary


@dataclass(frozen=True, slots=True)
class Observation:
    """Everything one decision looks at, read just before `now`.

    The caller may pass the last successful read when a read fails, with one exception:
    after acting on `Resign` it must not report that key again (pass None until it reads
    etcd anew), since a valid lease no longer implies that the key bound to it exists.
    """

    now: float  # node clock (monotonic seconds) at this decision
    me: NodeStatus  # this node's own state
    lease: Lease | None  # None: no lease, or etcd said it is gone
    leader: LeaderKey | None  # None: no leader key; see the contract below
    peers: tuple[NodeStatus, ...] = ()  # other nodes' status keys; our own name is ignored


@dataclass(frozen=True, slots=True)
class State:
    """What the resolver remembers between decisions; start from `State()`."""

    leaderless_since: float | None = None  # first `now` of the current run without a leader
    last_primary: tuple[int, int] | None = None  # max (epoch, offset) heard from a primary


# --- actions ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StepDown:
    """Stop acknowledging writes at once; become a non-primary (role unknown)."""

    reason: str


@dataclass(frozen=True, slots=True)
class Resign:
    """Delete our own leader key (guarded by its revision) so others can campaign."""


@dataclass(frozen=True, slots=True)
class Follow:
    """Replicate from `address`; report `epoch` as this node's epoch from now on."""

    address: str
    epoch: int


@dataclass(frozen=True, slots=True)
class Campaign:
    """Try to create the leader key under our lease (one etcd txn)."""


@dataclass(frozen=True, slots=True)
class Promote:
    """Become primary at `epoch` (stamp it on replication, reject lower epochs)."""

    epoch: int


@dataclass(frozen=True, slots=True)
class AllowAcks:
    """As primary at `epoch`, acknowledge writes only while the node clock is < `until`."""

    epoch: int
    until: float


@dataclass(frozen=True, slots=True)
class RenewLease:
    """Send a keepalive for our lease (or grant one if we have none)."""


@dataclass(frozen=True, slots=True)
class Wait:
    """Decide again no later than `until` (node clock)."""

    until: float


Action = StepDown | Resign | Follow | Campaign | Promote | AllowAcks | RenewLease | Wait


@dataclass(frozen=True, slots=True)
class Decision:
    state: State  # pass to the next decide()
    actions: tuple[Action, ...]  # carry out in order; the last is always a Wait


# --- rules -----------------------------------------------------------------------------------


def ack_deadline(lease: Lease | None, timing: Timing) -> float:
    """The node clock time after which a holder of `lease` must not acknowledge writes."""
    if lease is None:
        return float("-inf")
    return lease.sent_at + lease.ttl - timing.drift_margin


def outranks(a: NodeStatus, b: NodeStatus) -> bool:
    """Is `a` the better failover candidate: higher (epoch, offset), then the smaller name?"""
    if (a.epoch, a.offset) != (b.epoch, b.offset):
        return (a.epoch, a.offset) > (b.epoch, b.offset)
    return a.name < b.name


def decide(state: State, obs: Observation, timing: Timing) -> Decision:
    """Decide this node's transitions for one observation. Pure: same input, same output."""
    state = _remember(state, obs, timing)
    actions: list[Action] = []
    wakes = [obs.now + timing.poll]
    _roles(state, obs, timing, actions, wakes)
    if _renewal_due(obs, timing):
        actions.append(RenewLease())
        wakes.append(obs.now + timing.retry)
    elif obs.lease is not None:
        wakes.append(obs.lease.sent_at + obs.lease.ttl * timing.renew_fraction)
    actions.append(Wait(min(w for w in wakes if w > obs.now)))  # now + poll is always there
    return Decision(state, tuple(actions))


def _roles(
    state: State, obs: Observation, timing: Timing, actions: list[Action], wakes: list[float]
) -> None:
    """The role transitions: keep leading, step down, promote, follow or campaign."""
    role = obs.me.role
    if role is Role.PRIMARY:
        fault = _primary_fault(obs, timing)
        if fault is None:
            assert obs.leader is not None
            until = ack_deadline(obs.lease, timing)
            if obs.leader.revision != obs.me.epoch:
                actions.append(Promote(obs.leader.revision))  # the key is the authority
            actions.append(AllowAcks(obs.leader.revision, until))
            wakes.append(until)
            return
        actions.append(StepDown(fault))
        if _holds_key(obs):
            actions.append(Resign())  # our key, but we may not use it: free it
            return
        role = Role.UNKNOWN
    if obs.leader is None:
        wakes.extend(_leaderless(state, obs, timing, actions))
    else:
        _with_leader(obs, timing, role, actions)


def _remember(state: State, obs: Observation, timing: Timing) -> State:
    """Track when the leader key went missing and the furthest primary position heard."""
    since = state.leaderless_since
    if obs.leader is not None:
        since = None
    elif since is None:
        since = obs.now
    last = state.last_primary
    for node in (obs.me, *_live_peers(obs, timing)):
        if node.role is Role.PRIMARY and (last is None or (node.epoch, node.offset) > last):
            last = (node.epoch, node.offset)
    return replace(state, leaderless_since=since, last_primary=last)


def _renewal_due(obs: Observation, timing: Timing) -> bool:
    lease = obs.lease
    return lease is None or obs.now >= lease.sent_at + lease.ttl * timing.renew_fraction


def _holds_key(obs: Observation) -> bool:
    """Is the leader key bound to this node's current lease?"""
    return obs.leader is not None and obs.lease is not None and obs.leader.lease == obs.lease.id


def _live_peers(obs: Observation, timing: Timing) -> list[NodeStatus]:
    return [
        p for p in obs.peers if p.name != obs.me.name and obs.now - p.heard_at <= timing.freshness
    ]


def _primary_fault(obs: Observation, timing: Timing) -> str | None:
    """Why this primary must step down, or None if it may keep acknowledging writes."""
    leader, me = obs.leader, obs.me
    if obs.lease is None:
        return "lease lost"
    if obs.now >= ack_deadline(obs.lease, timing):
        return "lease past its safe deadline"
    if leader is None:
        return "leader key gone"
    if not _holds_key(obs):
        return f"leader key held by {leader.holder} at epoch {leader.revision}"
    for peer in _live_peers(obs, timing):
        if peer.role is Role.PRIMARY and peer.epoch > me.epoch:
            return f"{peer.name} is primary at higher epoch {peer.epoch}"
    if not me.writable:
        for peer in _live_peers(obs, timing):
            if _heir(peer, me):
                return f"its log cannot take writes; {peer.name} holds all of it and can"
    return None


def _heir(peer: NodeStatus, me: NodeStatus) -> bool:
    """Can `peer` take over from this unwritable primary without losing any of its log?"""
    return (
        peer.role is Role.REPLICA
        and peer.writable
        and not peer.damaged
        and peer.epoch == me.epoch
        and peer.offset >= me.offset
    )


def _with_leader(obs: Observation, timing: Timing, role: Role, actions: list[Action]) -> None:
    """A leader key exists and we are not an established primary: promote or follow."""
    leader, me = obs.leader, obs.me
    assert leader is not None
    if _holds_key(obs):
        if obs.now < ack_deadline(obs.lease, timing):
            actions.append(Promote(leader.revision))
            actions.append(AllowAcks(leader.revision, ack_deadline(obs.lease, timing)))
        else:
            actions.append(Resign())
        return
    if leader.holder == me.name:
        return  # our key from an earlier lease (a restart): it expires within its ttl
    if leader.revision < me.epoch:
        return  # a stale read; revisions only grow
    if role is not Role.REPLICA or leader.revision != me.epoch:
        actions.append(Follow(leader.address, leader.revision))


def _leaderless(
    state: State, obs: Observation, timing: Timing, actions: list[Action]
) -> list[float]:
    """No leader key: campaign now, later (returned wake time), or never (too far behind)."""
    if not _eligible(state, obs.me, timing):
        return []
    live = _live_peers(obs, timing)
    if not obs.me.writable and any(p.writable and not p.damaged for p in live):
        return []  # a writable peer campaigns instead
    better = [
        p
        for p in live
        if outranks(p, obs.me) and not p.damaged and (p.writable or not obs.me.writable)
    ]
    since = state.leaderless_since
    assert since is not None
    settled = _settled(obs.me, live)
    start = since + (0.0 if settled else timing.settle) + len(better) * timing.grace
    if obs.now >= start:
        actions.append(Campaign())
        return []
    return [start] if settled else [start, obs.now + timing.retry]


def _settled(me: NodeStatus, live: list[NodeStatus]) -> bool:
    """Has every live peer published since the leader key went, as this node saw it go? Not
    with no live peer, and not before any leader key was seen (`leaderless_after` 0, a
    cluster starting): the peers heard may not be all of them, and one not heard yet may be
    the most up to date."""
    after = me.leaderless_after
    return after > 0 and bool(live) and all(p.leaderless_after == after for p in live)


def _eligible(state: State, me: NodeStatus, timing: Timing) -> bool:
    """Not damaged, and within `max_lag` bytes of the furthest primary position heard (if a
    limit is set)."""
    if me.damaged:
        return False
    if timing.max_lag is None or state.last_primary is None:
        return True
    epoch, offset = state.last_primary
    if me.epoch != epoch:
        return me.epoch > epoch
    return offset - me.offset <= timing.max_lag
