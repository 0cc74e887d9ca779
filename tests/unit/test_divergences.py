"""The six ways Redis 8.8's replicas diverge from their primary (propagation.md section 8),
each run on an xstream primary whose effects are applied to a replica with other node limits
and no clock of its own. Every case ends with equal digests and with the very state Redis gets
wrong compared on both sides.

B1 `~ MINID` trims with DELREF / ACKED      B4 XCLAIM / XAUTOCLAIM creating an idle consumer
B2 XDELEX DELREF of a tombstoned ID          B5 consumer times and clamped delivery times
B3 XREADGROUP history reads                  B6 IDMP duplicates after expiry
"""

from __future__ import annotations

from collections.abc import Sequence

from enginecalls import Word, argv, run

from xstream.engine import Engine, EngineConfig, ReplyMap
from xstream.engine.reply import Reply

PRIMARY = EngineConfig(node_max_bytes=4096, node_max_entries=10)
REPLICA = EngineConfig(node_max_bytes=120, node_max_entries=3)


class Replicated:
    """A primary and a replica that receives every effect (`hold=True` keeps them back until
    `flush`, as a replica that applies late)."""

    def __init__(self) -> None:
        self.primary = Engine(PRIMARY)
        self.replica = Engine(REPLICA)
        self.held: list[list[bytes]] = []

    def __call__(self, *words: Word, now: int = 1000, hold: bool = False) -> Reply:
        result = run(self.primary, *words, now=now)
        self.held += result.effects
        if not hold:
            self.flush()
        return result.reply

    def flush(self, replica_clock: int | None = None) -> None:
        """Apply held effects; with `replica_clock`, as if the replica's own time were that."""
        for effect in self.held:
            if replica_clock is None:
                self.replica.apply(effect)
            else:
                self.replica.execute(effect, replica_clock, replicated=True)
        self.held = []
        self.replica.check_integrity()

    def both(self, *words: Word, now: int = 1000) -> tuple[Reply, Reply]:
        """A read on both engines at the same clock."""
        a = self.primary.execute(argv(*words), now).reply
        b = self.replica.execute(argv(*words), now).reply
        return a, b

    def same(self, *words: Word, now: int = 1000) -> Reply:
        a, b = self.both(*words, now=now)
        assert a == b, words
        return a

    def assert_equal(self) -> None:
        assert self.replica.digest() == self.primary.digest()


def group_of_full(reply: Reply, name: bytes = b"g") -> dict[bytes, Reply]:
    """A group map out of XINFO STREAM FULL (the rest differs with node layout)."""
    assert isinstance(reply, ReplyMap)
    groups = reply.get(b"groups")
    assert isinstance(groups, list)
    for g in groups:
        assert isinstance(g, ReplyMap)
        if g.get(b"name") == name:
            return dict(g)
    raise AssertionError(name)


def full_groups(x: Replicated) -> tuple[dict[bytes, Reply], dict[bytes, Reply]]:
    words = ["XINFO", "STREAM", "s", "FULL", "COUNT", 0]
    a, b = x.both(*words)
    return group_of_full(a), group_of_full(b)


def ids(reply: Reply) -> list[bytes]:
    assert isinstance(reply, list)
    return [item[0] for item in reply]  # type: ignore[index]


def filled(n: int = 25, read_by: Sequence[str] = ("c",)) -> Replicated:
    """s: 1-1 .. n-1 (10 per node on the primary, 3 on the replica); group g read it all."""
    x = Replicated()
    for i in range(1, n + 1):
        x("XADD", "s", f"{i}-1", "f", "v")
    x("XGROUP", "CREATE", "s", "g", "0")
    for consumer in read_by:
        x("XREADGROUP", "GROUP", "g", consumer, "STREAMS", "s", ">")
    return x


# -- B1 --------------------------------------------------------------------------------------


def test_b1_approximate_minid_delref_trim() -> None:
    x = filled()
    assert x("XTRIM", "s", "MINID", "~", "15", "DELREF") == 14
    x.assert_equal()
    remaining = ids(x.same("XRANGE", "s", "-", "+"))
    assert remaining == [b"%d-1" % i for i in range(15, 26)]  # Redis's replica keeps 15
    assert x.same("XPENDING", "s", "g") == [11, b"15-1", b"25-1", [[b"c", b"11"]]]


def test_b1_approximate_minid_acked_trim() -> None:
    x = filled()
    x("XACK", "s", "g", "1-1", "3-1")
    assert x("XTRIM", "s", "MINID", "~", "15", "ACKED") == 2
    x.assert_equal()
    remaining = ids(x.same("XRANGE", "s", "-", "+"))
    assert remaining == [b"2-1"] + [b"%d-1" % i for i in range(4, 26)]  # Redis's replica: 25


def test_b1_limit_stop_and_xadd_trim() -> None:
    x = filled()
    assert x("XTRIM", "s", "MINID", "~", "15", "LIMIT", 10, "DELREF") == 10  # one node
    x.assert_equal()
    assert ids(x.same("XRANGE", "s", "-", "+"))[0] == b"11-1"
    x("XADD", "s", "MINID", "~", "20", "DELREF", "26-1", "f", "v")
    x.assert_equal()
    assert ids(x.same("XRANGE", "s", "-", "+"))[0] == b"20-1"


# -- B2 --------------------------------------------------------------------------------------


def test_b2_xdelex_delref_of_a_tombstone_still_pending() -> None:
    x = filled(5)
    x("XGROUP", "CREATE", "s", "h", "0")
    x("XREADGROUP", "GROUP", "h", "d", "STREAMS", "s", ">")
    x("XDEL", "s", "2-1")  # a tombstone, still pending in g and h
    assert x("XDELEX", "s", "DELREF", "IDS", 2, "2-1", "9-1") == [-1, -1]
    x.assert_equal()
    for group in ("g", "h"):  # Redis's replica keeps both references
        pending = ids(x.same("XPENDING", "s", group, "-", "+", 10))
        assert b"2-1" not in pending
        assert len(pending) == 4


# -- B3 --------------------------------------------------------------------------------------


def test_b3_history_read_counts_and_times() -> None:
    x = filled(3)
    x("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "0", now=5000)
    x("XREADGROUP", "GROUP", "g", "c", "COUNT", 1, "STREAMS", "s", "0", now=6000)
    x.assert_equal()
    pending = x.same("XPENDING", "s", "g", "-", "+", 10, now=7000)
    assert pending == [  # Redis's replica: counts 1, idle 6000
        [b"1-1", b"c", 1000, 3],
        [b"2-1", b"c", 2000, 2],
        [b"3-1", b"c", 2000, 2],
    ]


# -- B4 --------------------------------------------------------------------------------------


def test_b4_claims_that_claim_nothing_still_create_the_consumer() -> None:
    x = filled(3)
    assert x("XCLAIM", "s", "g", "lazy", 99999, "1-1", now=2000) == []
    assert x("XAUTOCLAIM", "s", "g", "idler", 99999, "0", now=2000) == [b"0-0", [], []]
    x.assert_equal()
    names = [dict(c)[b"name"] for c in x.same("XINFO", "CONSUMERS", "s", "g", now=3000)]  # type: ignore[union-attr, arg-type]
    assert names == [b"c", b"idler", b"lazy"]  # Redis's replica has only c


# -- B5 --------------------------------------------------------------------------------------


def test_b5_consumer_times_survive_a_late_replica() -> None:
    x = filled(4)
    x("XGROUP", "CREATECONSUMER", "s", "g", "early", now=1500, hold=True)
    x("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "0", now=2000, hold=True)
    x("XCLAIM", "s", "g", "d", 0, "1-1", "IDLE", 300, now=2500, hold=True)
    x("XAUTOCLAIM", "s", "g", "e", 0, "3-1", "COUNT", 1, now=2600, hold=True)
    x("XREADGROUP", "GROUP", "g", "f", "STREAMS", "s", ">", now=2700, hold=True)
    x.flush(replica_clock=90_000)  # applied much later, by a replica with its own clock
    x.assert_equal()
    p, r = full_groups(x)
    assert p == r
    consumers = {dict(c)[b"name"]: dict(c) for c in p[b"consumers"]}  # type: ignore[union-attr]
    assert {n: (c[b"seen-time"], c[b"active-time"]) for n, c in consumers.items()} == {
        b"c": (2000, 1000),
        b"d": (2500, 2500),
        b"e": (2600, 2600),
        b"early": (1500, -1),
        b"f": (2700, -1),
    }
    assert p[b"pending"] == [
        [b"1-1", b"d", 2200, 3],
        [b"2-1", b"c", 2000, 2],
        [b"3-1", b"e", 2600, 3],
        [b"4-1", b"c", 2000, 2],
    ]


def test_b5_future_delivery_time_is_clamped_once_on_the_primary() -> None:
    x = filled(2)
    x("XCLAIM", "s", "g", "d", 0, "1-1", "TIME", 50_000, now=3000, hold=True)
    x("XCLAIM", "s", "g", "d", 0, "2-1", "TIME", 2500, now=3000, hold=True)
    x.flush(replica_clock=100)  # a replica clock far behind the primary's
    x.assert_equal()
    p, r = full_groups(x)
    assert p[b"pending"] == r[b"pending"] == [[b"1-1", b"d", 3000, 2], [b"2-1", b"d", 2500, 2]]


# -- B6 --------------------------------------------------------------------------------------


def test_b6_idmp_duplicates_and_expiry() -> None:
    x = Replicated()
    x("XADD", "s", "IDMP", "p", "i1", "*", "f", "v", now=1000)
    x("XCFGSET", "s", "IDMP-DURATION", 1)
    first = x("XADD", "s", "IDMP", "p", "i1", "*", "f", "v", now=1000)
    dup = x("XADD", "s", "IDMP", "p", "i1", "*", "f", "v", now=1500, hold=True)
    assert dup == first
    x.flush(replica_clock=60_000)  # the replica would have expired i1 by its own clock
    x.assert_equal()
    assert x.same("XLEN", "s") == 2  # Redis's replica appends the duplicate
    again = x("XADD", "s", "IDMP", "p", "i1", "*", "f", "v", now=2500, hold=True)
    assert again == b"2500-0"  # expired on the primary: a new entry
    x.flush(replica_clock=0)
    x.assert_equal()
    assert ids(x.same("XRANGE", "s", "-", "+")) == [b"1000-0", b"1000-1", b"2500-0"]
    info_p, info_r = x.both("XINFO", "STREAM", "s")
    assert isinstance(info_p, ReplyMap) and isinstance(info_r, ReplyMap)
    for field in (b"iids-tracked", b"iids-added", b"iids-duplicates", b"pids-tracked"):
        assert info_p.get(field) == info_r.get(field), field
    assert info_p.get(b"iids-duplicates") == 1
