"""The primary's view of its replicas: what counts in R for acks=quorum|all (connected, or
departed less than replica_forget_after ago), a reconnect counted once, and peer data that
can neither count as an unearned ack nor break INFO. An in-process Primary on a temporary
store; the wire side is tests/integration/test_rogue_peer.py."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from xstream.engine import Engine
from xstream.node.backlog import Backlog
from xstream.node.concern import Acks, WriteConcern
from xstream.node.handshake import Hello
from xstream.node.store import Store
from xstream.primary import peers
from xstream.primary.primary import Options, Primary

ALL = WriteConcern(Acks.ALL)
QUORUM = WriteConcern(Acks.QUORUM)


def make_primary(tmp_path: Path, forget_after: float, expect: int = 0) -> Primary:
    store = Store(tmp_path / "data", "everysec")
    engine = Engine()
    store.recover(engine, engine.apply_record)
    options = Options(expect_replicas=expect, replica_forget_after=forget_after)
    return Primary(engine, store, Backlog(1 << 20), {"replid": "r" * 40}, "p", options)


def hello(name: str, address: str = "") -> Hello:
    return Hello(name=name, address=address)


@pytest.mark.parametrize(
    ("address", "parsed"),
    [
        ("127.0.0.1:7701", ("127.0.0.1", 7701)),
        ("[::1]:1", ("[::1]", 1)),
        ("h:65535", ("h", 65535)),
        ("nohost", None),
        ("h:0", None),
        ("h:65536", None),
        (":7700", None),
        ("h:", None),
        ("h:+1", None),
        ("h:٣", None),  # a digit, but not ASCII
    ],
)
def test_split_address(address: str, parsed: tuple[str, int] | None) -> None:
    assert peers.split_address(address) == parsed


def test_departed_replicas_count_until_forgotten(tmp_path: Path) -> None:
    p = make_primary(tmp_path, forget_after=0.05)
    a, b = p.attach(hello("a")), p.attach(hello("b"))
    assert p.required_acks(ALL) == 2 and p.required_acks(QUORUM) == 1
    p.detach(b)
    assert p.required_acks(ALL) == 2  # b may be back in a moment: R does not shrink yet
    time.sleep(0.06)
    assert p.required_acks(ALL) == 1 and list(p.replicas) == ["a"]
    p.detach(a)
    time.sleep(0.06)
    assert p.required_acks(ALL) == 0  # none left and no --expect-replicas: as at start


def test_expect_replicas_is_the_floor(tmp_path: Path) -> None:
    p = make_primary(tmp_path, forget_after=0.0, expect=2)
    p.detach(p.attach(hello("a")))
    assert p.required_acks(ALL) == 2 and p.required_acks(QUORUM) == 1


def test_reconnect_is_counted_once_and_the_old_call_cannot_detach_it(tmp_path: Path) -> None:
    p = make_primary(tmp_path, forget_after=60.0)
    old = p.attach(hello("a", "127.0.0.1:7701"))
    new = p.attach(hello("a", "127.0.0.1:7701"))
    assert p.required_acks(ALL) == 1
    assert not p.serves(old) and p.serves(new)
    p.detach(old)  # the old call's end, after the reconnect
    assert new.connected and p.info()["replicas"][0]["state"] == "sync"


def test_ack_beyond_what_was_sent_changes_nothing(tmp_path: Path) -> None:
    p = make_primary(tmp_path, forget_after=60.0)
    link = p.attach(hello("a"))
    link.sent, link.state = 100, "online"
    p.on_ack(link, 100, 0)
    with pytest.raises(peers.PeerError, match="ack for offset 101 beyond the 100 sent"):
        p.on_ack(link, 101, 0)
    assert link.ack_offset == 100 and p.acked(101) == 0


def test_info_never_raises_on_peer_data(tmp_path: Path) -> None:
    p = make_primary(tmp_path, forget_after=60.0)
    p.attach(hello("a")).address = "nohost"  # as an unchecked Hello would have left it
    p.attach(hello("b", "[::1]:7702"))
    shown = {r["name"]: (r["host"], r["port"]) for r in p.info()["replicas"]}
    assert shown == {"a": ("", 0), "b": ("[::1]", 7702)}


@pytest.mark.parametrize(
    ("name", "address"),
    [("", ""), ("n" * 257, ""), ("a\tb", ""), ("a", "nohost"), ("a", "h:99999")],
)
def test_unusable_hello(name: str, address: str) -> None:
    with pytest.raises(peers.PeerError):
        peers.check_hello(name, address)
