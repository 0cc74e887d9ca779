"""Full nodes are held as bytes, the tail as a bytearray (engine/stream.py): what changes a
full node (XDEL, exact trims) turns it back into a bytearray in the rax and keeps every
change; a node that was full takes entries again once the limits grow; snapshots, DUMP and
RESTORE keep the entries whichever way each node is held."""

from __future__ import annotations

from enginecalls import call

from xstream.engine import Engine, EngineConfig, snapshot
from xstream.engine.stream import Stream


def _filled(entries: int = 250) -> Engine:
    """A stream `s` of `entries` entries, 100 to a node (node-max-entries)."""
    e = Engine(EngineConfig())
    for i in range(1, entries + 1):
        call(e, "XADD", "s", f"{i}-0", "f", "v")
    return e


def _nodes(e: Engine) -> list[tuple[bytes, bytes | bytearray]]:
    s = e.dbs[0].data[b"s"]
    assert isinstance(s, Stream)
    return list(s.nodes())


def test_full_nodes_are_bytes_and_the_tail_a_bytearray() -> None:
    kinds = [type(lp) for _, lp in _nodes(_filled())]
    assert kinds == [bytes, bytes, bytearray]


def test_xdel_in_a_full_node_makes_it_a_bytearray_and_keeps_the_tombstone() -> None:
    e = _filled()
    assert call(e, "XDEL", "s", "50-0", "51-0") == 2
    first = _nodes(e)[0][1]
    assert type(first) is bytearray
    assert call(e, "XLEN", "s") == 248
    ids = [entry[0] for entry in call(e, "XRANGE", "s", "49-0", "52-0")]  # type: ignore[union-attr,index]
    assert ids == [b"49-0", b"52-0"]
    assert call(e, "XDEL", "s", "50-0") == 0  # the tombstone stayed


def test_exact_trim_inside_a_full_node_keeps_its_tombstones_and_counts() -> None:
    e = _filled()
    assert call(e, "XTRIM", "s", "MAXLEN", "190") == 60  # 60 of node 1's 100 entries
    assert call(e, "XLEN", "s") == 190
    assert call(e, "XRANGE", "s", "-", "+", "COUNT", "1")[0][0] == b"61-0"  # type: ignore[index]
    assert type(_nodes(e)[0][1]) is bytearray


def test_a_full_node_takes_entries_again_once_the_limit_grows() -> None:
    e = _filled(100)  # one node, full by node-max-entries
    call(e, "XADD", "s", "101-0", "f", "v")
    call(e, "XDEL", "s", "101-0")  # the second node is freed: the full one is the last
    assert [type(lp) for _, lp in _nodes(e)] == [bytes]
    e.settings.set(b"stream-node-max-entries", 200)  # (CONFIG SET's, on the node floor)
    assert call(e, "XADD", "s", "102-0", "f", "v") == b"102-0"
    nodes = _nodes(e)
    assert len(nodes) == 1 and type(nodes[0][1]) is bytearray
    assert call(e, "XLEN", "s") == 101


def test_snapshot_and_dump_round_trips_keep_the_entries() -> None:
    e = _filled()
    call(e, "XDEL", "s", "10-0")
    want = call(e, "XRANGE", "s", "-", "+")
    loaded = Engine(EngineConfig())
    snapshot.restore(loaded, snapshot.dump(e))
    assert call(loaded, "XRANGE", "s", "-", "+") == want
    assert [type(lp) for _, lp in _nodes(loaded)] == [bytes, bytes, bytes]
    call(loaded, "XADD", "s", "251-0", "f", "v")  # the last node: a bytearray again
    assert [type(lp) for _, lp in _nodes(loaded)] == [bytes, bytes, bytearray]
    payload = call(e, "DUMP", "s")
    assert isinstance(payload, bytes)
    call(e, "RESTORE", "t", "0", payload)
    assert call(e, "XRANGE", "t", "-", "+") == want
