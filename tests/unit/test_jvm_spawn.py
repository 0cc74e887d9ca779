"""How the Spark session starts its JVM launcher (xstream/pipeline/session.py, "spawn"):
without fork(), so that gRPC's fork handlers never run in the child, and with SIGINT
ignored in it as PySpark asks. No Java here: the launcher is replaced by small commands."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from concurrent import futures

import grpc
import pytest

from xstream.pipeline.session import spawn_jvm

PRINT_SIGINT = [sys.executable, "-c", "import signal; print(signal.getsignal(signal.SIGINT))"]


def pyspark_preexec() -> None:
    """What PySpark's launch_gateway passes as preexec_fn."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def test_sigint_is_ignored_in_the_launcher_as_pyspark_asks() -> None:
    proc = spawn_jvm(PRINT_SIGINT, preexec_fn=pyspark_preexec, stdout=subprocess.PIPE)
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0
    assert out.decode().strip() == str(signal.SIG_IGN)


def test_without_a_preexec_fn_the_command_runs_as_given() -> None:
    # The child inherits this process's SIGINT disposition, and this process inherited its
    # own from whatever started it (a shell that runs a job in the background without job
    # control starts it with SIGINT ignored): a handler set here is the default after exec.
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        proc = spawn_jvm(PRINT_SIGINT, stdout=subprocess.PIPE)
        out, _ = proc.communicate(timeout=30)
    finally:
        signal.signal(signal.SIGINT, before)
    assert proc.args == PRINT_SIGINT
    assert out.decode().strip() == str(signal.default_int_handler)


def test_popen_keywords_pass_through() -> None:
    """PySpark gives stdin=PIPE (the JVM dies when it closes), env and our stderr pipe."""
    proc = spawn_jvm(
        ["/bin/sh", "-c", 'read line; echo "$line $MARK" >&2'],
        preexec_fn=pyspark_preexec,
        stdin=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={"MARK": "seen", "PATH": "/usr/bin:/bin"},
    )
    _, err = proc.communicate(b"said\n", timeout=30)
    assert err == b"said seen\n"


@pytest.fixture
def busy_channel() -> Iterator[None]:
    """A gRPC server and a client channel calling it without pause from another thread, as
    a driver process with an xstream Client in use has."""
    echo = grpc.unary_unary_rpc_method_handler(lambda request, context: request)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("t.T", {"E": echo}),))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    call = channel.unary_unary("/t.T/E")
    stop = threading.Event()

    def calls() -> None:
        while not stop.is_set():
            call(b"x", timeout=10)

    caller = threading.Thread(target=calls, daemon=True)
    caller.start()
    call(b"x", timeout=10, wait_for_ready=True)
    yield
    stop.set()
    caller.join(10)
    channel.close()
    server.stop(None)


def test_launchers_started_beside_busy_grpc_channels_are_quiet(busy_channel: None) -> None:
    """With PySpark's own Popen (its preexec_fn: CPython forks, gRPC's atfork handler runs
    in the child) about 2 starts in 100 printed gRPC's `Kick failed ... Bad file
    descriptor` or died before exec on this machine; through spawn_jvm none may."""
    for _ in range(200):
        proc = spawn_jvm(["true"], preexec_fn=pyspark_preexec, stderr=subprocess.PIPE)
        _, err = proc.communicate(timeout=30)
        assert (proc.returncode, err) == (0, b"")
