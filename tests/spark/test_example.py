"""The example pipeline runs end to end: per-minute aggregates to a stream and to Parquet; and
the README's command for it, run as a user runs it (its own JVM), says what it is doing as it
goes and prints nothing else on stderr: no Java or log4j warning, no traceback."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import Cluster, Node
from tests.integration.readme import ROOT, block_with, blocks
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
    assert "generate: 3,000 events written" in err and "] done in " in err
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


README_RUN = ".venv/bin/xstream pipeline example --generate 100000 --parquet out/minutes"
PHASES = [  # each step says it starts ("...") before its wait
    r"generate: writing 100,000 events to 'events' on \S+\.\.\.",
    r"generate: 100,000 events written \([\d,]+/s\)",
    r"spark: starting a local session .*\.\.\.",
    r"spark: local\[2\] on 127\.0\.0\.1 ready",
    r"read: planning the read of 'events' from \S+\.\.\.",
    r"read: \d+ partitions",
    r"aggregate: events, users and amount per minute and action\.\.\.",
    r"aggregate: \d+ rows",
    r"parquet: writing out/minutes\.\.\.",
    r"stream: appending \d+ rows to 'events_per_minute' on \S+\.\.\.",
    r"done in [\d.]+ s",
]


def test_the_readme_command(spark: Any, nodes: Nodes, tmp_path: Path) -> None:
    """`spark` only for its rule: skipped without Java outside CI. The command's own JVM."""
    _, primary, replicas = nodes
    assert block_with(README_RUN)  # the README still says exactly this
    shown = [line for b in blocks() for line in b if line.startswith("[ ")]
    assert len(shown) == len(PHASES), shown  # the README's sample of what it prints
    for phase, line in zip(PHASES, shown, strict=True):
        assert re.fullmatch(rf"\[ *\d+\.\ds\] {phase}", line), (phase, line)
    where = ["--primary", primary.address, "--replicas", ",".join(r.address for r in replicas)]
    program, *words = README_RUN.split()
    out = subprocess.run(
        [str(ROOT / program), *words, *where],
        cwd=tmp_path, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    lines = out.stderr.splitlines()
    stamps = [re.match(r"^\[ *(\d+\.\d)s\] (.*)$", line) for line in lines]
    assert all(stamps), f"stderr has more than progress lines:\n{out.stderr}"
    said = [m.group(2) for m in stamps if m]
    assert len(said) == len(PHASES), said
    for phase, line in zip(PHASES, said, strict=True):
        assert re.fullmatch(phase, line), (phase, line)
    times = [float(m.group(1)) for m in stamps if m]
    assert times == sorted(times)
    header = r"^\|minute +\|action\|events\|users\|amount +\|$"
    assert re.search(header, out.stdout, re.M), out.stdout
    assert (tmp_path / "out" / "minutes").is_dir()
