"""The Spark source's pages (reading._pages: XNODES, decoded) against a real node: they tile
the range exactly, also when the node a page would start from is freed between two pages."""

from __future__ import annotations

from tests.integration.conftest import Cluster, Node
from xstream.engine.columns import Columns
from xstream.pipeline import arrow, reading

Rows = list[tuple[str, list[tuple[str, str]]]]


def _rows(pages: list[Columns]) -> Rows:
    out: Rows = []
    for cols in pages:
        for r in arrow.batch("s", cols).to_pylist():
            out.append((r["id"], r["fields"]))
    return out


def _xrange(cluster: Cluster, node: Node, start: str, end: str) -> Rows:
    c = cluster.client(node, decode_responses=True)
    return [(i, list(f.items())) for i, f in c.xrange("s", start, end)]


def test_pages_skip_what_an_earlier_page_held_when_the_next_node_is_freed(
    cluster: Cluster,
) -> None:
    primary = cluster.primary()
    c = cluster.client(primary, decode_responses=True)
    ids = c.xadd_many("s", [{"n": str(i), "v": "x" * (i % 5)} for i in range(1000)])
    part = reading.Part("s", ids[9], ids[-3], primary.address, 988, True, 1000, 150)
    pages = reading._pages(part, ids[9])
    first = next(pages)  # nodes of 100 entries: the first two, from the 11th entry
    assert len(first) == 190
    # The second page (the next two nodes) was asked for when the first arrived; the third
    # is asked for when the second arrives. The fifth node, where it starts: freed.
    c.xdel("s", *ids[400:500])
    rest = list(pages)
    got = _rows([first, *rest])
    assert got == _xrange(cluster, primary, "(" + ids[9], ids[-3])
    assert len(got) == len({i for i, _ in got}) == 888


def test_pages_of_a_missing_stream_and_an_empty_range(cluster: Cluster) -> None:
    primary = cluster.primary()
    part = reading.Part("nokey", "0-0", "5-0", primary.address, 0, True, 1000, 10)
    assert list(reading._pages(part, "0-0")) == []
    c = cluster.client(primary)
    c.xadd("s", {"f": "v"}, id="7-0")
    part = reading.Part("s", "0-0", "5-0", primary.address, 0, True, 1000, 10)
    assert list(reading._pages(part, "0-0")) == []
