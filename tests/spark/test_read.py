"""Batch reads through the `xstream` data source equal XRANGE over the same range."""

from __future__ import annotations

from typing import Any

from tests.integration.conftest import Cluster, Node
from xstream.client import Client


def _fill(primary: Node, key: str, n: int, start_ms: int = 1_700_000_000_000) -> None:
    c = Client("127.0.0.1", primary.port)
    entries = [
        {"user_id": str(i % 7), "action": ("click", "view")[i % 2], "n": str(i)} for i in range(n)
    ]
    c.xadd_many(key, entries)
    c.close()


def _xrange(
    node: Node, key: str, start: str = "-", end: str = "+"
) -> list[tuple[str, dict[str, str]]]:
    c = Client("127.0.0.1", node.port, decode_responses=True)
    try:
        return [(i, f) for i, f in c.xrange(key, start, end)]
    finally:
        c.close()


def _rows(df: Any) -> list[tuple[str, str, dict[str, str]]]:
    return [(r["stream"], r["id"], dict(r["fields"])) for r in df.collect()]


def test_batch_read_equals_xrange_across_partitions_and_replicas(
    spark: Any, nodes: tuple[Cluster, Node, list[Node]]
) -> None:
    cluster, primary, replicas = nodes
    _fill(primary, "events", 5000)
    _fill(primary, "clicks", 1200)
    cluster.settled(primary, replicas)
    df = (
        spark.read.format("xstream")
        .option("streams", "events,clicks")
        .option("replicas", ",".join(r.address for r in replicas))
        .option("minPartitions", "6")
        .option("fetchSize", "700")
        .load()
    )
    assert df.rdd.getNumPartitions() >= 6
    got = _rows(df)
    for key in ("events", "clicks"):
        want = [(key, i, f) for i, f in _xrange(primary, key)]
        assert [r for r in got if r[0] == key] == want
    row = df.filter("stream = 'events'").orderBy("ms", "seq").first()
    ms, seq = map(int, row["id"].split("-"))
    assert (row["ms"], row["seq"]) == (ms, seq)
