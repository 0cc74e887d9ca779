"""Writes through the `xstream` data source: round trip, idempotent replays."""

from __future__ import annotations

from typing import Any

from tests.integration.conftest import Cluster, Node
from tests.spark.streams import reader, rows, xrange

Nodes = tuple[Cluster, Node, list[Node]]


def test_write_then_read_gives_back_identical_content(spark: Any, nodes: Nodes) -> None:
    cluster, primary, replicas = nodes
    data = [(str(i), ("buy", "sell")[i % 3 == 0], i * 1.5) for i in range(3000)]
    df = spark.createDataFrame(data, "user_id STRING, action STRING, amount DOUBLE").repartition(3)
    df.write.format("xstream").option("primary", primary.address).option("streams", "written").mode(
        "append"
    ).save()
    cluster.settled(primary, replicas)
    back = rows(reader(spark, "written", replicas).load())
    assert len(back) == 3000
    assert sorted((f["user_id"], f["action"], float(f["amount"])) for _, _, f in back) == sorted(
        data
    )
    assert [(i, f) for _, i, f in back] == xrange(primary, "written")


def test_a_replayed_write_appends_nothing_twice(spark: Any, nodes: Nodes) -> None:
    primary = nodes[1]
    data = [(i % 5, "same") for i in range(400)]  # duplicate rows inside the data are kept
    df = spark.createDataFrame(data, "k INT, v STRING").repartition(2)
    writer = (
        df.write.format("xstream")
        .option("primary", primary.address)
        .option("streams", "replayed")
        .option("writeId", "job-42")
        .mode("append")
    )
    writer.save()
    writer.save()  # the same job again (a retried task or job): nothing new
    assert len(xrange(primary, "replayed")) == 400
    df.write.format("xstream").option("primary", primary.address).option(
        "streams", "replayed"
    ).option("writeId", "job-43").mode("append").save()  # another job appends
    assert len(xrange(primary, "replayed")) == 800
