"""The project's Spark session (xstream.pipeline.session.local): loopback only, quiet."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest


def _lan_address() -> str | None:
    """This machine's address on its default route, or None without one. A UDP connect
    sends nothing; it only picks the interface."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("192.0.2.1", 9))  # TEST-NET-1: never answered, only routed
        except OSError:
            return None
        addr: str = s.getsockname()[0]
    return None if addr.startswith("127.") else addr


def test_driver_binds_and_advertises_loopback(spark: Any) -> None:
    assert spark.conf.get("spark.driver.host") == "127.0.0.1"
    assert spark.conf.get("spark.driver.bindAddress") == "127.0.0.1"
    assert os.environ["SPARK_LOCAL_IP"] == "127.0.0.1"
    port = int(spark.conf.get("spark.driver.port"))
    socket.create_connection(("127.0.0.1", port), timeout=5).close()
    lan = _lan_address()
    if lan is not None:  # the driver's RPC port is not reachable from the network
        with pytest.raises(OSError):
            socket.create_connection((lan, port), timeout=5).close()


def test_session_starts_quietly(spark: Any, jvm_output: Path) -> None:
    """No loopback-hostname warning, no log4j banner, no JVM warning, and none of gRPC's
    lines from its fork handler in the launcher's child (session.py, "spawn"; this test
    process has gRPC loaded and in use by earlier tiers): nothing at all."""
    printed = jvm_output.with_name("jvm-startup.log").read_text()
    assert "resolves to a loopback address" not in printed
    assert printed == "", f"the JVM printed at start-up:\n{printed}"


def test_the_launcher_was_spawned_without_fork(spark: Any) -> None:
    """PySpark's launch_gateway still calls `Popen` by its module's name (so session.py's
    spawn_jvm stands in for it), and this session's launcher went through spawn_jvm: behind
    the shell that ignores SIGINT, which the launcher's process (exec'd, same PID) has
    ignored, as PySpark's own preexec_fn would."""
    from pyspark import java_gateway  # noqa: PLC0415

    from xstream.pipeline import session  # noqa: PLC0415

    assert "Popen" in java_gateway.launch_gateway.__code__.co_names
    assert java_gateway.Popen is subprocess.Popen  # put back after the launch
    proc = spark.sparkContext._gateway.proc
    assert proc.args[: len(session._IGNORING_SIGINT)] == session._IGNORING_SIGINT
    status = Path(f"/proc/{proc.pid}/status").read_text()
    sigign = re.search(r"^SigIgn:\s*([0-9a-f]+)$", status, re.M)
    assert sigign is not None
    assert int(sigign.group(1), 16) & (1 << (signal.SIGINT - 1))


def test_python_workers_end_without_tracebacks(spark: Any, jvm_output: Path) -> None:
    """PySpark's daemon prints a BrokenPipeError when Spark closes the socket of a worker
    still sending (a partition not read to its end): none in this session so far."""
    assert spark.range(10).count() == 10
    printed = jvm_output.read_text() if jvm_output.exists() else ""
    assert "BrokenPipeError" not in printed, printed


def test_a_jvm_that_dies_while_starting_says_why(java: None) -> None:
    """Its stderr is ours from the first byte, so the error quotes the JVM's own words
    (PySpark alone says only that the gateway exited). A fresh process: this one's JVM,
    once started, is reused by every later session."""
    start = (
        "from xstream.pipeline import session\n"
        "try:\n"
        "    session.local('bad-heap', memory='1x')\n"
        "except session.JvmStartError as e:\n"
        "    print(e)\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", start], capture_output=True, text=True, timeout=120, check=True
    )
    assert run.stdout.startswith("the Spark JVM exited while starting; its last words:\n")
    assert "Invalid maximum heap size: -Xmx1x" in run.stdout
    assert "Invalid maximum heap size: -Xmx1x" in run.stderr  # shown as it was printed
