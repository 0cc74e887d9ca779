"""Structured Streaming reads: availableNow, checkpoint restarts, admission control, replays."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.integration.conftest import Cluster, Node
from tests.spark.streams import fill, reader, xrange

Nodes = tuple[Cluster, Node, list[Node]]


def _run(spark: Any, replicas: list[Node], streams: str, chk: Path, out: Path, **opts: str) -> Any:
    q = (
        reader(spark, streams, replicas, streaming=True, **opts)
        .load()
        .writeStream.format("parquet")
        .option("path", str(out))
        .option("checkpointLocation", str(chk))
        .trigger(availableNow=True)
        .start()
    )
    q.awaitTermination()
    return q


def _sink_ids(spark: Any, out: Path) -> list[str]:
    df = spark.read.parquet(str(out))
    return [r["id"] for r in df.orderBy("ms", "seq").select("id").collect()]


def test_restarts_from_the_checkpoint_without_duplicates_or_gaps(
    spark: Any, nodes: Nodes, tmp_path: Path
) -> None:
    cluster, primary, replicas = nodes
    ids = fill(primary, "s1", 2500)
    cluster.settled(primary, replicas)
    chk, out = tmp_path / "chk", tmp_path / "out"
    opts = {"startingOffsets": "earliest", "maxRecordsPerBatch": "1000"}
    q = _run(spark, replicas, "s1", chk, out, **opts)
    sizes = [p["numInputRows"] for p in q.recentProgress if p["numInputRows"]]
    assert sizes == [1000, 1000, 500]  # admission control: at most 1000 per micro-batch
    assert json.loads(q.recentProgress[-1]["sources"][0]["endOffset"]) == {"s1": ids[-1]}
    ids += fill(primary, "s1", 700, first=2500)
    cluster.settled(primary, replicas)
    _run(spark, replicas, "s1", chk, out, **opts)
    assert _sink_ids(spark, out) == ids == [i for i, _ in xrange(primary, "s1")]
    # A crash after a batch ran but before its commit was recorded: the batch is re-planned
    # with the same offsets on restart, and the idempotent file sink keeps one copy.
    commits = sorted((chk / "commits").glob("[0-9]*"), key=lambda p: int(p.name))
    commits[-1].unlink()
    (chk / "commits" / f".{commits[-1].name}.crc").unlink(missing_ok=True)
    _run(spark, replicas, "s1", chk, out, **opts)
    assert _sink_ids(spark, out) == ids


def test_exactly_once_into_an_xstream_sink_across_a_replayed_batch(
    spark: Any, nodes: Nodes, tmp_path: Path
) -> None:
    """Read a stream, write it to another through the idempotent writer, replay a batch."""
    cluster, primary, replicas = nodes
    fill(primary, "src", 1200)
    cluster.settled(primary, replicas)
    chk = tmp_path / "chk"

    def run() -> None:
        opts = {"startingOffsets": "earliest", "maxRecordsPerBatch": "500"}
        q = (
            reader(spark, "src", replicas, streaming=True, **opts)
            .load()
            .selectExpr("fields['n'] AS n", "fields['action'] AS action")
            .writeStream.format("xstream")
            .option("primary", primary.address)
            .option("streams", "dst")
            .option("checkpointLocation", str(chk))
            .trigger(availableNow=True)
            .start()
        )
        q.awaitTermination()

    run()
    commits = sorted((chk / "commits").glob("[0-9]*"), key=lambda p: int(p.name))
    commits[-1].unlink()
    (chk / "commits" / f".{commits[-1].name}.crc").unlink(missing_ok=True)
    run()  # replays the last batch: IDMP answers every XADD from history
    got = sorted(int(f["n"]) for _, f in xrange(primary, "dst"))
    assert got == list(range(1200))


def test_trimmed_ranges_in_streaming_fail_or_are_skipped(
    spark: Any, nodes: Nodes, tmp_path: Path
) -> None:
    cluster, primary, replicas = nodes
    ids = fill(primary, "st", 300)
    cluster.settled(primary, replicas)
    chk, out = tmp_path / "chk", tmp_path / "out"
    _run(spark, replicas, "st", chk, out, startingOffsets="earliest")
    ids += fill(primary, "st", 300, first=300)
    primary.execute("XTRIM", "st", "MAXLEN", "100")  # 200 unread entries are trimmed away
    cluster.settled(primary, replicas)
    try:
        _run(spark, replicas, "st", chk, out)
    except Exception as e:
        assert "were trimmed before they were read" in str(e)
    else:
        raise AssertionError("a trimmed range did not fail with failOnDataLoss=true")
    _run(spark, replicas, "st", chk, out, failOnDataLoss="false")
    assert _sink_ids(spark, out) == ids[:300] + ids[500:]
