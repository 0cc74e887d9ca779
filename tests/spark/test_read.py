"""Batch reads through the `xstream` data source equal XRANGE over the same range."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import Cluster, Node
from tests.spark.streams import fill, reader, rows, xrange
from xstream.client import Client
from xstream.pipeline import options, reading

Nodes = tuple[Cluster, Node, list[Node]]


def test_batch_read_equals_xrange_across_partitions_and_replicas(spark: Any, nodes: Nodes) -> None:
    cluster, primary, replicas = nodes
    fill(primary, "events", 5000)
    fill(primary, "clicks", 1200)
    cluster.settled(primary, replicas)
    opts = {"minPartitions": "6", "fetchSize": "700"}
    df = reader(spark, "events,clicks", replicas, **opts).load()
    assert df.rdd.getNumPartitions() >= 6
    got = rows(df)
    for key in ("events", "clicks"):
        assert [r for r in got if r[0] == key] == [(key, i, f) for i, f in xrange(primary, key)]
    row = df.filter("stream = 'events'").orderBy("ms", "seq").first()
    assert (row["ms"], row["seq"]) == tuple(map(int, row["id"].split("-")))
    # The plan spreads the parts over both replicas.
    raw = {"streams": "events,clicks", "replicas": ",".join(r.address for r in replicas), **opts}
    o = options.parse(raw, mode="read")
    parts = reading.plan(o, reading.batch_ranges(o))
    assert {p.node for p in parts} == {r.address for r in replicas}
    assert sum(p.planned for p in parts) == 6200


def test_starting_and_ending_offsets_select_the_xrange_interval(spark: Any, nodes: Nodes) -> None:
    cluster, primary, replicas = nodes
    ids = fill(primary, "ranged", 3000)
    cluster.settled(primary, replicas)
    start, end = ids[999], ids[2499]  # after the 1000th, up to the 2500th included
    df = reader(
        spark,
        "ranged",
        replicas,
        startingOffsets=json.dumps({"ranged": start}),
        endingOffsets=json.dumps({"ranged": end}),
        minPartitions="3",
    ).load()
    got = rows(df)
    assert [(i, f) for _, i, f in got] == xrange(primary, "ranged", f"({start}", end)
    assert len(got) == 1500


def test_a_lagging_replica_never_returns_fewer_rows(
    spark: Any, nodes: Nodes, tmp_path: Path
) -> None:
    """The reader plans the end from the primary; a replica holding less waits, then fails.

    The lagging replica is a replica of a second primary fed the same entries (same IDs)
    by hand, so the test decides exactly what it has applied while it keeps answering.
    """
    primary = nodes[1]
    ids = fill(primary, "lag", 1000)
    entries = xrange(primary, "lag")
    mirror = Cluster(tmp_path)
    try:
        p2 = mirror.primary()
        lagging = mirror.replica(p2)
        copy = Client("127.0.0.1", p2.port)
        for i, f in entries[:600]:
            copy.xadd("lag", f, id=i)
        mirror.settled(p2, [lagging])
        df = reader(spark, "lag", [lagging], replicaWaitMs="1000").option(
            "primary", primary.address
        )
        with pytest.raises(Exception, match=f"only up to {ids[599]}, before the end of this range"):
            df.load().count()
        # Given time, the task waits until the replica has applied the end of its range.
        slow = reader(spark, "lag", [lagging], replicaWaitMs="60000")
        result: list[Any] = []
        t = threading.Thread(
            target=lambda: result.append(rows(slow.option("primary", primary.address).load()))
        )
        t.start()
        time.sleep(2)
        for i, f in entries[600:]:
            copy.xadd("lag", f, id=i)
        t.join(120)
        copy.close()
        assert [(i, f) for _, i, f in result[0]] == entries
    finally:
        mirror.close(dump=False)


def test_trimmed_ranges_fail_or_are_skipped(spark: Any, nodes: Nodes) -> None:
    cluster, primary, replicas = nodes
    ids = fill(primary, "trimmed", 400)
    primary.execute("XTRIM", "trimmed", "MAXLEN", "100")
    cluster.settled(primary, replicas)
    start = json.dumps({"trimmed": ids[49]})  # resume after the 50th: 250 were trimmed since
    df = reader(spark, "trimmed", replicas, startingOffsets=start)
    with pytest.raises(Exception, match="were trimmed before they were read"):
        df.load().count()
    got = rows(df.option("failOnDataLoss", "false").load())
    assert [i for _, i, _ in got] == ids[300:]
    # "earliest" means what is there now: no data loss.
    assert reader(spark, "trimmed", replicas).load().count() == 100


@pytest.mark.parametrize(
    ("opts", "message"),
    [
        ({}, "option 'streams' is required"),
        ({"streams": "a", "replicas": ""}, "needs option 'replicas'"),
        ({"streams": "a,", "replicas": "h:1"}, "empty stream name"),
        ({"streams": "a", "replicas": "nohost"}, "HOST:PORT"),
        ({"streams": "a", "replicas": "h:1", "startingOffsets": "{"}, "must be 'earliest'"),
        (
            {"streams": "a", "replicas": "h:1", "startingOffsets": '{"b": "1-1"}'},
            "not in 'streams'",
        ),
        ({"streams": "a", "replicas": "h:1", "startingOffsets": '{"a": "x"}'}, "an ID"),
        ({"streams": "a", "replicas": "h:1", "endingOffsets": "earliest"}, "cannot be 'earliest'"),
        ({"streams": "a", "replicas": "h:1", "minPartitions": "0"}, "must be > 0"),
        ({"streams": "a", "replicas": "h:1", "maxRecordsPerBatch": "x"}, "must be an integer"),
        ({"streams": "a", "replicas": "h:1", "failOnDataLoss": "maybe"}, "true or false"),
        ({"streams": "a", "replicas": "h:1", "maxRecords": "5"}, "unknown option"),
        ({"streams": "a", "replicas": "h:1", "acks": "some"}, "acks must be"),
    ],
)
def test_bad_options_get_clear_errors(spark: Any, opts: dict[str, str], message: str) -> None:
    r = spark.read.format("xstream")
    for k, v in opts.items():
        r = r.option(k, v)
    with pytest.raises(Exception, match=message):
        r.load().count()
    with pytest.raises(options.OptionError, match=message):
        options.parse(opts, mode="read")
