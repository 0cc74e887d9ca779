"""The example pipeline runs end to end: per-minute aggregates to a stream and to Parquet."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import Cluster, Node
from tests.spark.streams import xrange
from xstream.pipeline import example

Nodes = tuple[Cluster, Node, list[Node]]


@pytest.mark.parametrize("streaming", [False, True])
def test_example_pipeline(
    spark: Any, nodes: Nodes, tmp_path: Path, streaming: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    _, primary, replicas = nodes
    stream, out = f"events-{streaming}", f"minutes-{streaming}"
    args = [
        "--primary", primary.address,
        "--replicas", ",".join(r.address for r in replicas),
        "--stream", stream, "--out", out,
        "--parquet", str(tmp_path / "pq"), "--checkpoint", str(tmp_path / "chk"),
        "--generate", "3000", "--max-records", "1000",
    ]  # fmt: skip
    assert example.main([*args, "--streaming"] if streaming else args) == 0
    shown, err = capsys.readouterr()
    assert "generate: 3000/3000" in err and "done" in err
    if not streaming:  # the per-minute rows as a table with a header
        assert re.search(r"^\|minute +\|action\|events\|users\|amount +\|$", shown, re.M), shown
    events = xrange(primary, stream)
    want: dict[tuple[int, str], int] = {}
    for i, f in events:
        minute = int(i.split("-")[0]) // 60_000 * 60_000
        want[(minute, f["action"])] = want.get((minute, f["action"]), 0) + 1
    parquet = spark.read.parquet(str(tmp_path / "pq"))
    got: dict[tuple[int, str], int] = {}
    for r in parquet.collect():  # streaming runs append partial aggregates per batch
        got[(r["minute"], r["action"])] = got.get((r["minute"], r["action"]), 0) + r["events"]
    assert got == want
    rows = xrange(primary, out)
    assert sum(int(f["events"]) for _, f in rows) == 3000
    assert {"minute", "action", "events", "users", "amount"} <= set(rows[0][1])
