"""Election against a real etcd: one leader, growing revisions, lease expiry, fencing,
status keys, endpoint failover; then three Coordinators failing over on their own."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from xstream.coord.coordinator import Coordinator
from xstream.coord.etcd import Election, EtcdUnavailableError
from xstream.coord.resolver import NodeStatus, Role, Timing

DEAD = "http://127.0.0.1:1"  # nothing listens on port 1


@pytest.fixture
def elect(etcd: str, prefix: str) -> Iterator[Callable[..., Election]]:
    """Make Elections on this test's prefix; their leases are revoked at the end."""
    made: list[Election] = []

    def make(name: str, ttl: int = 2, endpoints: list[str] | None = None) -> Election:
        e = Election(endpoints or [etcd], prefix, name, ttl, timeout=1.0)
        made.append(e)
        return e

    yield make
    for e in made:
        with contextlib.suppress(Exception):  # a test may have closed it or killed etcd
            e.close()


def poll(what: str, check: Callable[[], Any], timeout: float = 10.0, every: float = 0.02) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if got := check():
            return got
        time.sleep(every)
    pytest.fail(f"{what}: not within {timeout} s")


def test_two_candidates_one_leader(elect: Callable[..., Election]) -> None:
    a, b = elect("a"), elect("b")
    t0 = time.monotonic()
    ra = a.campaign("a:7700")
    latency = time.monotonic() - t0
    rb = b.campaign("b:7700")
    assert ra is not None and rb is None
    assert a.campaign("a:7700") == ra  # campaigning again while holding is a no-op
    leader = b.leader()
    assert leader is not None and (leader.name, leader.value, leader.revision) == (
        "a",
        "a:7700",
        ra,
    )
    lease = a.lease()
    assert lease is not None and leader.lease == lease.id
    assert latency < 0.5, f"campaign took {latency * 1000:.1f} ms"


def test_revision_grows_across_leaders_and_fences_the_old_one(
    elect: Callable[..., Election], prefix: str
) -> None:
    a, b = elect("a"), elect("b")
    ra = a.campaign("a:7700")
    assert ra is not None and a.put_if_leader(f"{prefix}/fenced", "from a", ra)
    assert not b.resign()  # b never held it
    assert a.resign() and a.leader() is None
    rb = b.campaign("b:7700")
    assert rb is not None and rb > ra
    assert not a.put_if_leader(f"{prefix}/fenced", "stale a", ra)  # the old epoch is fenced
    assert b.put_if_leader(f"{prefix}/fenced", "from b", rb)


def test_lease_expiry_hands_the_key_to_another_candidate(elect: Callable[..., Election]) -> None:
    a, b = elect("a", ttl=2), elect("b", ttl=2)
    ra = a.campaign("a:7700")
    assert ra is not None and b.campaign("b:7700") is None
    a_lease = a.lease()
    assert a_lease is not None
    # a stops renewing; b watches the key until it is gone
    assert b.leader() is not None
    while b.observe(5.0) is not None:
        pass
    gone = time.monotonic() - a_lease.sent_at
    assert 2.0 <= gone < 3.5, f"key gone {gone:.2f} s after the last grant"
    rb = b.campaign("b:7700")
    assert rb is not None and rb > ra
    assert not a.put_if_leader("/elsewhere", "stale", ra)
    assert not a.keepalive() and a.lease() is None  # etcd says it is gone
    assert a.campaign("a:7700") is None  # with a fresh lease, and losing
    assert a.lease() is not None


def test_keepalive_keeps_the_key_and_moves_sent_at(elect: Callable[..., Election]) -> None:
    a = elect("a", ttl=2)
    ra = a.campaign("a:7700")
    first = a.lease()
    assert ra is not None and first is not None
    for _ in range(5):
        time.sleep(0.5)
        before = time.monotonic()
        assert a.keepalive()
        lease = a.lease()
        assert lease is not None and lease.id == first.id and lease.ttl == 2.0
        assert before <= lease.sent_at <= time.monotonic()  # when the request left
    leader = a.leader()
    assert leader is not None and leader.revision == ra  # 2.5 s > ttl, still ours


def test_publish_status_lists_nodes_until_their_lease_goes(elect: Callable[..., Election]) -> None:
    a, b = elect("a"), elect("b")
    a.publish_status("a:7700", Role.PRIMARY, 3, 120, "r1")
    b.publish_status("b:7700", Role.REPLICA, 3, 100, "r1")
    b.publish_status("b:7700", Role.REPLICA, 3, 110, "r1")
    nodes = a.nodes()
    assert [(n.name, n.role, n.epoch, n.offset) for n in nodes] == [
        ("a", Role.PRIMARY, 3, 120),
        ("b", Role.REPLICA, 3, 110),
    ]
    status = nodes[1].status(heard_at=5.0)
    assert status == NodeStatus("b", "b:7700", Role.REPLICA, 3, 110, "r1", 5.0)
    b.close()
    assert [n.name for n in a.nodes()] == ["a"]


def test_observe_wakes_on_a_change_and_times_out_without_one(
    elect: Callable[..., Election],
) -> None:
    a, b = elect("a"), elect("b")
    assert a.campaign("a:7700") is not None
    b.leader()
    t0 = time.monotonic()
    assert b.observe(0.3) is not None
    assert 0.25 <= time.monotonic() - t0 < 1.0
    threading.Timer(0.2, a.resign).start()
    t0 = time.monotonic()
    assert b.observe(5.0) is None
    assert time.monotonic() - t0 < 1.0


def test_endpoints_fail_over_and_calls_time_out(etcd: str, elect: Callable[..., Election]) -> None:
    a = elect("a", endpoints=[DEAD, etcd])
    assert a.campaign("a:7700") is not None
    assert a.keepalive()
    nowhere = Election([DEAD, "http://127.0.0.1:2"], "/x", "n", 2, timeout=0.5)
    t0 = time.monotonic()
    with pytest.raises(EtcdUnavailableError):
        nowhere.leader()
    assert time.monotonic() - t0 < 1.0
    assert not nowhere.keepalive()


# --- three coordinators ------------------------------------------------------------------------


@dataclass
class FakeNode:
    """A node's role state as the coordinator drives it; acks gated by the lease deadline."""

    name: str
    offset: int
    role: Role = Role.UNKNOWN
    epoch: int = 0
    ack_until: float = float("-inf")
    following: str = ""
    promoted_at: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def status(self) -> NodeStatus:
        with self.lock:
            return NodeStatus(
                self.name, f"{self.name}:7700", self.role, self.epoch, self.offset, "r"
            )

    def step_down(self, reason: str) -> None:
        with self.lock:
            self.role, self.ack_until = Role.UNKNOWN, float("-inf")

    def promote(self, epoch: int) -> None:
        with self.lock:
            self.role, self.epoch, self.promoted_at = Role.PRIMARY, epoch, time.monotonic()

    def allow_acks(self, epoch: int, until: float) -> None:
        with self.lock:
            self.ack_until = until

    def follow(self, address: str, epoch: int) -> None:
        with self.lock:
            self.role, self.epoch, self.following = Role.REPLICA, epoch, address

    def can_ack(self) -> bool:
        with self.lock:
            return self.role is Role.PRIMARY and time.monotonic() < self.ack_until


def test_coordinators_elect_the_most_up_to_date_and_fail_over(
    elect: Callable[..., Election],
) -> None:
    timing = Timing(drift_margin=0.25, settle=0.5, grace=1.0, poll=0.5, freshness=3.0)
    nodes = {n: FakeNode(n, off) for n, off in [("n1", 10), ("n2", 30), ("n3", 20)]}
    stops = {n: threading.Event() for n in nodes}
    coords = {n: Coordinator(elect(n, ttl=2), nodes[n], timing) for n in nodes}
    threads = [threading.Thread(target=coords[n].run, args=(stops[n],), daemon=True) for n in nodes]
    for t in threads:
        t.start()
    try:
        t0 = time.monotonic()
        poll("n2 primary", nodes["n2"].can_ack)
        elected = time.monotonic() - t0
        first = nodes["n2"].epoch
        poll("both follow n2", lambda: all(nodes[n].following == "n2:7700" for n in ("n1", "n3")))
        assert not nodes["n1"].can_ack() and not nodes["n3"].can_ack()
        with nodes["n3"].lock:
            nodes["n3"].offset = 40  # n3 caught up further than n1
        time.sleep(0.6)  # one publish round
        stops["n2"].set()  # n2 stops renewing and deciding: a crash, as etcd sees it
        crashed = time.monotonic()
        poll("n3 primary", nodes["n3"].can_ack, timeout=10)
        failover = time.monotonic() - crashed
        assert nodes["n3"].epoch > first
        assert nodes["n2"].ack_until <= nodes["n3"].promoted_at  # never two acking at once
        poll("n1 follows n3", lambda: nodes["n1"].following == "n3:7700")
        assert not nodes["n1"].can_ack()
    finally:
        for s in stops.values():
            s.set()
        for t in threads:
            t.join(5)
    print(f"\nelected in {elected:.2f} s; failover after crash {failover:.2f} s (ttl 2 s)")
    assert failover < 2.0 + timing.settle + 1.5
