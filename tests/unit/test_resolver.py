"""The failover resolver: rule by rule, then properties over random observations and over a
simulated cluster (an in-memory etcd with leases, nodes with drifting clocks, crashes and
partitions) checking fencing: one leader per epoch, no ack past a lease, best candidate wins.

Hypothesis runs derandomized (the same examples every run); XSTREAM_HYPOTHESIS_PROFILE=deep
explores more.
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from xstream.coord.resolver import (
    Action,
    AllowAcks,
    Campaign,
    Follow,
    LeaderKey,
    Lease,
    NodeStatus,
    Observation,
    Promote,
    RenewLease,
    Resign,
    Role,
    State,
    StepDown,
    Timing,
    Wait,
    ack_deadline,
    decide,
    outranks,
)

DEEP = os.environ.get("XSTREAM_HYPOTHESIS_PROFILE") == "deep"
PROPS = settings(
    max_examples=1000 if DEEP else 150, derandomize=not DEEP, deadline=None, database=None
)
SIM = settings(
    max_examples=2000 if DEEP else 200, derandomize=not DEEP, deadline=None, database=None
)

T = Timing()  # drift 0.25, renew at ttl/3, settle 0.5, grace 1.0, poll 1.0, freshness 5.0


def node(
    name: str,
    role: Role = Role.REPLICA,
    epoch: int = 1,
    offset: int = 0,
    heard_at: float = 0.0,
) -> NodeStatus:
    return NodeStatus(name, f"{name}:7700", role, epoch, offset, "r", heard_at)


def kinds(actions: tuple[Action, ...]) -> list[type]:
    return [type(a) for a in actions]


def run(obs: Observation, state: State | None = None, timing: Timing = T) -> tuple[Action, ...]:
    return decide(state or State(), obs, timing).actions


# --- rules ---------------------------------------------------------------------------------


def test_resolver_is_pure() -> None:
    """No clock, I/O, randomness or concurrency imports: time enters as Observation.now."""
    path = Path(__file__).resolve().parents[2] / "xstream" / "coord" / "resolver.py"
    roots = set()
    for n in ast.walk(ast.parse(path.read_text())):
        if isinstance(n, ast.Import):
            roots.update(a.name.split(".")[0] for a in n.names)
        elif isinstance(n, ast.ImportFrom) and n.module:
            roots.add(n.module.split(".")[0])
    assert roots <= {"__future__", "enum", "dataclasses"}, roots


def test_primary_with_fresh_lease_acks_until_the_safe_deadline() -> None:
    lease = Lease(7, 2.0, sent_at=10.0)
    obs = Observation(10.1, node("a", Role.PRIMARY, 5), lease, LeaderKey("a", "a:1", 5, 7))
    actions = run(obs)
    assert actions[0] == AllowAcks(5, 10.0 + 2.0 - T.drift_margin)
    assert kinds(actions) == [AllowAcks, Wait]  # renewal not due before ttl/3
    assert isinstance(actions[-1], Wait) and 10.1 < actions[-1].until <= 10.0 + 2.0 / 3


def test_primary_renews_at_a_third_of_the_ttl() -> None:
    lease = Lease(7, 3.0, sent_at=10.0)
    obs = Observation(11.0, node("a", Role.PRIMARY, 5), lease, LeaderKey("a", "a:1", 5, 7))
    assert kinds(run(obs)) == [AllowAcks, RenewLease, Wait]


def test_primary_steps_down_when_renewals_fail_past_the_safe_deadline() -> None:
    lease = Lease(7, 2.0, sent_at=10.0)  # renewals since have failed: sent_at never moved
    key = LeaderKey("a", "a:1", 5, 7)
    ok = run(Observation(11.74, node("a", Role.PRIMARY, 5), lease, key))
    assert isinstance(ok[0], AllowAcks)
    late = run(Observation(11.75, node("a", Role.PRIMARY, 5), lease, key))
    assert isinstance(late[0], StepDown) and "deadline" in late[0].reason
    assert Resign() in late and not any(isinstance(a, AllowAcks | Promote) for a in late)


def test_primary_that_lost_its_lease_steps_down() -> None:
    obs = Observation(1.0, node("a", Role.PRIMARY, 5), None, None)
    actions = run(obs)
    assert actions[0] == StepDown("lease lost")
    assert RenewLease() in actions


def test_primary_seeing_a_higher_epoch_key_steps_down_and_follows() -> None:
    lease = Lease(7, 2.0, sent_at=10.0)
    obs = Observation(10.1, node("a", Role.PRIMARY, 5), lease, LeaderKey("b", "b:1", 9, 8))
    actions = run(obs)
    assert isinstance(actions[0], StepDown)
    assert actions[1] == Follow("b:1", 9)


def test_primary_seeing_a_peer_primary_at_higher_epoch_steps_down() -> None:
    lease = Lease(7, 2.0, sent_at=10.0)
    peer = node("b", Role.PRIMARY, 9, heard_at=10.0)
    obs = Observation(10.1, node("a", Role.PRIMARY, 5), lease, LeaderKey("a", "a:1", 5, 7), (peer,))
    actions = run(obs)
    assert isinstance(actions[0], StepDown) and "higher epoch 9" in actions[0].reason


def test_holder_of_the_key_promotes_at_its_revision() -> None:
    lease = Lease(7, 2.0, sent_at=10.0)
    obs = Observation(10.2, node("a", Role.REPLICA, 3), lease, LeaderKey("a", "a:1", 12, 7))
    actions = run(obs)
    assert actions[:2] == (Promote(12), AllowAcks(12, ack_deadline(lease, T)))


def test_holder_of_the_key_with_an_unsafe_lease_resigns_instead_of_promoting() -> None:
    lease = Lease(7, 2.0, sent_at=10.0)
    obs = Observation(11.9, node("a", Role.REPLICA, 3), lease, LeaderKey("a", "a:1", 12, 7))
    actions = run(obs)
    assert Resign() in actions and not any(isinstance(a, Promote) for a in actions)


def test_own_key_from_an_earlier_lease_is_left_to_expire() -> None:
    lease = Lease(8, 2.0, sent_at=10.0)  # restarted: new lease; the key still has lease 7
    obs = Observation(10.1, node("a", Role.UNKNOWN, 12), lease, LeaderKey("a", "a:1", 12, 7))
    assert kinds(run(obs)) == [Wait]


def test_replica_follows_a_new_leader_once() -> None:
    lease = Lease(8, 2.0, sent_at=10.0)
    key = LeaderKey("b", "b:1", 12, 3)
    assert run(Observation(10.1, node("a", Role.REPLICA, 5), lease, key))[0] == Follow("b:1", 12)
    assert run(Observation(10.1, node("a", Role.UNKNOWN, 12), lease, key))[0] == Follow("b:1", 12)
    assert kinds(run(Observation(10.1, node("a", Role.REPLICA, 12), lease, key))) == [Wait]
    stale = LeaderKey("b", "b:1", 4, 3)  # older than our epoch: a stale read
    assert kinds(run(Observation(10.1, node("a", Role.REPLICA, 5), lease, stale))) == [Wait]


def test_best_replica_campaigns_after_settle_and_the_next_after_one_grace() -> None:
    lease = Lease(8, 9.0, sent_at=100.0)
    a, b = node("a", offset=50, heard_at=100.0), node("b", offset=40, heard_at=100.0)
    state = decide(State(), Observation(100.0, b, lease, None, (a,)), T).state
    assert state.leaderless_since == 100.0
    for now, a_campaigns, b_campaigns in [
        (100.4, False, False),
        (100.5, True, False),
        (101.4, True, False),
        (101.5, True, True),
    ]:
        got_a = Campaign() in run(Observation(now, a, lease, None, (b,)), state)
        got_b = Campaign() in run(Observation(now, b, lease, None, (a,)), state)
        assert (got_a, got_b) == (a_campaigns, b_campaigns), now
    wait = run(Observation(100.6, b, lease, None, (a,)), state)[-1]
    # not settled: look again after `retry` for republished peers
    assert isinstance(wait, Wait)
    assert wait.until == pytest.approx(100.7)


def leaderless(s: NodeStatus, after: int) -> NodeStatus:
    return NodeStatus(s.name, s.address, s.role, s.epoch, s.offset, s.replid, s.heard_at, after)


def test_peers_republished_without_a_leader_skip_the_settle() -> None:
    lease = Lease(8, 9.0, sent_at=100.0)
    a = leaderless(node("a", offset=50, heard_at=100.0), 7)
    b = leaderless(node("b", offset=40, heard_at=100.0), 7)
    state = State(leaderless_since=100.0)
    assert Campaign() in run(Observation(100.0, a, lease, None, (b,)), state)
    assert Campaign() not in run(Observation(100.0, b, lease, None, (a,)), state)
    assert run(Observation(100.0, b, lease, None, (a,)), state)[-1] == Wait(101.0)  # grace only
    assert Campaign() in run(Observation(101.0, b, lease, None, (a,)), state)


@pytest.mark.parametrize(
    ("mine", "theirs"),
    [
        (7, -1),  # the peer's status was published while it still saw a leader
        (7, 5),  # ... after another leader: it missed one, or its status is old
        (-1, 7),  # we have not published without a leader ourselves
    ],
)
def test_a_peer_not_yet_republished_keeps_the_settle(mine: int, theirs: int) -> None:
    lease = Lease(8, 9.0, sent_at=100.0)
    me = leaderless(node("a", offset=50, heard_at=100.0), mine)
    peer = leaderless(node("b", offset=40, heard_at=100.0), theirs)
    state = State(leaderless_since=100.0)
    assert Campaign() not in run(Observation(100.4, me, lease, None, (peer,)), state)
    assert Campaign() in run(Observation(100.5, me, lease, None, (peer,)), state)


def test_no_live_peer_is_never_settled_early() -> None:
    lease = Lease(8, 9.0, sent_at=100.0)
    me = leaderless(node("a", offset=50), 0)  # a cluster starting: nobody heard yet
    state = State(leaderless_since=100.0)
    assert Campaign() not in run(Observation(100.0, me, lease, None, ()), state)
    assert Campaign() in run(Observation(100.5, me, lease, None, ()), state)


def test_a_cluster_starting_keeps_the_settle_with_some_peers_heard() -> None:
    lease = Lease(8, 9.0, sent_at=100.0)
    me = leaderless(node("a", offset=20, heard_at=100.0), 0)  # no leader key seen yet
    heard = leaderless(node("b", offset=10, heard_at=100.0), 0)  # a third may not be heard yet
    state = State(leaderless_since=100.0)
    assert Campaign() not in run(Observation(100.0, me, lease, None, (heard,)), state)
    assert Campaign() not in run(Observation(100.4, me, lease, None, (heard,)), state)
    assert Campaign() in run(Observation(100.5, me, lease, None, (heard,)), state)


def test_an_unwritable_primary_hands_over_to_a_replica_with_all_of_its_log() -> None:
    lease = Lease(7, 2.0, sent_at=10.0)
    key = LeaderKey("a", "a:1", 5, 7)
    me = replace(node("a", Role.PRIMARY, 5, offset=900), writable=False)
    heir = node("b", epoch=5, offset=900, heard_at=10.0)
    actions = run(Observation(10.1, me, lease, key, (heir,)))
    assert kinds(actions)[:2] == [StepDown, Resign]
    assert "cannot take writes" in actions[0].reason  # type: ignore[union-attr]
    for not_an_heir in (
        replace(heir, offset=899),  # lacks some of the log: the handover would lose it
        replace(heir, writable=False),
        replace(heir, damaged=True),
        replace(heir, epoch=4),
        replace(heir, heard_at=0.0, name="c"),  # not live
    ):
        kept = run(Observation(10.1, me, lease, key, (not_an_heir,)))
        assert AllowAcks in kinds(kept) and StepDown not in kinds(kept), not_an_heir
    healthy = replace(me, writable=True)
    assert StepDown not in kinds(run(Observation(10.1, healthy, lease, key, (heir,))))


def test_damaged_and_unwritable_nodes_stand_aside_in_an_election() -> None:
    lease = Lease(8, 9.0, sent_at=100.0)
    state = State(leaderless_since=100.0)
    best = node("a", offset=50, heard_at=100.0)
    other = node("b", offset=40, heard_at=100.0)
    for sick in (replace(best, damaged=True), replace(best, writable=False)):
        assert Campaign() not in run(Observation(101.0, sick, lease, None, (other,)), state)
        # the healthy node does not wait a grace for the sick one it ranks below
        assert Campaign() in run(Observation(100.5, other, lease, None, (sick,)), state)
    alone = replace(best, writable=False)  # no writable peer: it may still lead (reads, acks)
    unwritable_peer = replace(other, writable=False)
    assert Campaign() in run(Observation(100.5, alone, lease, None, (unwritable_peer,)), state)
    damaged_alone = replace(best, damaged=True)
    assert Campaign() not in run(Observation(105.0, damaged_alone, lease, None, ()), state)


def test_stale_peers_do_not_hold_a_candidate_back() -> None:
    lease = Lease(8, 9.0, sent_at=100.0)
    gone = node("a", offset=99, heard_at=90.0)  # not heard for 10 s > freshness
    state = State(leaderless_since=100.0)
    assert Campaign() in run(Observation(100.5, node("b", offset=1), lease, None, (gone,)), state)


def test_a_replica_too_far_behind_never_campaigns_under_max_lag() -> None:
    timing = Timing(max_lag=10)
    lease = Lease(8, 9.0, sent_at=100.0)
    state = State(leaderless_since=0.0, last_primary=(5, 100))
    assert Campaign() in run(
        Observation(100.0, node("a", epoch=5, offset=90), lease, None), state, timing
    )
    assert Campaign() not in run(
        Observation(100.0, node("a", epoch=5, offset=89), lease, None), state, timing
    )
    assert Campaign() not in run(
        Observation(100.0, node("a", epoch=4, offset=999), lease, None), state, timing
    )


def test_a_node_without_a_lease_asks_for_one() -> None:
    assert RenewLease() in run(Observation(0.0, node("a", Role.UNKNOWN, 0), None, None))


# --- properties over random observations ------------------------------------------------------

NAMES = ["a", "b", "c", "d", "e"]
roles = st.sampled_from(list(Role))
statuses = st.builds(
    NodeStatus,
    st.sampled_from(NAMES),
    st.just("x:1"),
    roles,
    st.integers(0, 4),
    st.integers(0, 4),
    st.just("r"),
    st.floats(0, 20),
)
leases = st.none() | st.builds(
    Lease, st.integers(1, 3), st.sampled_from([2.0, 5.0]), st.floats(0, 20)
)
leaders = st.none() | st.builds(
    LeaderKey, st.sampled_from(NAMES), st.just("x:1"), st.integers(1, 5), st.integers(1, 3)
)
observations = st.builds(
    Observation,
    st.floats(0, 25),
    statuses,
    leases,
    leaders,
    st.lists(statuses, max_size=4).map(tuple),
)
states = st.builds(
    State,
    st.none() | st.floats(0, 25),
    st.none() | st.tuples(st.integers(0, 4), st.integers(0, 4)),
)


@PROPS
@given(states, observations)
def test_acks_are_allowed_only_before_the_lease_safe_deadline(
    state: State, obs: Observation
) -> None:
    actions = decide(state, obs, T).actions
    for a in actions:
        if isinstance(a, AllowAcks):
            assert obs.lease is not None and obs.leader is not None
            assert a.until == obs.lease.sent_at + obs.lease.ttl - T.drift_margin
            assert obs.now < a.until
            assert obs.leader.lease == obs.lease.id and a.epoch == obs.leader.revision
        if isinstance(a, Promote):
            assert obs.leader is not None and a.epoch == obs.leader.revision


@PROPS
@given(states, observations)
def test_every_decision_ends_with_one_future_wait(state: State, obs: Observation) -> None:
    actions = decide(state, obs, T).actions
    assert isinstance(actions[-1], Wait) and actions[-1].until > obs.now
    assert not any(isinstance(a, Wait) for a in actions[:-1])
    assert len(set(kinds(actions))) == len(actions)  # no action twice
    if any(isinstance(a, StepDown) for a in actions):
        assert isinstance(actions[0], StepDown)
        assert not any(isinstance(a, AllowAcks) for a in actions)


@PROPS
@given(
    st.lists(st.tuples(st.integers(0, 3), st.integers(0, 5)), min_size=1, max_size=5),
    st.floats(0, 3),
)
def test_only_the_best_live_candidate_campaigns_within_its_grace(
    positions: list[tuple[int, int]], elapsed: float
) -> None:
    """All nodes saw the leader vanish at 0: until one grace after settle, exactly the node
    with max (epoch, offset) (smallest name on ties) campaigns, and nobody before settle."""
    nodes = [node(NAMES[i], Role.REPLICA, e, o, heard_at=0.0) for i, (e, o) in enumerate(positions)]
    lease = Lease(1, 9.0, 0.0)
    state = State(leaderless_since=0.0)
    now = min(elapsed, T.settle + T.grace - 0.001)
    campaigners = [
        n for n in nodes if Campaign() in run(Observation(now, n, lease, None, tuple(nodes)), state)
    ]
    best = max(nodes, key=lambda n: (n.epoch, n.offset, [-ord(c) for c in n.name]))
    assert all(not outranks(other, best) for other in nodes)
    assert campaigners == ([best] if now >= T.settle else [])


# --- a simulated cluster --------------------------------------------------------------------


@dataclass
class SimEtcd:
    """An in-memory etcd: leases expiring on the server clock, one leader key, status keys."""

    ttl: float
    now: float = 0.0  # server clock
    revision: int = 0
    leases: dict[int, float] = field(default_factory=dict)  # id -> expiry
    leader: LeaderKey | None = None
    statuses: dict[str, tuple[NodeStatus, int]] = field(
        default_factory=dict
    )  # name -> (status, lease)
    next_id: int = 1

    def expire(self) -> None:
        self.leases = {i: e for i, e in self.leases.items() if e > self.now}
        if self.leader is not None and self.leader.lease not in self.leases:
            self.leader, self.revision = None, self.revision + 1
        self.statuses = {n: s for n, s in self.statuses.items() if s[1] in self.leases}

    def grant(self) -> int:
        self.next_id += 1
        self.leases[self.next_id] = self.now + self.ttl
        return self.next_id

    def keepalive(self, lease: int) -> bool:
        if lease not in self.leases:
            return False
        self.leases[lease] = self.now + self.ttl
        return True

    def resign(self, lease: int) -> None:
        if self.leader is not None and self.leader.lease == lease:
            self.leader, self.revision = None, self.revision + 1

    def campaign(self, lease: int, name: str) -> None:
        if self.leader is None and lease in self.leases:
            self.revision += 1
            self.leader = LeaderKey(name, f"{name}:1", self.revision, lease)


@dataclass
class SimNode:
    """A node: its clock runs at `rate` from `skew`; it acks while its clock < ack_until."""

    me: NodeStatus
    rate: float
    skew: float
    lease: Lease | None = None
    state: State = field(default_factory=State)
    ack_until: float = float("-inf")
    ack_epoch: int = 0
    alive: bool = True
    cut: bool = False  # partitioned from etcd
    leader: LeaderKey | None = None  # last read
    peers: tuple[NodeStatus, ...] = ()  # last read

    def clock(self, t: float) -> float:
        return self.skew + self.rate * t


class Sim:
    def __init__(self, rates: list[float], offsets: list[int]) -> None:
        self.etcd = SimEtcd(ttl=2.0)
        self.nodes = [
            SimNode(node(NAMES[i], Role.UNKNOWN, 0, offsets[i]), rate, skew=10.0 * i)
            for i, rate in enumerate(rates)
        ]
        self.promoted: dict[int, set[str]] = {}  # epoch -> nodes promoted at it
        self.acks: list[tuple[float, str, int]] = []  # (server time, node, epoch)

    def step(self, n: SimNode) -> None:
        if not n.alive:
            return
        etcd, now = self.etcd, n.clock(self.etcd.now)
        if not n.cut:
            if n.lease is not None and n.lease.id in etcd.leases:
                etcd.statuses[n.me.name] = (n.me, n.lease.id)
            n.leader = etcd.leader
            n.peers = tuple(replace_heard(s, now) for s, _ in etcd.statuses.values())
        obs = Observation(now, n.me, n.lease, n.leader, n.peers)
        decision = decide(n.state, obs, T)
        n.state = decision.state
        for a in decision.actions:
            self.act(n, a, now)

    def act(self, n: SimNode, a: Action, now: float) -> None:
        etcd, me = self.etcd, n.me
        if isinstance(a, StepDown):
            n.ack_until, n.me = float("-inf"), with_role(me, Role.UNKNOWN, me.epoch)
        elif isinstance(a, Follow):
            n.me = with_role(me, Role.REPLICA, a.epoch)
        elif isinstance(a, Promote):
            n.me = with_role(me, Role.PRIMARY, a.epoch)
            self.promoted.setdefault(a.epoch, set()).add(me.name)
        elif isinstance(a, AllowAcks):
            n.ack_until, n.ack_epoch = a.until, a.epoch
        elif isinstance(a, Resign):
            n.leader = None  # the loop forgets a key it resigned, sent or not (see Observation)
            if not n.cut and n.lease is not None:
                etcd.resign(n.lease.id)
        elif n.cut:
            return  # the etcd calls below fail
        elif isinstance(a, RenewLease):
            if n.lease is None:
                n.lease = Lease(etcd.grant(), etcd.ttl, now)
            elif etcd.keepalive(n.lease.id):
                n.lease = Lease(n.lease.id, etcd.ttl, now)  # sent_at = when the request left
            else:
                n.lease = None
        elif isinstance(a, Campaign) and n.lease is not None:
            etcd.campaign(n.lease.id, me.name)

    def write(self) -> None:
        for n in self.nodes:
            if self.can_ack(n):
                self.acks.append((self.etcd.now, n.me.name, n.ack_epoch))
                n.me = replace_offset(n.me, n.me.offset + 1)

    def can_ack(self, n: SimNode) -> bool:
        return n.alive and n.me.role is Role.PRIMARY and n.clock(self.etcd.now) < n.ack_until

    def check(self) -> None:
        etcd = self.etcd
        ackers = [n for n in self.nodes if self.can_ack(n)]
        assert len(ackers) <= 1, [n.me.name for n in ackers]
        for n in ackers:
            assert n.lease is not None and etcd.leases.get(n.lease.id, -1.0) > etcd.now
            assert etcd.leader is not None and etcd.leader.lease == n.lease.id
            assert etcd.leader.revision == n.ack_epoch
        for epoch, names in self.promoted.items():
            assert len(names) == 1, (epoch, names)
        for _, name, epoch in self.acks:
            assert self.promoted[epoch] == {name}


def with_role(s: NodeStatus, role: Role, epoch: int) -> NodeStatus:
    return NodeStatus(s.name, s.address, role, epoch, s.offset, s.replid, s.heard_at)


def replace_offset(s: NodeStatus, offset: int) -> NodeStatus:
    return NodeStatus(s.name, s.address, s.role, s.epoch, offset, s.replid, s.heard_at)


def replace_heard(s: NodeStatus, heard_at: float) -> NodeStatus:
    return NodeStatus(s.name, s.address, s.role, s.epoch, s.offset, s.replid, heard_at)


FAULTS = ["none"] * 6 + ["replicate", "replicate", "crash", "restart", "cut", "heal"]
rounds = st.lists(
    st.tuples(
        st.floats(0.01, 0.8),  # time passes
        st.sampled_from([7, 7, 7, 7, 0, 1, 2, 3, 4, 5, 6]),  # bitmask of the nodes that step
        st.sampled_from(FAULTS),
        st.integers(0, 2),  # the node the fault hits
    ),
    min_size=20,
    max_size=100,
)


def play(sim: Sim, dt: float, mask: int, fault: str, i: int) -> None:
    """One round: time passes, a fault may hit node i, the masked nodes step, clients write."""
    apply(sim, "advance", dt)
    if fault != "none":
        apply(sim, fault, i)
    sim.check()
    for j, n in enumerate(sim.nodes):
        if mask >> j & 1:
            sim.step(n)
    sim.write()
    sim.check()


def apply(sim: Sim, kind: str, arg: float) -> None:
    i = int(arg)
    if kind == "advance":
        sim.etcd.now += arg
        sim.etcd.expire()
    elif kind == "step":
        sim.step(sim.nodes[i])
    elif kind == "write":
        sim.write()
    elif kind == "replicate":
        n = sim.nodes[i]
        src = [p for p in sim.nodes if p.me.role is Role.PRIMARY and p.me.epoch == n.me.epoch]
        if n.me.role is Role.REPLICA and src and src[0].me.offset > n.me.offset:
            n.me = replace_offset(n.me, src[0].me.offset)
    elif kind == "crash":
        sim.nodes[i].alive = False
    elif kind == "restart" and not sim.nodes[i].alive:
        old = sim.nodes[i]
        sim.nodes[i] = SimNode(
            with_role(old.me, Role.UNKNOWN, old.me.epoch), old.rate, old.skew + 1
        )
    elif kind in ("cut", "heal"):
        sim.nodes[i].cut = kind == "cut"


@SIM
@given(
    st.lists(st.floats(0.95, 1.05), min_size=3, max_size=3),
    st.lists(st.integers(0, 9), min_size=3, max_size=3),
    rounds,
)
def test_simulated_cluster_keeps_one_acting_leader_per_epoch(
    rates: list[float], offsets: list[int], script: list[tuple[float, int, str, int]]
) -> None:
    """Random rounds of time, steps, writes, crashes, restarts and etcd partitions, clocks
    drifting 5 % (within the margin): at every instant at most one node may ack, and only
    while etcd still holds its lease and leader key; no epoch has two promoted nodes. After
    healing, the cluster converges to one primary that every live node follows."""
    sim = Sim(rates, offsets)
    for dt, mask, fault, i in script:
        play(sim, dt, mask, fault, i)
    for n in sim.nodes:
        n.cut = False
    for _ in range(40):  # healed; everyone steps every 0.25 s for 10 s
        play(sim, 0.25, 7, "none", 0)
    live = [n for n in sim.nodes if n.alive]
    if live:
        primaries = [n for n in live if sim.can_ack(n)]
        assert len(primaries) == 1, [(n.me, n.ack_until) for n in live]
        epoch = primaries[0].me.epoch
        assert all(n.me.epoch == epoch for n in live)


def test_simulated_failover_promotes_the_most_up_to_date_replica() -> None:
    sim = Sim([1.0, 1.0, 1.0], [0, 0, 0])
    for _ in range(10):  # a cluster forms
        apply(sim, "advance", 0.2)
        for n in sim.nodes:
            sim.step(n)
    first = next(n for n in sim.nodes if sim.can_ack(n))
    others = [n for n in sim.nodes if n is not first]
    for _ in range(5):
        sim.write()
    others[1].me = replace_offset(others[1].me, first.me.offset)  # fully caught up
    others[0].me = replace_offset(others[0].me, first.me.offset - 2)
    for n in sim.nodes:
        sim.step(n)
    first.alive = False
    t_crash = sim.etcd.now
    while not any(sim.can_ack(n) for n in others):
        apply(sim, "advance", 0.05)
        for n in others:
            sim.step(n)
        sim.check()
        assert sim.etcd.now - t_crash < 6.0
    assert sim.can_ack(others[1]) and not sim.can_ack(others[0])
    assert sim.etcd.now - t_crash <= 2.0 + T.settle + 0.2
