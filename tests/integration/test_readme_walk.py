"""A new user's first hour, scripted: every command and snippet of README.md's set-up and
"Using it" sections run as the README gives them (read from README.md itself, only the ports
moved to free ones), against the cluster `scripts/run.sh` starts; what each prints has the
shape the README shows, and nothing prints a traceback, a warning or setuptools' "Editable
installation" box. Ctrl-C stops the cluster cleanly.

Not walked here: `scripts/test.sh` (the whole suite, which runs this walk), the Spark example
(tests/spark/test_example.py), the images, compose and Kubernetes (tests/drills/), and the
illustrative failover snippet (its hosts n1..n3 are placeholders).
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from conftest import free_ports, poll
from readme import ROOT, block_with, blocks, on_ports, shape, transcript

from xstream.v1 import xstream_pb2 as pb
from xstream.v1 import xstream_pb2_grpc as pb_grpc

RUN = "scripts/run.sh"
NOISE = re.compile(r"Traceback|Editable installation|WARNING|Warning:|warning:")


def info(port: int) -> pb.InfoReply:
    with grpc.insecure_channel(f"127.0.0.1:{port}") as ch:
        return pb_grpc.AdminStub(ch).Info(pb.InfoRequest(), timeout=2)


class Up:
    """`scripts/run.sh` as the README runs it, on free ports and a data directory of ours."""

    def __init__(self, tmp: Path) -> None:
        self.base, self.metrics, self.resp = free_ports(3), free_ports(3), free_ports(3)
        self.log = tmp / "run.log"
        extra = ["--data-dir", str(tmp / "data"), "--port", str(self.base),
                 "--metrics-port", str(self.metrics), "--resp-port", str(self.resp)]  # fmt: skip
        with self.log.open("wb") as f:
            self.proc = subprocess.Popen(
                [RUN, *extra], cwd=ROOT, stdout=f, stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group, as a terminal's job
            )  # fmt: skip
        self.ports = [self.base, self.base + 1, self.base + 2]

    def settled(self) -> int:
        """Wait until both replicas are linked and hold all the primary logged."""

        def check() -> bool:
            assert self.proc.poll() is None, f"run.sh exited:\n{self.output()}"
            p, *rs = (info(port) for port in self.ports)
            return all(r.link == "up" and r.offset == p.offset for r in rs)

        poll("the cluster to settle", check, timeout=60, every=0.2)
        return info(self.base).offset

    def ctrl_c(self) -> int:
        """SIGINT to the whole job, as Ctrl-C on a terminal sends it; the exit status."""
        os.killpg(self.proc.pid, signal.SIGINT)
        return self.proc.wait(30)

    def output(self) -> str:
        return self.log.read_text(errors="replace")


@pytest.fixture
def up(tmp_path: Path) -> Iterator[Up]:
    u = Up(tmp_path)
    try:
        yield u
    finally:
        if u.proc.poll() is None:
            os.killpg(u.proc.pid, signal.SIGKILL)
            u.proc.wait(10)


def sh(command: str, cwd: Path) -> str:
    """A README command line run by a shell, as a user pastes it; stdout and stderr."""
    out = subprocess.run(
        ["bash", "-c", command], cwd=cwd, capture_output=True, text=True, timeout=60, check=False
    )
    text = out.stdout + out.stderr
    assert out.returncode == 0, f"{command!r} exited with {out.returncode}:\n{text}"
    return text


def test_the_first_hour(up: Up, tmp_path: Path) -> None:
    setup = block_with(RUN)  # `scripts/run.sh`, word for word
    assert setup == [RUN], setup
    up.settled()
    printed = []

    # the set-up transcript: each command, and what it prints
    steps = transcript(block_with("$ .venv/bin/xstream info --node 127.0.0.1:7701"))
    assert [c.split()[1] for c, _ in steps] == ["cli", "cli", "info"], steps
    for command, shown in steps:
        got = sh(on_ports(command, up.base), ROOT)
        printed.append(got)
        assert shape(got.splitlines()) == shape([on_ports(s, up.base) for s in shown]), command
        up.settled()

    # the Python snippet of "Using it", run as it stands (its port moved)
    (snippet,) = [b for b in blocks() if b[0].startswith("from xstream.client import Client")]
    code = "\n".join(snippet).replace('"127.0.0.1", 7700', f'"127.0.0.1", {up.base}')
    assert code.count(str(up.base)) == 3, code  # every Client(...) of the snippet moved
    printed.append(sh(f"{ROOT}/.venv/bin/python -c {shlex.quote(code)}", tmp_path))
    assert printed[-1] == ""
    assert info(up.base).keys == 2  # events and numbers
    with urllib.request.urlopen(f"http://127.0.0.1:{up.metrics}/metrics", timeout=5) as r:
        assert b"xstream_" in r.read()

    assert up.ctrl_c() == 0  # "Ctrl-C stops all three"
    for port in up.ports:
        with pytest.raises(grpc.RpcError):
            info(port)
    shown = up.output()
    assert "xstream up: 3 nodes running" in shown and "up: stopped" in shown, shown
    for text in [shown, *printed]:
        assert not NOISE.search(text), text


def test_every_option_shown_for_running_nodes_by_hand_exists() -> None:
    """The "Running nodes by hand" synopsis names only subcommands and options that exist."""
    block = block_with("xstream replica --port 7701 --data-dir d/r1 --primary 127.0.0.1:7700")
    shown: dict[str, set[str]] = {}
    sub = ""
    for line in block:
        words = line.split("#")[0].replace("[", " ").replace("]", " ").split()
        for i, word in enumerate(words):
            if word == "xstream":
                sub = words[i + 1]
                shown.setdefault(sub, set())
            elif word.startswith("--"):
                shown[sub].add(word)
    assert set(shown) >= {"primary", "replica", "node", "info", "cli", "promote", "shell"}
    for sub, options in shown.items():
        out = subprocess.run(
            [sys.executable, "-m", "xstream.cli", sub, "--help"],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        missing = {o for o in options if not re.search(rf"{o}\b", out.stdout)}
        assert not missing, f"xstream {sub} --help has no {sorted(missing)}"
